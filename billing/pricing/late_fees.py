"""Late fees as the contract words them (clause 11): pure functions, no Django.

An amount not paid by its due date bears ``LATE_FEE_PER_DAY`` (0.05 %) of that amount for
each calendar day (site time) after the due date up to and including the day it is
received (the transfer's value date, a card payment's day, the day a credit note lowered
it). The fee is computed on what was still unpaid each day (so part-payments stop their
part's fee), summed exactly and rounded half up to the cent once.

Example: 10,000.00 due on 12-01; 4,000.00 arrives 12-05 (4 days late), the rest 6,000.00
on 12-11 (10 days late): 4,000 × 0.0005 × 4 + 6,000 × 0.0005 × 10 = 8.00 + 30.00 = 38.00.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
# Percent of the overdue amount per day (the contract prints it from here).
LATE_FEE_PER_DAY = Decimal("0.05")


def late_fee(
    *,
    total: Decimal,
    due_on: date,
    settlements: Iterable[tuple[date, Decimal]],
    until: date,
    rate_percent: Decimal = LATE_FEE_PER_DAY,
) -> Decimal:
    """The late fee of an invoice of ``total`` due on ``due_on``: ``settlements`` are
    (day received, amount) of its payments and applied credits; what is still unpaid
    accrues up to and including ``until``."""
    rate = rate_percent / Decimal("100")
    left = total
    fee = Decimal("0")
    for day, amount in sorted(settlements):
        if amount <= 0 or left <= 0:
            continue
        part = min(amount, left)
        fee += part * rate * max((day - due_on).days, 0)
        left -= part
    if left > 0:
        fee += left * rate * max((until - due_on).days, 0)
    return fee.quantize(CENT, rounding=ROUND_HALF_UP)


def days_late(*, due_on: date, on: date) -> int:
    return max((on - due_on).days, 0)
