"""The calendar's bars. Per kind, the read of what it draws (one query, read as tuples)
and the builder of its bars: holds and firm bookings with the cleaning after them,
maintenance windows, faulty periods, swaps. ``Frame`` is the visible window: where a bar
sits in it and how its times read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any, NamedTuple

from django.db.models import Q

from inventory.models import (
    MaintenanceWindow,
    NodeEvent,
    NodeStatus,
    Reservation,
    ReservationStatus,
)
from portal.operations.calendar.texts import Texts
from portal.operations.selectors import SHOWN_RESERVATION_STATUSES, Owner
from provisioning.models import NodeSwap

# The order of the kinds within a row (and of the page's legend).
BAR_KINDS = ("hold", "firm", "cleaning", "maintenance", "faulty", "swap")
SWAP_REASON_CHARS = 80


@dataclass
class Bar:
    kind: str
    start: datetime
    end: datetime
    left: float = 0.0  # percent of the visible window
    width: float = 0.0
    title: str = ""  # the hover text: order, customer, contract, times
    url: str = ""  # a click opens the order (or the maintenance plan)
    conflict: str = ""  # why it stands out, empty when it does not
    owner: Owner | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Frame:
    """The visible window ``[start, end)``, the moment taken as now, the zone times read in."""

    start: datetime
    end: datetime
    now: datetime
    tz: tzinfo

    @property
    def span(self) -> float:
        return (self.end - self.start).total_seconds()

    def meets(self, start: datetime, end: datetime) -> bool:
        """Whether ``[start, end)`` shows in the window."""
        return start < self.end and end > self.start

    def place(self, bar: Bar) -> Bar:
        """``bar`` with its left edge and width in percent of the window (clipped to it; a
        sliver at least, so that a short bar can still be seen and hovered)."""
        a, b = max(bar.start, self.start), min(bar.end, self.end)
        bar.left = round(100 * (a - self.start).total_seconds() / self.span, 3)
        bar.width = round(max(100 * (b - a).total_seconds() / self.span, 0.15), 3)
        return bar

    def fmt(self, value: datetime) -> str:
        return value.astimezone(self.tz).strftime("%Y-%m-%d %H:%M")


# --- Holds and firm bookings, and the cleaning after them ----------------------------------


class Booking(NamedTuple):
    pk: int
    node_id: int
    start_at: datetime
    end_at: datetime
    held_until: datetime
    status: str
    expires_at: datetime | None
    owner_ref: str


def bookings_read(ids: Any, frame: Frame) -> list[Booking]:
    """The bookings of the nodes ``ids`` that hold them within the window (their set-up
    and cleaning included), active or ended."""
    return [
        Booking(*v)
        for v in Reservation.objects.filter(
            node_id__in=ids,
            status__in=SHOWN_RESERVATION_STATUSES,
            held_from__lt=frame.end,
            held_until__gt=frame.start,
        ).values_list(*Booking._fields)
    ]


def booking_label(booking: Booking, owner: Owner) -> str:
    """The order or quote number of a booking, else what its ``owner_ref`` says."""
    return owner.number if owner.kind != "other" else booking.owner_ref


def booking_bar(booking: Booking, owner: Owner, frame: Frame, texts: Texts) -> Bar | None:
    """The hold or firm bar of ``booking``: its order or quote, customer, contract and
    times on hover (and when a hold expires), a click to the order. ``None`` when only its
    set-up or cleaning meets the window."""
    if not frame.meets(booking.start_at, booking.end_at):
        return None
    parts = [booking_label(booking, owner)]
    if owner.customer:
        parts.append(owner.customer)
    if owner.contract:
        parts.append(texts.contract % {"number": owner.contract})
    parts.append(f"{frame.fmt(booking.start_at)} – {frame.fmt(booking.end_at)}")
    is_hold = booking.status == ReservationStatus.HOLD
    if is_hold and booking.expires_at:
        parts.append(texts.expires % {"at": frame.fmt(booking.expires_at)})
    return frame.place(
        Bar(
            kind="hold" if is_hold else "firm",
            start=booking.start_at,
            end=booking.end_at,
            title=" · ".join(parts),
            url=owner.url,
            owner=owner,
            expires_at=booking.expires_at,
        )
    )


def cleaning_bar(booking: Booking, owner: Owner, frame: Frame, texts: Texts) -> Bar | None:
    """The cleaning after ``booking`` (from its end until the node is held no more), or
    ``None`` when it has none or it falls outside the window."""
    if not (
        booking.held_until > booking.end_at and frame.meets(booking.end_at, booking.held_until)
    ):
        return None
    at = frame.fmt(booking.held_until)
    return frame.place(
        Bar(
            kind="cleaning",
            start=booking.end_at,
            end=booking.held_until,
            title=texts.cleaning % {"owner": booking_label(booking, owner), "at": at},
            url=owner.url,
            owner=owner,
        )
    )


# --- Maintenance windows -------------------------------------------------------------------


class Slot(NamedTuple):
    """A maintenance window of one node, with its plan."""

    node_id: int
    start_at: datetime
    end_at: datetime
    reason: str
    plan_id: int | None
    plan_title: str | None


def maintenance_read(ids: Any, frame: Frame) -> list[Slot]:
    return [
        Slot(*v)
        for v in MaintenanceWindow.objects.filter(
            node_id__in=ids, start_at__lt=frame.end, end_at__gt=frame.start
        )
        .order_by()
        .values_list("node_id", "start_at", "end_at", "reason", "plan_id", "plan__title")
    ]


def maintenance_bar(slot: Slot, frame: Frame, texts: Texts) -> Bar:
    """The window's plan (or reason) and times on hover, a click to the plan."""
    times = f"{frame.fmt(slot.start_at)} – {frame.fmt(slot.end_at)}"
    return frame.place(
        Bar(
            kind="maintenance",
            start=slot.start_at,
            end=slot.end_at,
            title=f"{slot.plan_title or slot.reason} · {times}",
            url=texts.plan_url.format(slot.plan_id) if slot.plan_id else "",
        )
    )


