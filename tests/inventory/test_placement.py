"""Placement is pure code: these tests need no database."""

import zlib
from datetime import UTC, datetime, timedelta

import pytest

from inventory.placement import Candidate, earliest_full_start, leaf_summary, place


def nodes(leaf: str, count: int, *, rack_size: int = 4, start: int = 0) -> list[Candidate]:
    return [
        Candidate(
            node_id=zlib.crc32(f"{leaf}-n{i:03d}".encode()),  # stable across runs
            hostname=f"{leaf}-n{i:03d}",
            leaf=leaf,
            rack=f"{leaf}-r{i // rack_size}",
        )
        for i in range(start, start + count)
    ]


def test_fits_under_one_leaf_when_one_leaf_can_hold_it():
    free = nodes("leaf-a", 10) + nodes("leaf-b", 20) + nodes("leaf-c", 18)
    p = place(free, 16)
    assert p is not None
    assert p.leaves == ("leaf-c",)  # best fit: the smallest leaf that holds all 16
    assert len(p.node_ids) == 16 == len(set(p.node_ids))


def test_fewest_racks_inside_the_leaf():
    free = nodes("leaf-a", 12, rack_size=4)  # three racks of four
    p = place(free, 8)
    assert p is not None and len(p.racks) == 2


def test_fewest_leaves_when_no_leaf_is_big_enough():
    free = nodes("leaf-a", 20) + nodes("leaf-b", 20) + nodes("leaf-c", 20) + nodes("leaf-d", 20)
    free += nodes("leaf-e", 5) + nodes("leaf-f", 5) + nodes("leaf-g", 5)
    p = place(free, 64)
    assert p is not None
    assert len(p.leaves) == 4
    # Three full leaves, and the last four nodes from a small leaf (leaf-d stays whole).
    assert set(p.leaves) == {"leaf-a", "leaf-b", "leaf-c", "leaf-e"}


def test_remainder_goes_to_the_smallest_leaf_that_holds_it():
    free = nodes("leaf-a", 20) + nodes("leaf-b", 9) + nodes("leaf-c", 5)
    p = place(free, 24)
    assert p is not None
    assert p.leaves == ("leaf-a", "leaf-c")


def test_ties_are_broken_by_name_whatever_the_input_order():
    free = nodes("leaf-b", 16) + nodes("leaf-a", 16)
    first = place(free, 16)
    second = place(list(reversed(free)), 16)
    assert first == second
    assert first is not None and first.leaves == ("leaf-a",)


def test_not_enough_nodes_returns_none():
    assert place(nodes("leaf-a", 3), 4) is None
    assert place([], 1) is None


def test_count_must_be_positive():
    with pytest.raises(ValueError):
        place(nodes("leaf-a", 3), 0)


def test_leaf_summary_counts_nodes_per_leaf():
    p = place(nodes("leaf-a", 20) + nodes("leaf-b", 7), 24)
    assert p is not None
    assert leaf_summary(p) == [("leaf-a", 20), ("leaf-b", 4)]


T0 = datetime(2026, 12, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def test_earliest_start_is_now_when_enough_are_free():
    t = earliest_full_start(
        busy={},
        eligible=[1, 2, 3],
        count=3,
        start=T0,
        duration=30 * DAY,
        horizon_end=T0 + 400 * DAY,
    )
    assert t == T0


def test_earliest_start_waits_for_the_last_needed_node():
    busy = {
        1: [(T0 - DAY, T0 + 5 * DAY)],
        2: [(T0, T0 + 10 * DAY)],
        3: [(T0 + 2 * DAY, T0 + 3 * DAY)],
    }
    # Two nodes for 30 days: node 3 is busy on day 2, node 1 frees on day 5.
    t = earliest_full_start(
        busy=busy,
        eligible=[1, 2, 3],
        count=2,
        start=T0,
        duration=30 * DAY,
        horizon_end=T0 + 400 * DAY,
    )
    assert t == T0 + 5 * DAY


def test_a_gap_too_short_does_not_count():
    # Node 1 has a 3-day gap between bookings; a 5-day rental cannot use it.
    busy = {1: [(T0, T0 + 2 * DAY), (T0 + 5 * DAY, T0 + 20 * DAY)]}
    t = earliest_full_start(
        busy=busy, eligible=[1], count=1, start=T0, duration=5 * DAY, horizon_end=T0 + 400 * DAY
    )
    assert t == T0 + 20 * DAY


def test_a_gap_exactly_long_enough_counts_half_open():
    busy = {1: [(T0, T0 + 2 * DAY), (T0 + 7 * DAY, T0 + 20 * DAY)]}
    t = earliest_full_start(
        busy=busy, eligible=[1], count=1, start=T0, duration=5 * DAY, horizon_end=T0 + 400 * DAY
    )
    assert t == T0 + 2 * DAY


def test_no_start_within_the_horizon():
    busy = {1: [(T0, T0 + 500 * DAY)]}
    assert (
        earliest_full_start(
            busy=busy, eligible=[1], count=1, start=T0, duration=DAY, horizon_end=T0 + 400 * DAY
        )
        is None
    )


def test_too_few_eligible_nodes_never_fit():
    assert (
        earliest_full_start(
            busy={}, eligible=[1], count=2, start=T0, duration=DAY, horizon_end=T0 + 400 * DAY
        )
        is None
    )
