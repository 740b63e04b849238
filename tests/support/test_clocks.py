"""The clocks' table against the contract's and the seeds' own words (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from billing.contracts.documents import FAULT_RESPONSE_MINUTES, REPLACEMENT_HOURS
from portal.support import clocks


def test_an_urgent_ticket_under_contract_runs_on_the_contracts_fault_response():
    t = clocks.targets(tier="contract", priority="urgent", category="hardware")
    # Contract §7.1: fault response 30 minutes, faulty hardware replaced within 4 hours.
    assert (FAULT_RESPONSE_MINUTES, REPLACEMENT_HOURS) == (30, 4)
    assert t.response == timedelta(minutes=30) and t.resolution == timedelta(hours=4)
    assert clocks.targets(tier="standard", priority="normal", category="other") == clocks.Targets(
        timedelta(hours=8), timedelta(hours=72)
    )


def test_a_utilisation_problem_gets_the_seeds_five_minute_response_in_every_tier():
    for tier in ("contract", "standard"):
        for priority in ("urgent", "high", "normal", "low"):
            t = clocks.targets(tier=tier, priority=priority, category="utilisation")
            assert t.response == timedelta(minutes=5)
            assert t.resolution == clocks.TABLE[tier][priority].resolution


def test_a_paused_clock_keeps_what_it_had_when_the_pause_began():
    due = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    paused = datetime(2026, 12, 1, 11, 50, tzinfo=UTC)
    later = datetime(2026, 12, 1, 13, 0, tzinfo=UTC)
    assert clocks.remaining(due=due, stopped_at=None, paused_at=paused, now=later) == timedelta(
        minutes=10
    )
    assert clocks.remaining(due=due, stopped_at=None, paused_at=None, now=later) == timedelta(
        hours=-1
    )