# --- Faulty periods ------------------------------------------------------------------------


class StatusChange(NamedTuple):
    node_id: int
    from_status: str
    to_status: str
    at: datetime


def faulty_changes_read(ids: Any, frame: Frame) -> list[StatusChange]:
    """The nodes' moves into and out of faulty before the window ends, oldest first."""
    return [
        StatusChange(*v)
        for v in NodeEvent.objects.filter(node_id__in=ids, created_at__lt=frame.end)
        .filter(Q(to_status=NodeStatus.FAULTY) | Q(from_status=NodeStatus.FAULTY))
        .order_by("created_at", "pk")
        .values_list("node_id", "from_status", "to_status", "created_at")
    ]


def faulty_periods(
    changes: Sequence[StatusChange], faulty_now: dict[int, datetime], end: datetime
) -> dict[int, list[tuple[datetime, datetime]]]:
    """Per node, ``[from, to)`` while it was faulty (from its event history; a node that
    is faulty now with no event is faulty since its status changed)."""
    out: dict[int, list[tuple[datetime, datetime]]] = defaultdict(list)
    since: dict[int, datetime] = {}
    for node_id, from_status, to_status, at in changes:
        if to_status == NodeStatus.FAULTY:
            since.setdefault(node_id, at)
        elif from_status == NodeStatus.FAULTY and node_id in since:
            out[node_id].append((since.pop(node_id), at))
    for node_id, changed_at in faulty_now.items():
        out[node_id].append((since.pop(node_id, changed_at), end))
    return out


def faulty_bar(start: datetime, end: datetime, frame: Frame, texts: Texts) -> Bar | None:
    """A faulty period (``…`` for its end while it lasts past the window), or ``None``
    outside the window."""
    if not frame.meets(start, end):
        return None
    until = frame.fmt(end) if end < frame.end else "…"
    return frame.place(
        Bar(
            kind="faulty",
            start=start,
            end=end,
            title=texts.faulty % {"from": frame.fmt(start), "to": until},
        )
    )


# --- Swaps ---------------------------------------------------------------------------------


class Swap(NamedTuple):
    failed_id: int
    failed_name: str
    spare_id: int | None
    spare_name: str | None
    failed_at: datetime
    restored_at: datetime | None
    reason: str


def swaps_read(ids: Any, frame: Frame) -> list[Swap]:
    """The swaps of the nodes (failed or spare) from failure to the spare's delivery that
    meet the window."""
    return [
        Swap(*v)
        for v in NodeSwap.objects.filter(Q(failed_node_id__in=ids) | Q(spare_node_id__in=ids))
        .filter(failed_at__lt=frame.end)
        .filter(Q(restored_at__isnull=True) | Q(restored_at__gt=frame.start))
        .values_list(
            "failed_node_id",
            "failed_node__hostname",
            "spare_node_id",
            "spare_node__hostname",
            "failed_at",
            "restored_at",
            "reason",
        )
    ]


def swap_bars(swap: Swap, frame: Frame, texts: Texts) -> list[tuple[int, Bar]]:
    """The swap's bar on the failed node's row and on the spare's, as ``(node id, bar)``:
    from the failure until the spare was delivered (until now while it is not; a minute
    at least)."""
    until = swap.restored_at or frame.now
    if until <= swap.failed_at:
        until = swap.failed_at + timedelta(minutes=1)
    title = texts.swap % {
        "failed": swap.failed_name,
        "spare": swap.spare_name or "—",
        "reason": swap.reason[:SWAP_REASON_CHARS],
    }
    return [
        (node_id, frame.place(Bar(kind="swap", start=swap.failed_at, end=until, title=title)))
        for node_id in (swap.failed_id, swap.spare_id)
        if node_id is not None
    ]
