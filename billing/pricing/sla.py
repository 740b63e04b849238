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

Availability = 100 × (1 − unavailable / period length); the credit is the tier's percent
of the node's period charge, rounded half up to the cent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

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
    availability: Decimal  # percent, 3 places
    credit_percent: Decimal
    node_charge: Decimal
    amount: Decimal
    counted: tuple[Outage, ...] = field(default_factory=tuple)  # clipped, what was counted


def credit_percent(availability: Decimal, table: CreditTable = SLA_CREDIT_TABLE) -> Decimal:
    """The table's credit for an availability (percent): the lowest threshold it is below."""
    for below, percent in sorted(table):
        if availability < below:
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
    node_charge: Decimal,
    table: CreditTable = SLA_CREDIT_TABLE,
    notice: timedelta = PLANNED_NOTICE,
) -> NodeCredit:
    """The credit of one node for the billing period ``[start, end)``."""
    if end <= start:
        raise ValueError("the period must end after it starts")
    counted = counted_outages(facts, start=start, end=end, notice=notice)
    unavailable = _union_length([(o.start, o.end) for o in counted])
    length = Decimal((end - start).total_seconds())
    down = Decimal(unavailable.total_seconds())
    availability = (Decimal("100") * (1 - down / length)).quantize(
        Decimal("0.001"), rounding=ROUND_HALF_UP
    )
    percent = credit_percent(availability, table)
    amount = (node_charge * percent / Decimal("100")).quantize(CENT, rounding=ROUND_HALF_UP)
    return NodeCredit(
        node_ref=facts.node_ref,
        period_start=start,
        period_end=end,
        unavailable=unavailable,
        availability=availability,
        credit_percent=percent,
        node_charge=node_charge,
        amount=amount,
        counted=tuple(counted),
    )
