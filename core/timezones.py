"""Time-zone names as people read them: "China Standard Time (UTC+08:00)", "北京时间（UTC+08:00）".

Sites keep an IANA name (``Asia/Shanghai``); pages and documents label times with this
translated label instead of the identifier.
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime

from django.utils import timezone
from django.utils.translation import gettext as _


def _names() -> dict[str, str]:
    return {
        "Asia/Shanghai": _("China Standard Time"),
        "Asia/Hong_Kong": _("Hong Kong Time"),
        "Asia/Singapore": _("Singapore Time"),
        "Asia/Tokyo": _("Japan Standard Time"),
        "UTC": _("Coordinated Universal Time"),
    }


def utc_offset(tzname: str, at: datetime | None = None) -> str:
    """``UTC+08:00`` for ``Asia/Shanghai`` (at ``at``, default now)."""
    zone = zoneinfo.ZoneInfo(tzname)
    offset = (at or timezone.now()).astimezone(zone).utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    sign = "+" if minutes >= 0 else "−"
    hours, mins = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours:02d}:{mins:02d}"


def tz_label(tzname: str | None, at: datetime | None = None) -> str:
    """The zone's translated name and its UTC offset (the IANA identifier for zones
    without a name here). Empty for an empty name; an unknown identifier as it is."""
    if not tzname:
        return ""
    try:
        offset = utc_offset(str(tzname), at)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return str(tzname)
    # A zone without a translated name here is shown by its identifier.
    name = _names().get(str(tzname), str(tzname))
    return _("%(name)s, %(offset)s") % {"name": name, "offset": offset}
