"""Automatic SLA credits: pure functions, no Django.

The contract's SLA (the same data the contract PDF prints): a monthly availability
target and a credit table: below each availability, that share of the node's charge for
the billing period is credited (the best tier wins).

What counts as unavailable time of a node in a billing period (``Outage`` kinds), each
clipped to the period and to the order, overlaps counted once:

- ``faulty``: the node was faulty (its event history);
- ``maintenance``: the node was in maintenance, except inside a planned window announced
  at least ``notice`` before it started (``PlannedWindow``);
- ``validation_failed``: a re-validation of the in-service node failed, until it passed
  again;
- ``late_delivery``: the hours past the order's start before the cluster was delivered;
- ``swap``: the hours lost while a failed node was replaced;
- ``degraded``: a re-validation measured more than the rule's margin below the acceptance
  report's baseline (``is_degraded``), until it measured well again.

Measured per node per calendar month in the site's zone (the contract's "monthly
availability"), the month clipped to the order's term: availability = 100 × (1 −
unavailable / the month's length), an exact fraction; the tier is chosen on that exact
value (nothing is rounded before the tier: 99.8995 % is below 99.9 %). The credit is the
tier's percent of the node's charge for that month: the charge of each billing period
that overlaps the month, times the share of the period's time inside the month (a monthly
period inside one month: all of it; an annual period: the month's days over the year's),
rounded half up to the cent once, at the end. Shown availabilities are truncated to three
places (never rounded up into a better tier).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from decimal import ROUND_DOWN, Decimal
from fractions import Fraction

from dateutil.relativedelta import relativedelta

CENT = Decimal("0.01")
# The contract's SLA (``billing.contracts.documents`` prints it).
SLA_TARGET = Decimal("99.9")
CreditTable = tuple[tuple[Decimal, Decimal], ...]
SLA_CREDIT_TABLE: CreditTable = (
    (Decimal("95"), Decimal("50")),
    (Decimal("99"), Decimal("25")),
    (Decimal("99.9"), Decimal("10")),
)
# Planned maintenance announced at least this long before it starts does not count.
PLANNED_NOTICE = timedelta(hours=72)
OUTAGE_KINDS = (
    "faulty",
    "maintenance",
    "validation_failed",
    "late_delivery",
    "swap",
    "degraded",
)


@dataclass(frozen=True)
class Outage:
    kind: str
    start: datetime
    end: datetime
    source: str = ""  # the evidence: which event, run or swap


@dataclass(frozen=True)
class PlannedWindow:
    start: datetime
    end: datetime
    announced_at: datetime | None  # None: not known to be announced, so it counts


@dataclass(frozen=True)
class NodeFacts:
    node_ref: str
    outages: tuple[Outage, ...] = ()
    planned: tuple[PlannedWindow, ...] = ()


@dataclass(frozen=True)
class NodeCredit:
    node_ref: str
    period_start: datetime
    period_end: datetime
    unavailable: timedelta
    availability: Decimal  # percent, truncated to 3 places (for display)
    credit_percent: Decimal
    node_charge: Decimal  # the month's charge, to the cent (for display)
    amount: Decimal
    counted: tuple[Outage, ...] = field(default_factory=tuple)  # clipped, what was counted
    exact_availability: Fraction = Fraction(100)


def _micro(delta: timedelta) -> int:
    return delta // timedelta(microseconds=1)


def cents_half_up(value: Fraction | Decimal) -> Decimal:
    """An exact amount rounded half up (away from zero) to the cent, once."""
    q = Fraction(value) * 100
    n = math.floor(abs(q) + Fraction(1, 2))
    return (Decimal(n if q >= 0 else -n) / 100).quantize(CENT)


def availability_percent(unavailable: timedelta, length: timedelta) -> Fraction:
    """100 × (1 − unavailable / length), exact (microseconds)."""
    return 100 * (1 - Fraction(_micro(unavailable), _micro(length)))


def shown_availability(exact: Fraction) -> Decimal:
    """Three places, truncated: 99.8995… is shown 99.899, never 99.900."""
    return (Decimal(exact.numerator) / Decimal(exact.denominator)).quantize(
        Decimal("0.001"), rounding=ROUND_DOWN
    )


def calendar_months(
    start: datetime, end: datetime, tz: tzinfo
) -> list[tuple[date, datetime, datetime]]:
    """The calendar months (site time) that ``[start, end)`` touches: (first day, and the
    month's part inside the range as ``[from, until)``)."""
    local = start.astimezone(tz)
    first = local.date().replace(day=1)
    out = []
    while True:
        month_start = datetime.combine(first, time.min, tzinfo=tz)
        if month_start >= end:
            break
        month_end = datetime.combine(first + relativedelta(months=1), time.min, tzinfo=tz)
        a, b = max(start, month_start), min(end, month_end)
        if a < b:
            out.append((first, a, b))
        first = first + relativedelta(months=1)
    return out


def month_charge(
    periods: list[tuple[datetime, datetime, Decimal]], start: datetime, end: datetime
) -> Fraction:
    """A node's charge for ``[start, end)`` (a month): each billing period's charge times
    the share of that period's time inside the range; exact."""
    total = Fraction(0)
    for p_start, p_end, charge in periods:
        a, b = max(p_start, start), min(p_end, end)
        if a < b:
            total += Fraction(charge) * Fraction(_micro(b - a), _micro(p_end - p_start))
    return total


def credit_percent(
    availability: Decimal | Fraction, table: CreditTable = SLA_CREDIT_TABLE
) -> Decimal:
    """The table's credit for an availability (percent): the lowest threshold it is below.
    Compared exactly (a ``Fraction`` is never rounded first)."""
    exact = Fraction(availability)
    for below, percent in sorted(table):
        if exact < Fraction(below):
            return percent
    return Decimal("0")


def is_degraded(*, baseline: Decimal, measured: Decimal, margin: Decimal) -> bool:
    """A re-validation more than ``margin`` (a fraction, 0.10 = 10%) below the acceptance
    baseline."""
    if baseline <= 0:
        return False
    return measured < baseline * (Decimal("1") - margin)


def _minus(
    interval: tuple[datetime, datetime], cut: tuple[datetime, datetime]
) -> list[tuple[datetime, datetime]]:
    a, b = interval
    c, d = cut
    if d <= a or c >= b:
        return [interval]
    parts = []
    if a < c:
        parts.append((a, c))
    if d < b:
        parts.append((d, b))
    return parts


def _union_length(intervals: list[tuple[datetime, datetime]]) -> timedelta:
    total = timedelta(0)
    current: tuple[datetime, datetime] | None = None
    for start, end in sorted(intervals):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = (start, end)
        else:
            current = (current[0], max(current[1], end))
    if current is not None:
        total += current[1] - current[0]
    return total


def counted_outages(
    facts: NodeFacts, *, start: datetime, end: datetime, notice: timedelta = PLANNED_NOTICE
) -> list[Outage]:
    """The node's outages clipped to ``[start, end)``; maintenance inside a planned window
    announced in time is cut out."""
    announced = [
        (w.start, w.end)
        for w in facts.planned
        if w.announced_at is not None and w.announced_at <= w.start - notice
    ]
    out: list[Outage] = []
    for outage in facts.outages:
        if outage.kind not in OUTAGE_KINDS:
            raise ValueError(f"unknown outage kind {outage.kind!r}")
        a, b = max(outage.start, start), min(outage.end, end)
        if a >= b:
            continue
        pieces = [(a, b)]
        if outage.kind == "maintenance":
            for window in announced:
                pieces = [p for piece in pieces for p in _minus(piece, window)]
        out.extend(Outage(outage.kind, s, e, outage.source) for s, e in pieces)
    return out


def node_credit(
    facts: NodeFacts,
    *,
    start: datetime,
    end: datetime,
    node_charge: Decimal | Fraction,
    table: CreditTable = SLA_CREDIT_TABLE,
    notice: timedelta = PLANNED_NOTICE,
) -> NodeCredit:
    """The credit of one node for ``[start, end)`` (a calendar month clipped to the term)
    whose charge is ``node_charge`` (exact, see ``month_charge``)."""
    if end <= start:
        raise ValueError("the period must end after it starts")
    counted = counted_outages(facts, start=start, end=end, notice=notice)
    unavailable = _union_length([(o.start, o.end) for o in counted])
    exact = availability_percent(unavailable, end - start)
    percent = credit_percent(exact, table)
    amount = cents_half_up(Fraction(node_charge) * Fraction(percent) / 100)
    return NodeCredit(
        node_ref=facts.node_ref,
        period_start=start,
        period_end=end,
        unavailable=unavailable,
        availability=shown_availability(exact),
        credit_percent=percent,
        node_charge=cents_half_up(Fraction(node_charge)),
        amount=amount,
        counted=tuple(counted),
        exact_availability=exact,
    )
