"""Time-zone names as people read them: "China Standard Time (UTC+08:00)", "北京时间（UTC+08:00）".

Sites keep an IANA name (``Asia/Shanghai``); pages and documents label times with this
translated label instead of the identifier.
"""

from __future__ import annotations

import zoneinfo
from datetime import date, datetime, time, timedelta, tzinfo

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


# --- Periods as people read them -------------------------------------------------------------
#
# A rental, a booking and a billing period are stored as half-open ranges [start, end): the
# end is the first instant no longer included (the next period's start). People, and the
# commercial documents they sign, read a period as its first and its LAST day, both
# included ("2026-12-05 – 2027-01-04", 服务期自 2026-12-05 至 2027-01-04): a printed
# "– 2027-01-05" reads as if 5 January were paid twice, once by this period and once by
# the next. So every page, email and PDF shows a period through ``period_text`` (the
# ``{% period_range %}`` tag), which turns the stored end into the last day included.


def _local(value: datetime, zone: tzinfo | None) -> datetime:
    return value.astimezone(zone) if zone is not None else value


def _zone(tz: tzinfo | str | None) -> tzinfo | None:
    if tz is None or isinstance(tz, tzinfo):
        return tz
    return zoneinfo.ZoneInfo(str(tz)) if str(tz) else None


def period_days(
    start: date | datetime, end: date | datetime, tz: tzinfo | str | None = None
) -> tuple[date, date]:
    """The first and the last day included in the half-open range ``[start, end)``, in
    ``tz`` (an IANA name or a tzinfo; aware datetimes are converted to it). A ``date``
    end is exclusive too: ``[2026-12-05, 2027-01-05)`` ends on 2027-01-04."""
    zone = _zone(tz)
    first = _local(start, zone).date() if isinstance(start, datetime) else start
    if isinstance(end, datetime):
        last = (_local(end, zone) - timedelta(microseconds=1)).date()
    else:
        last = end - timedelta(days=1)
    return first, last


def period_text(
    start: date | datetime, end: date | datetime, tz: tzinfo | str | None = None
) -> str:
    """``2026-12-05 – 2027-01-04``: the range ``[start, end)`` by its first and last day,
    both included (see above). A range that does not begin and end at midnight (site
    time) is shown to the minute instead, its end as stored (the first minute after)."""
    zone = _zone(tz)
    if all(isinstance(v, datetime) for v in (start, end)):
        local_start, local_end = _local(start, zone), _local(end, zone)  # type: ignore[arg-type]
        if local_start.time() != time.min or local_end.time() != time.min:
            return _("%(start)s – %(end)s") % {
                "start": local_start.strftime("%Y-%m-%d %H:%M"),
                "end": local_end.strftime("%Y-%m-%d %H:%M"),
            }
    first, last = period_days(start, end, zone)
    return _("%(start)s – %(end)s") % {"start": first.isoformat(), "end": last.isoformat()}
