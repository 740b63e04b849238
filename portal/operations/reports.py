"""Utilisation and revenue for staff (operations and finance).

Utilisation, per site and node type, by day or by month (the site's time zone):

- *available node-hours*: every node in the inventory that is not retired (a retired node
  counts for nothing, its past bookings included), for every hour of the period, less
  the hours of its maintenance windows (planned downtime is not for sale);
- *reserved node-hours*: the rental hours ``[start_at, end_at)`` of firm bookings and of
  bookings that ran to their end, clipped to the period (holds are not sales; the lead
  and cleaning time around a rental are not rented);
- *utilisation* = reserved / available (``None`` when nothing was available).

Revenue per month (the site's zone), per currency, never converted:

- *booked*: the total of the orders accepted in the month (an order is an accepted
  quote), except those that expired unpaid or were cancelled;
- *invoiced*: the total of the payment documents issued in the month, except void ones;
- *collected*: payments that succeeded in the month, less what was refunded of them;
- *pipeline*: sent quotes not yet decided, by the month of their expected start.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from dateutil.relativedelta import relativedelta
from django.db.models import F, Q
from django.utils import timezone

from billing.models import (
    Invoice,
    InvoiceStatus,
    Order,
    OrderStatus,
    Payment,
    PaymentStatus,
    Quote,
    QuoteStatus,
)
from inventory.models import (
    MaintenanceWindow,
    Node,
    NodeStatus,
    NodeType,
    Reservation,
    ReservationStatus,
    Site,
)
from provisioning.health.selectors import spare_pools

SOLD_STATUSES = (ReservationStatus.FIRM, ReservationStatus.ENDED)
ZERO = Decimal("0.00")
HOUR = Decimal(3600)


def periods(first: date, last: date, by: str, tz: Any) -> list[tuple[date, datetime, datetime]]:
    """The days (``by="day"``) or calendar months touching ``[first, last]`` in ``tz``:
    ``(label date, from, until)``."""
    out = []
    if by == "month":
        day = first.replace(day=1)
        step = relativedelta(months=1)
    else:
        day, step = first, relativedelta(days=1)
    while day <= last:
        nxt = day + step
        out.append(
            (
                day,
                datetime.combine(day, time.min, tzinfo=tz),
                datetime.combine(nxt, time.min, tzinfo=tz),
            )
        )
        day = nxt
    return out


def _spread(
    totals: dict[int, Decimal],
    bounds: list[tuple[date, datetime, datetime]],
    starts: list[datetime],
    a: datetime,
    b: datetime,
    weight: int = 1,
) -> None:
    """Add ``weight`` × the seconds of ``[a, b)`` falling into each period."""
    i = max(bisect.bisect_right(starts, a) - 1, 0)
    while i < len(bounds) and bounds[i][1] < b:
        _label, p_start, p_end = bounds[i]
        lo, hi = max(a, p_start), min(b, p_end)
        if lo < hi:
            totals[i] += Decimal(int((hi - lo).total_seconds())) * weight
        i += 1


@dataclass(frozen=True)
class UtilisationRow:
    site: Site
    node_type: NodeType
    period: date
    available_hours: Decimal
    reserved_hours: Decimal

    @property
    def utilisation(self) -> Decimal | None:
        if self.available_hours <= 0:
            return None
        return (self.reserved_hours / self.available_hours).quantize(Decimal("0.0001"))


def utilisation(*, first: date, last: date, by: str = "day") -> list[UtilisationRow]:
    """Reserved over available node-hours per site, node type and day (or month) of
    ``[first, last]``: four queries whatever the fleet."""
    sites = {s.pk: s for s in Site.objects.all()}
    types = {t.pk: t for t in NodeType.objects.all()}
    fleet: dict[tuple[int, int], int] = defaultdict(int)
    for site_id, type_id in Node.objects.exclude(status=NodeStatus.RETIRED).values_list(
        "site_id", "node_type_id"
    ):
        fleet[(site_id, type_id)] += 1
    site_bounds = {pk: periods(first, last, by, s.tzinfo) for pk, s in sites.items()}
    lo = min((b[0][1] for b in site_bounds.values() if b), default=None)
    hi = max((b[-1][2] for b in site_bounds.values() if b), default=None)
    if lo is None or hi is None:
        return []
    reserved: dict[tuple[int, int], dict[int, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    down: dict[tuple[int, int], dict[int, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for key_into, rows in (
        (
            reserved,
            Reservation.objects.filter(status__in=SOLD_STATUSES, start_at__lt=hi, end_at__gt=lo)
            .exclude(node__status=NodeStatus.RETIRED)
            .values_list("node__site_id", "node__node_type_id", "start_at", "end_at"),
        ),
        (
            down,
            MaintenanceWindow.objects.filter(start_at__lt=hi, end_at__gt=lo)
            .exclude(node__status=NodeStatus.RETIRED)
            .values_list("node__site_id", "node__node_type_id", "start_at", "end_at"),
        ),
    ):
        for site_id, type_id, a, b in rows:
            bounds = site_bounds[site_id]
            _spread(key_into[(site_id, type_id)], bounds, [p[1] for p in bounds], a, b)
    out = []
    for (site_id, type_id), count in sorted(
        fleet.items(), key=lambda kv: (sites[kv[0][0]].code, types[kv[0][1]].code)
    ):
        for i, (label, p_start, p_end) in enumerate(site_bounds[site_id]):
            capacity = Decimal(int((p_end - p_start).total_seconds())) * count
            available = capacity - down[(site_id, type_id)][i]
            out.append(
                UtilisationRow(
                    site=sites[site_id],
                    node_type=types[type_id],
                    period=label,
                    available_hours=(available / HOUR).quantize(Decimal("0.01")),
                    reserved_hours=(reserved[(site_id, type_id)][i] / HOUR).quantize(
                        Decimal("0.01")
                    ),
                )
            )
    return out


@dataclass
class RevenueRow:
    month: date
    currency: str
    booked: Decimal = ZERO
    invoiced: Decimal = ZERO
    collected: Decimal = ZERO
    pipeline: Decimal = ZERO
    pipeline_quotes: int = 0


def _month(value: datetime | date, tz: Any) -> date:
    if isinstance(value, datetime):
        value = value.astimezone(tz).date()
    return value.replace(day=1)


def revenue(*, first: date, last: date) -> list[RevenueRow]:
    """Booked, invoiced and collected per month and currency (each site's zone), and the
    pipeline of sent quotes by expected start, for the months of ``[first, last]``."""
    sites = {s.pk: s.tzinfo for s in Site.objects.all()}
    months = {p[0] for p in periods(first, last, "month", None)}
    # A day's margin each side for the sites' zones; the months themselves are exact.
    lo = datetime.combine(first.replace(day=1) - timedelta(days=1), time.min, tzinfo=UTC)
    hi = datetime.combine(
        last + relativedelta(months=1, day=1) + timedelta(days=1), time.min, tzinfo=UTC
    )
    rows: dict[tuple[date, str], RevenueRow] = {}

    def add(
        when: datetime | date, site_id: int | None, currency: str, name: str, amount: Decimal
    ) -> None:
        tz = sites.get(site_id) if site_id is not None else None
        month = _month(when, tz or timezone.get_default_timezone())
        if month not in months:
            return
        row = rows.setdefault((month, currency), RevenueRow(month=month, currency=currency))
        setattr(row, name, getattr(row, name) + amount)
        if name == "pipeline":
            row.pipeline_quotes += 1

    sources: Iterable[tuple[str, Any]] = (
        (
            "booked",
            Order.objects.filter(created_at__gte=lo, created_at__lt=hi)
            .exclude(status__in=(OrderStatus.EXPIRED, OrderStatus.CANCELLED))
            .values_list("created_at", "site_id", "currency", "gross_total"),
        ),
        (
            "invoiced",
            Invoice.objects.filter(issued_at__gte=lo, issued_at__lt=hi)
            .exclude(status=InvoiceStatus.VOID)
            .values_list("issued_at", "order__site_id", "currency", "gross_total"),
        ),
        (
            "collected",
            Payment.objects.filter(
                status__in=(PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED),
                succeeded_at__gte=lo,
                succeeded_at__lt=hi,
            )
            .annotate(net=F("amount") - F("amount_refunded"))
            .values_list("succeeded_at", "invoice__order__site_id", "currency", "net"),
        ),
        (
            "pipeline",
            Quote.objects.filter(
                Q(status=QuoteStatus.SENT),
                start_date__gte=first.replace(day=1),
                start_date__lte=last,
            ).values_list("start_date", "site_id", "currency", "gross_total"),
        ),
    )
    for name, values in sources:
        for when, site_id, currency, amount in values:
            add(when, site_id, currency, name, amount)
    return sorted(rows.values(), key=lambda r: (r.currency, r.month))


def spare_pool() -> list[dict[str, Any]]:
    """Per site and node type with a target: the free nodes now against the target."""
    return [
        {
            "site": item["pool"].site,
            "node_type": item["pool"].node_type,
            "target": item["pool"].target,
            "free": item["free"],
            "short": max(item["pool"].target - item["free"], 0),
        }
        for item in spare_pools()
    ]
