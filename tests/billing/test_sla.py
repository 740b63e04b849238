"""Automatic SLA credits from a scripted event history (pure: no database)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from zoneinfo import ZoneInfo

from billing.pricing.sla import (
    SLA_CREDIT_TABLE,
    NodeFacts,
    Outage,
    PlannedWindow,
    credit_percent,
    is_degraded,
    node_credit,
)

TZ = ZoneInfo("Asia/Shanghai")
START = datetime(2026, 12, 1, tzinfo=TZ)
END = datetime(2027, 1, 1, tzinfo=TZ)  # December: 31 days = 744 hours


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, tzinfo=TZ)


def test_a_scripted_month_gives_the_hand_computed_credit():
    facts = NodeFacts(
        node_ref="sz-h100-01",
        outages=(
            # Delivered 6 hours late: 00:00 → 06:00 on the 1st.
            Outage("late_delivery", START, at(1, 6), "run 7 delivered 06:00"),
            # Faulty 10:00 → 14:00 on the 5th (4 h) ...
            Outage("faulty", at(5, 10), at(5, 14), "node event 31"),
            # ... and the swap that replaced it lost 5 h from 10:00: 1 h beyond the fault.
            Outage("swap", at(5, 10), at(5, 15), "swap 3: 5.00 h lost"),
            # Unplanned maintenance 2 h on the 10th.
            Outage("maintenance", at(10, 2), at(10, 4), "node event 40"),
            # Planned maintenance announced a week ahead: 8 h on the 20th, does not count.
            Outage("maintenance", at(20, 0), at(20, 8), "node event 52"),
            # A re-validation 12 % below the baseline: degraded 3 h until it passed again.
            Outage("degraded", at(25, 9), at(25, 12), "run 11 GEMM −12 %"),
            # An outage before the period is outside it.
            Outage("faulty", at(1) - timedelta(days=2), at(1) - timedelta(days=1), "x"),
        ),
        planned=(PlannedWindow(at(20, 0), at(20, 8), announced_at=at(13)),),
    )
    credit = node_credit(facts, start=START, end=END, node_charge=Decimal("80000.00"))
    # Unavailable: 6 (late) + 5 (fault and swap overlap: 10:00 → 15:00) + 2 (maintenance)
    # + 3 (degraded) = 16 hours; planned maintenance 0.
    assert credit.unavailable == timedelta(hours=16)
    # Availability: 100 × (1 − 16 / 744) = 97.849462… → 97.849 %.
    assert credit.availability == Decimal("97.849")
    # 97.849 is below 99 but not below 95: the 25 % tier. 25 % of 80,000.00 = 20,000.00.
    assert credit.credit_percent == Decimal("25")
    assert credit.amount == Decimal("20000.00")
    assert {o.kind for o in credit.counted} == {
        "late_delivery",
        "faulty",
        "swap",
        "maintenance",
        "degraded",
    }


def test_maintenance_announced_too_late_counts():
    facts = NodeFacts(
        node_ref="n",
        outages=(Outage("maintenance", at(20, 0), at(20, 1), ""),),
        planned=(PlannedWindow(at(20, 0), at(20, 1), announced_at=at(19, 12)),),
    )
    credit = node_credit(facts, start=START, end=END, node_charge=Decimal("1000.00"))
    # 1 h of 744: 99.86559…% (shown truncated, 99.865) → below 99.9: 10 % of 1,000.00.
    assert (credit.availability, credit.amount) == (Decimal("99.865"), Decimal("100.00"))


def test_the_table_tiers_and_degradation_margin():
    assert credit_percent(Decimal("99.95")) == 0
    assert credit_percent(Decimal("99.9")) == 0  # at the target: no credit
    assert credit_percent(Decimal("99.899")) == 10
    assert credit_percent(Decimal("98.5")) == 25
    assert credit_percent(Decimal("94.999")) == 50
    assert [t for t, _p in SLA_CREDIT_TABLE] == [Decimal("95"), Decimal("99"), Decimal("99.9")]
    assert is_degraded(baseline=Decimal("900"), measured=Decimal("800"), margin=Decimal("0.10"))
    assert not is_degraded(baseline=Decimal("900"), measured=Decimal("810"), margin=Decimal("0.10"))
    clean = node_credit(NodeFacts("n"), start=START, end=END, node_charge=Decimal("80000.00"))
    assert (clean.availability, clean.amount) == (Decimal("100.000"), Decimal("0.00"))


def test_the_tier_is_chosen_on_the_exact_availability_never_a_rounded_one():
    # 99.8995 % exactly: 0.1005 % of 744 h = 2,691.792 s down. Rounded to three places it
    # would be 99.900 % (no credit); exact, it is below 99.9 %: 10 %.
    down = timedelta(seconds=2691, microseconds=792000)
    facts = NodeFacts("n", outages=(Outage("faulty", at(3), at(3) + down, ""),))
    credit = node_credit(facts, start=START, end=END, node_charge=Decimal("80000.00"))
    assert credit.exact_availability == Fraction(998995, 10000)
    assert (credit.availability, credit.credit_percent) == (Decimal("99.899"), Decimal("10"))
    assert credit.amount == Decimal("8000.00")
    # Exactly 0.1 % of 744 h (2,678.4 s) down is 99.9 %, not below it: no credit.
    limit = timedelta(seconds=2678, microseconds=400000)
    at_limit = NodeFacts("n", outages=(Outage("faulty", at(3), at(3) + limit, ""),))
    assert node_credit(at_limit, start=START, end=END, node_charge=Decimal("1")).credit_percent == 0
