"""``calendar_window``: the calendar's one selector. It reads the rows, then each kind of
bar with one query, builds the bars, applies the conflict rules and orders each row."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from portal.operations.calendar import bars, conflicts
from portal.operations.calendar.bars import BAR_KINDS, Bar, Booking, Frame
from portal.operations.calendar.rows import Row, nodes_matching, rows_read
from portal.operations.calendar.texts import Texts
from portal.operations.selectors import owners_of

ZOOM_DAYS = {"day": 1, "week": 7, "month": 30, "quarter": 90}
KIND_ORDER = {kind: i for i, kind in enumerate(BAR_KINDS)}


@dataclass
class Calendar:
    start: datetime
    end: datetime
    rows: list[Row]
    total: int  # nodes matching the filters
    page: int
    pages: int
    conflicts: int


def calendar_window(
    *,
    start: datetime,
    end: datetime,
    site_id: int | None = None,
    node_type_id: int | None = None,
    status: str = "",
    organisation_id: int | None = None,
    page: int = 1,
    page_size: int | None = None,
    now: datetime | None = None,
) -> Calendar:
    """The calendar of ``[start, end)`` for the nodes matching the filters (one page of
    ``page_size`` rows, or all of them with ``None``), in a fixed number of queries:
    the nodes (and their count when paged), sites, node types, bookings, maintenance
    windows, faulty events, swaps, open health incidents, the orders and quotes behind
    the bookings (with contracts), and the quotes asking for nodes a soon-expiring hold
    keeps. Rows and bookings are read as tuples: no model instance per row."""
    frame = Frame(start, end, now or timezone.now(), timezone.get_current_timezone())
    matching = nodes_matching(
        site_id=site_id,
        node_type_id=node_type_id,
        status=status,
        organisation_id=organisation_id,
        start=start,
        end=end,
    )
    found = rows_read(matching, page=page, page_size=page_size)
    if not found.rows:
        return Calendar(start, end, [], found.total, found.page, found.pages, 0)
    rows, ids = found.rows, found.ids
    bookings = bars.bookings_read(ids, frame)
    slots = bars.maintenance_read(ids, frame)
    changes = bars.faulty_changes_read(ids, frame)
    swaps = bars.swaps_read(ids, frame)
    for node_id in conflicts.unhealthy_read(ids):
        rows[node_id].unhealthy = True
    owners = owners_of({b.owner_ref for b in bookings})
    demand = conflicts.demand_read(bookings, rows, frame.now)
    texts = Texts.translated()

    booked: dict[int, list[Booking]] = defaultdict(list)
    for b in bookings:
        booked[b.node_id].append(b)
        row, owner = rows[b.node_id], owners[b.owner_ref]
        bar = bars.booking_bar(b, owner, frame, texts)
        if bar is not None:
            bar.conflict = conflicts.booking_conflict(b, owner, row, demand, frame, texts)
            row.bars.append(bar)
        cleaning = bars.cleaning_bar(b, owner, frame, texts)
        if cleaning is not None:
            row.bars.append(cleaning)
    for slot in slots:
        bar = bars.maintenance_bar(slot, frame, texts)
        bar.conflict = conflicts.maintenance_over_bookings(
            slot, booked.get(slot.node_id, []), owners, texts
        )
        rows[slot.node_id].bars.append(bar)
    for node_id, periods in bars.faulty_periods(changes, found.faulty_now(), end).items():
        for since, until in periods:
            faulty = bars.faulty_bar(since, until, frame, texts)
            if faulty is not None and node_id in rows:
                rows[node_id].bars.append(faulty)
    for swap in swaps:
        for node_id, bar in bars.swap_bars(swap, frame, texts):
            if node_id in rows:
                rows[node_id].bars.append(bar)
    return Calendar(
        start, end, list(rows.values()), found.total, found.page, found.pages, _settle(rows)
    )


def _settle(rows: dict[int, Row]) -> int:
    """Each row's bars in the order of their kinds, then of their start, and its conflicts
    in that order; the number of conflicts of the page."""
    total = 0
    for row in rows.values():
        row.bars.sort(key=_bar_order)
        row.conflicts = [b.conflict for b in row.bars if b.conflict]
        total += len(row.conflicts)
    return total


def _bar_order(bar: Bar) -> tuple[int, datetime]:
    return KIND_ORDER[bar.kind], bar.start
