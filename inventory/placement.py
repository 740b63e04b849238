"""Topology-aware placement: pure functions, no Django.

A training cluster wants its nodes under as few leaf switches as possible (every extra
leaf puts traffic through the spine), then in as few racks as possible. ``place``
chooses ``count`` nodes from the free ones; ``earliest_full_start`` says when the full
count would be free when it is not now. Both are deterministic: equal inputs, equal
answers, whatever order the candidates come in.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class Candidate:
    """A free node, as placement sees it."""

    node_id: int
    hostname: str
    leaf: str
    rack: str


@dataclass(frozen=True, slots=True)
class Placement:
    nodes: tuple[Candidate, ...]

    @property
    def node_ids(self) -> tuple[int, ...]:
        return tuple(c.node_id for c in self.nodes)

    @property
    def leaves(self) -> tuple[str, ...]:
        return tuple(sorted({c.leaf for c in self.nodes}))

    @property
    def racks(self) -> tuple[str, ...]:
        return tuple(sorted({c.rack for c in self.nodes}))


def _by_rack(nodes: Iterable[Candidate]) -> list[list[Candidate]]:
    """The nodes grouped by rack, fullest rack first, each group sorted by hostname."""
    racks: dict[str, list[Candidate]] = defaultdict(list)
    for c in nodes:
        racks[c.rack].append(c)
    groups = [sorted(g, key=lambda c: (c.hostname, c.node_id)) for g in racks.values()]
    groups.sort(key=lambda g: (-len(g), g[0].rack))
    return groups


def _take_fewest_racks(nodes: Sequence[Candidate], count: int) -> list[Candidate]:
    """``count`` nodes from ``nodes`` in as few racks as possible.

    Whole racks are taken fullest first; the remainder comes from the smallest rack that
    can hold it alone (best fit keeps the big racks whole for the next order).
    """
    groups = _by_rack(nodes)
    chosen: list[Candidate] = []
    remaining = count
    while remaining > 0:
        fitting = [g for g in groups if len(g) >= remaining]
        if fitting:
            best = min(fitting, key=lambda g: (len(g), g[0].rack))
            chosen.extend(best[:remaining])
            break
        biggest = groups.pop(0)
        chosen.extend(biggest)
        remaining -= len(biggest)
    return chosen


def _racks_needed(nodes: Sequence[Candidate], count: int) -> int:
    return len({c.rack for c in _take_fewest_racks(nodes, count)})


def place(candidates: Iterable[Candidate], count: int) -> Placement | None:
    """Choose ``count`` nodes under the fewest leaf switches, then the fewest racks.

    Returns ``None`` when fewer than ``count`` candidates are free. Among the leaves that
    could hold the order alone, the smallest that fits is taken (best fit leaves large
    free blocks for large orders); ties go to fewer racks, then the leaf name.
    """
    if count <= 0:
        raise ValueError("count must be positive")
    by_leaf: dict[str, list[Candidate]] = defaultdict(list)
    total = 0
    for c in candidates:
        by_leaf[c.leaf].append(c)
        total += 1
    if total < count:
        return None

    chosen: list[Candidate] = []
    remaining = count
    leaves = dict(by_leaf)
    while remaining > 0:
        fitting = [name for name, nodes in leaves.items() if len(nodes) >= remaining]
        if fitting:
            # Best fit: the smallest leaf that holds the rest; among equals, fewest racks.
            smallest = min(len(leaves[n]) for n in fitting)
            best = min(
                (n for n in fitting if len(leaves[n]) == smallest),
                key=lambda n: (_racks_needed(leaves[n], remaining), n),
            )
            chosen.extend(_take_fewest_racks(leaves[best], remaining))
            break
        # No leaf holds the rest: take the fullest leaf whole (fewest leaves overall).
        fullest = min(leaves, key=lambda n: (-len(leaves[n]), n))
        taken = leaves.pop(fullest)
        chosen.extend(_take_fewest_racks(taken, len(taken)))
        remaining -= len(taken)
    chosen.sort(key=lambda c: (c.leaf, c.rack, c.hostname, c.node_id))
    return Placement(nodes=tuple(chosen))


Interval = tuple[datetime, datetime]


def earliest_full_start(
    *,
    busy: Mapping[int, Sequence[Interval]],
    eligible: Iterable[int],
    count: int,
    start: datetime,
    duration: timedelta,
    horizon_end: datetime,
) -> datetime | None:
    """The earliest ``t >= start`` at which ``count`` eligible nodes are all free over
    ``[t, t + duration)``, or ``None`` if there is no such ``t`` with
    ``t + duration <= horizon_end``.

    ``busy`` maps node ids to their busy half-open intervals (reservations, maintenance).
    Each node's free gaps of at least ``duration`` give a closed range of feasible start
    times ``[gap_start, gap_end - duration]``; a sweep over those ranges finds the first
    instant covered by ``count`` of them. O(I log I) for I busy intervals.
    """
    if count <= 0:
        raise ValueError("count must be positive")
    latest_start = horizon_end - duration
    if latest_start < start:
        return None
    OPEN, CLOSE = 0, 1  # at one instant, ranges open before others close (closed ranges)
    events: list[tuple[datetime, int]] = []
    for node_id in set(eligible):
        cursor = start
        for s, e in sorted(busy.get(node_id, ())):
            if e <= cursor:
                continue
            if s > cursor and s - cursor >= duration:
                events.append((cursor, OPEN))
                events.append((min(s - duration, latest_start), CLOSE))
            cursor = max(cursor, e)
            if cursor > latest_start:
                break
        if cursor <= latest_start:
            events.append((cursor, OPEN))
            events.append((latest_start, CLOSE))
    events.sort()
    covering = 0
    for t, kind in events:
        if kind == OPEN:
            covering += 1
            if covering >= count:
                return t
        else:
            covering -= 1
    return None


def leaf_summary(placement: Placement) -> list[tuple[str, int]]:
    """``(leaf, nodes)`` pairs, most nodes first: what a quote shows of the placement."""
    counts: dict[str, int] = defaultdict(int)
    for c in placement.nodes:
        counts[c.leaf] += 1
    return heapq.nsmallest(len(counts), counts.items(), key=lambda kv: (-kv[1], kv[0]))


def unit_summary(
    leaves: Sequence[tuple[str, int]], units: dict[str, tuple[str, int]]
) -> tuple[int, int]:
    """(scalable units, rail switches) a placement's leaves make up; (0, 0) when none of
    them is in a scalable unit."""
    chosen = {units[name] for name, _n in leaves if name in units}
    return len(chosen), sum(rails for _unit, rails in chosen)
