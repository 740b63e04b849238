"""How a clock reads on the pages: its state and the time left, in the reader's language."""

from __future__ import annotations

from datetime import timedelta

from django import template
from django.utils.translation import gettext as _

register = template.Library()


@register.filter
def duration(value: timedelta) -> str:
    """``1 d 2 h``, ``3 h 20 min``, ``4 min`` (absolute: the caller says before or after)."""
    seconds = abs(int(value.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return _("%(d)s d %(h)s h") % {"d": days, "h": hours}
    if hours:
        return _("%(h)s h %(m)s min") % {"h": hours, "m": minutes}
    return _("%(m)s min") % {"m": minutes}


@register.inclusion_tag("support/_clock.html")
def clock(value: object) -> dict[str, object]:
    return {"clock": value}
