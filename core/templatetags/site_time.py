"""``{{ site.timezone|tz_label }}``: "北京时间（UTC+08:00）" instead of ``Asia/Shanghai``."""

from __future__ import annotations

from django import template

from core.timezones import period_text
from core.timezones import tz_label as _tz_label

register = template.Library()


@register.filter
def tz_label(tzname: object) -> str:
    return _tz_label(str(tzname) if tzname else "")


@register.simple_tag
def period_range(start: object, end: object, tz: object = None) -> str:
    """``{% period_range p.start p.end site_timezone %}``: a stored half-open range by its
    first and last day, both included (``core.timezones.period_text``)."""
    if not start or not end:
        return ""
    return period_text(start, end, tz)  # type: ignore[arg-type]
