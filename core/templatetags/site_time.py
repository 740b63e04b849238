"""``{{ site.timezone|tz_label }}``: "北京时间（UTC+08:00）" instead of ``Asia/Shanghai``."""

from __future__ import annotations

from django import template

from core.timezones import tz_label as _tz_label

register = template.Library()


@register.filter
def tz_label(tzname: object) -> str:
    return _tz_label(str(tzname) if tzname else "")
