"""The invoice schedule over a contract's term: pure functions, no Django.

- daily terms: one invoice up front for the whole rental;
- monthly terms: one invoice in advance for each calendar month;
- quarterly and annual terms: one invoice up front per quarter or year (the quote's prices
  already carry the term's discount);
- one-off lines (set-up, a one-time transfer allowance) go on the first invoice.

Each recurring line's net and VAT are split over the periods in whole cents: every period
gets the amount divided and rounded toward zero, the last period gets the rest, so the
schedule adds up to the quote's line amounts, and therefore its totals, to the cent.
Metered items (egress) are not in the schedule: they are billed monthly in arrears from
usage records.

The dates, one rule for every document that states them (contract §4.2, the schedule
table, the order page, the invoices themselves):

- period 1 is issued when the quote is accepted and is due by the order's payment
  deadline (``first_issued_on`` / ``first_due_on``: the order's own dates);
- each later period is issued ``issue_days`` days before it starts (the setting
  ``PORTAL_INVOICE_ISSUE_DAYS``) and is due on its first day; a document issued later
  than that (a late beat, a short setting) is due ``LATE_ISSUE_PAY_DAYS`` days after it
  was issued (``due_at``);
- documents outside the schedule (metered usage after the last period, late fees) are due
  ``EXTRA_PAY_DAYS`` days after they are issued.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from decimal import ROUND_DOWN, Decimal

from dateutil.relativedelta import relativedelta

CENT = Decimal("0.01")
TERM_MONTHS = {"month": 1, "quarter": 3, "year": 12}
ONE_OFF_UNITS = frozenset({"once"})
# A document issued less than this many days before its due date is due this many days
# after it was issued instead.
LATE_ISSUE_PAY_DAYS = 3
# Documents outside the schedule (usage after the last period, late fees): days to pay.
EXTRA_PAY_DAYS = 14


@dataclass(frozen=True)
class ChargeLine:
    code: str
    description: str
    net: Decimal
    vat: Decimal
    tax_rate: Decimal
    period_unit: str  # "day" / "month": recurring; "once": on the first invoice


@dataclass(frozen=True)
class PeriodLine:
    code: str
    description: str
    net: Decimal
    vat: Decimal
    tax_rate: Decimal


@dataclass(frozen=True)
class Period:
    seq: int
    start: datetime
    end: datetime
    issue_on: date  # site time; period 1: the day the quote was accepted
    due_on: date  # site time; period 1: the order's payment deadline
    lines: tuple[PeriodLine, ...]

    @property
    def net(self) -> Decimal:
        return sum((line.net for line in self.lines), Decimal("0"))

    @property
    def vat(self) -> Decimal:
        return sum((line.vat for line in self.lines), Decimal("0"))

    @property
    def gross(self) -> Decimal:
        return self.net + self.vat


def billing_periods(
    *, term: str, duration: int, start_date: date, tz: tzinfo
) -> list[tuple[datetime, datetime]]:
    """The ``[start, end)`` ranges billed separately."""
    start = datetime.combine(start_date, time.min, tzinfo=tz)
    if term == "day":
        return [(start, start + timedelta(days=duration))]
    step = TERM_MONTHS[term]
    return [
        (start + relativedelta(months=i * step), start + relativedelta(months=(i + 1) * step))
        for i in range(duration)
    ]


def split_cents(amount: Decimal, parts: int) -> list[Decimal]:
    """``amount`` in ``parts`` whole-cent pieces that add up to it exactly."""
    if parts < 1:
        raise ValueError("parts must be at least 1")
    base = (amount / parts).quantize(CENT, rounding=ROUND_DOWN)
    return [base] * (parts - 1) + [amount - base * (parts - 1)]


def issue_on(*, start: datetime, issue_days: int) -> date:
    """The day (site time) a later period's document is issued."""
    return start.date() - timedelta(days=issue_days)


def due_at(*, period_start: datetime, issued_at: datetime) -> datetime:
    """When a period's document is due: the period's first instant, or
    ``LATE_ISSUE_PAY_DAYS`` after it was issued when it was issued later than that."""
    return max(period_start, issued_at + timedelta(days=LATE_ISSUE_PAY_DAYS))


def extra_due_at(*, issued_at: datetime) -> datetime:
    """When a document outside the schedule (usage, late fee) is due."""
    return issued_at + timedelta(days=EXTRA_PAY_DAYS)


def invoice_schedule(
    *,
    term: str,
    duration: int,
    start_date: date,
    tz: tzinfo,
    lines: list[ChargeLine],
    issue_days: int,
    first_issued_on: date | None = None,
    first_due_on: date | None = None,
) -> list[Period]:
    """The schedule's periods with their lines and dates (see the module docstring).
    ``first_issued_on`` / ``first_due_on``: the order's acceptance day and payment
    deadline (site time); before there is an order, period 1's first day."""
    ranges = billing_periods(term=term, duration=duration, start_date=start_date, tz=tz)
    n = len(ranges)
    per_period: list[list[PeriodLine]] = [[] for _ in ranges]
    for line in lines:
        if line.net == 0 and line.vat == 0:
            continue
        if line.period_unit in ONE_OFF_UNITS:
            per_period[0].append(
                PeriodLine(line.code, line.description, line.net, line.vat, line.tax_rate)
            )
            continue
        for i, (net, vat) in enumerate(
            zip(split_cents(line.net, n), split_cents(line.vat, n), strict=True)
        ):
            per_period[i].append(PeriodLine(line.code, line.description, net, vat, line.tax_rate))
    periods = []
    for i, (start, end) in enumerate(ranges):
        if i == 0:
            issued = first_issued_on or start.date()
            due = first_due_on or start.date()
        else:
            issued = issue_on(start=start, issue_days=issue_days)
            due = due_at(
                period_start=start,
                issued_at=datetime.combine(issued, time.min, tzinfo=start.tzinfo),
            ).date()
        periods.append(
            Period(
                seq=i + 1,
                start=start,
                end=end,
                issue_on=issued,
                due_on=due,
                lines=tuple(per_period[i]),
            )
        )
    return periods
