"""Rental periods and site calendars: pure date arithmetic, no Django.

A rental runs over the half-open range ``[start, end)`` from midnight of its start day in
the site's time zone. Anything with a ``tzinfo`` attribute (a ``Site``) is a place here.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Protocol

from dateutil.relativedelta import relativedelta

from billing.pricing.engine import TERM_MONTHS, Term


class Place(Protocol):
    @property
    def tzinfo(self) -> tzinfo: ...


class LeadPlace(Place, Protocol):
    lead_time_hours: int


def rental_period(
    *, site: Place, start_date: date, term: str, duration: int
) -> tuple[datetime, datetime]:
    """``[start, end)`` of a rental of ``duration`` terms from midnight of ``start_date``,
    site time. Months are calendar months (31 Jan + 1 month = 28/29 Feb)."""
    start = datetime.combine(start_date, time.min, tzinfo=site.tzinfo)
    if term == Term.DAY:
        end = start + timedelta(days=duration)
    else:
        end = start + relativedelta(months=duration * TERM_MONTHS[Term(term)])
    return start, end


def end_of_day(*, site: Place, day: date) -> datetime:
    """The first instant after ``day`` in the site's time zone."""
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=site.tzinfo)


def acceptance_deadline(*, site: LeadPlace, start_date: date) -> datetime:
    """The last moment a quote starting on ``start_date`` can be accepted and the rental
    still begin on time: the start's midnight (site time) less the site's lead time, when
    provisioning must begin. A bank transfer's hold ends there too (``hold_terms``)."""
    start = datetime.combine(start_date, time.min, tzinfo=site.tzinfo)
    return start - timedelta(hours=site.lead_time_hours)


def quote_expiry(*, site: LeadPlace, valid_until: date, start_date: date) -> datetime:
    """When a sent quote (and its hold) expires: the end of its validity day, but never
    after ``acceptance_deadline``: a quote is never open on a day when accepting it could
    no longer meet its own start."""
    return min(
        end_of_day(site=site, day=valid_until),
        acceptance_deadline(site=site, start_date=start_date),
    )


def site_today(site: Place, *, now: datetime | None = None) -> date:
    """Today in the site's time zone."""
    return (now or datetime.now(tz=UTC)).astimezone(site.tzinfo).date()


def earliest_start_date(site: LeadPlace, *, now: datetime | None = None) -> date:
    """The first day whose midnight (site time) is at least the site's lead time away."""
    ready = (now or datetime.now(tz=UTC)) + timedelta(hours=site.lead_time_hours)
    local = ready.astimezone(site.tzinfo)
    day = local.date()
    if local.time() != time.min:
        day += timedelta(days=1)
    return day


def latest_start_date(site: Place, *, months: int, now: datetime | None = None) -> date:
    """The last start day within the price book horizon (``months`` from today)."""
    return site_today(site, now=now) + relativedelta(months=months)
