"""Reads of the inventory that are more than one line."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    NODE_UNBOOKABLE_STATUSES,
    MaintenanceScope,
    MaintenanceWindow,
    Node,
    NodeStatus,
    NodeType,
    Rack,
    Reservation,
    Site,
    Switch,
    SwitchRole,
)
from inventory.placement import Candidate, Placement, earliest_full_start, place

# How far past the requested period the search looks for the earliest full-count start.
EARLIEST_START_HORIZON = timedelta(days=365)


def _busy_over(
    start_at: datetime, end_at: datetime, *, continues: str = "", at: datetime | None = None
) -> tuple[Exists, Exists]:
    """A node's bookings and maintenance windows that meet the held range ``[start_at,
    end_at)``: a booking counts over its own held range (lead time and cleaning). A
    booking of ``continues`` that ends at ``at`` does not count: the new one continues it
    on the same node without a break (``reservation_hold(continues=…)``)."""
    reserved = Reservation.objects.filter(
        node=OuterRef("pk"),
        status__in=ACTIVE_RESERVATION_STATUSES,
        held_from__lt=end_at,
        held_until__gt=start_at,
    )
    if continues and at is not None:
        reserved = reserved.exclude(owner_ref=continues, end_at=at)
    maintained = MaintenanceWindow.objects.filter(
        node=OuterRef("pk"), start_at__lt=end_at, end_at__gt=start_at
    )
    return Exists(reserved), Exists(maintained)


def free_nodes(
    *,
    site: Site | int,
    node_type: NodeType | int,
    start_at: datetime,
    end_at: datetime,
    continues: str = "",
) -> QuerySet[Node]:
    """Nodes of a type at a site that can be booked over all of ``[start_at, end_at)``
    with the site's lead time before and cleaning time after (``Site.held_range``): not
    reserved, not in a maintenance window, not in maintenance, faulty or retired."""
    reserved, maintained = _busy_over(
        *_site(site).held_range(start_at, end_at), continues=continues, at=start_at
    )
    return (
        Node.objects.filter(site=site, node_type=node_type)
        .exclude(status__in=NODE_UNBOOKABLE_STATUSES)
        .exclude(reserved)
        .exclude(maintained)
    )


def _site(site: Site | int) -> Site:
    return site if isinstance(site, Site) else Site.objects.get(pk=site)


@dataclass(frozen=True)
class Availability:
    """What an availability search found for ``requested`` nodes."""

    requested: int
    start_at: datetime
    end_at: datetime
    free: tuple[Candidate, ...]
    placement: Placement | None
    earliest_start: datetime | None = None
    free_by_leaf: dict[str, list[Candidate]] = field(default_factory=dict)

    @property
    def free_count(self) -> int:
        return len(self.free)

    @property
    def can_place(self) -> bool:
        return self.placement is not None


def availability_search(
    *,
    site: Site | int,
    node_type: NodeType | int,
    count: int,
    start_at: datetime,
    end_at: datetime,
    continues: str = "",
) -> Availability:
    """Free nodes grouped by leaf switch, and the topology-aware choice of ``count``.

    One query when the count can be met; a second, for the busy intervals of the type's
    nodes, when it cannot and the earliest full-count start has to be found.
    """
    if count <= 0:
        raise ValueError("count must be positive")
    rows = (
        free_nodes(
            site=site, node_type=node_type, start_at=start_at, end_at=end_at, continues=continues
        )
        .order_by()  # placement sorts for itself; no ORDER BY in SQL
        .values_list("pk", "hostname", "leaf_switch__name", "rack__name")
    )
    free = tuple(
        Candidate(node_id=pk, hostname=host, leaf=leaf, rack=rack) for pk, host, leaf, rack in rows
    )
    by_leaf: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(free, key=lambda c: (c.leaf, c.hostname)):
        by_leaf[c.leaf].append(c)
    placement = place(free, count)
    earliest = start_at if placement else None
    if placement is None:
        earliest = _earliest_full_start(
            site=site,
            node_type=node_type,
            count=count,
            start_at=start_at,
            duration=end_at - start_at,
            free_ids=[c.node_id for c in free],
        )
    return Availability(
        requested=count,
        start_at=start_at,
        end_at=end_at,
        free=free,
        placement=placement,
        earliest_start=earliest,
        free_by_leaf=dict(by_leaf),
    )


def _earliest_full_start(
    *,
    site: Site | int,
    node_type: NodeType | int,
    count: int,
    start_at: datetime,
    duration: timedelta,
    free_ids: list[int],
) -> datetime | None:
    # Search for a free held range (the rental with the site's lead and cleaning time),
    # then answer with the rental's start inside it.
    place_of = _site(site)
    held_start, held_end = place_of.held_range(start_at, start_at + duration)
    lead = start_at - held_start
    start_at, duration = held_start, held_end - held_start
    horizon_end = start_at + duration + EARLIEST_START_HORIZON
    bookable = Q(node__site=site, node__node_type=node_type) & ~Q(
        node__status__in=NODE_UNBOOKABLE_STATUSES
    )
    # No ORDER BY in either part: SQLite refuses one inside a compound SELECT.
    reservations = (
        Reservation.objects.filter(
            bookable,
            Q(held_from__lt=horizon_end, held_until__gt=start_at),
            status__in=ACTIVE_RESERVATION_STATUSES,
        )
        .order_by()
        .values_list("node_id", "held_from", "held_until")
    )
    windows = (
        MaintenanceWindow.objects.filter(bookable, start_at__lt=horizon_end, end_at__gt=start_at)
        .order_by()
        .values_list("node_id", "start_at", "end_at")
    )
    busy: dict[int, list[tuple[datetime, datetime]]] = defaultdict(list)
    for node_id, s, e in reservations.union(windows, all=True).order_by():
        busy[node_id].append((s, e))
    found = earliest_full_start(
        busy=busy,
        eligible=set(free_ids) | set(busy),
        count=count,
        start=start_at,
        duration=duration,
        horizon_end=horizon_end,
    )
    return None if found is None else found + lead


def free_counts_now(*, at: datetime | None = None) -> dict[tuple[int, int], int]:
    """``{(site_id, node_type_id): nodes bookable right now}``, in one query."""
    at = at or timezone.now()
    reserved, maintained = _busy_over(at, at + timedelta(seconds=1))
    rows = (
        Node.objects.exclude(status__in=NODE_UNBOOKABLE_STATUSES)
        .exclude(reserved)
        .exclude(maintained)
        .order_by()
        .values("site_id", "node_type_id")
        .annotate(free=Count("pk"))
    )
    return {(r["site_id"], r["node_type_id"]): r["free"] for r in rows}


def catalog_sites() -> list[Site]:
    return list(Site.objects.order_by("code"))


def catalog_node_types() -> list[NodeType]:
    return list(
        NodeType.objects.select_related("gpu_model")
        .prefetch_related("optional_gpu_models")
        .order_by("code")
    )


def node_counts_by_site_and_type() -> dict[tuple[int, int], int]:
    rows = Node.objects.order_by().values("site_id", "node_type_id").annotate(n=Count("pk"))
    return {(r["site_id"], r["node_type_id"]): r["n"] for r in rows}


def leaf_units(*, site: Site, leaves: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Leaf switch name -> (its scalable unit, the unit's rail switches) for the leaves
    that belong to one (one query); leaves outside a scalable unit are left out."""
    rows = list(
        Switch.objects.filter(site=site, role=SwitchRole.LEAF)
        .exclude(scalable_unit="")
        .filter(
            scalable_unit__in=Switch.objects.filter(site=site, name__in=list(leaves)).values(
                "scalable_unit"
            )
        )
        .values_list("name", "scalable_unit")
    )
    size: dict[str, int] = {}
    for _name, unit in rows:
        size[unit] = size.get(unit, 0) + 1
    return {name: (unit, size[unit]) for name, unit in rows if name in set(leaves)}


def node_type_by_code(code: str) -> NodeType:
    """The node type with this code (``NodeType.DoesNotExist`` when there is none)."""
    return NodeType.objects.get(code=code)


# --- Maintenance planning ----------------------------------------------------------------


def maintenance_scope_nodes(
    *,
    scope: str,
    node_ids: Sequence[int] = (),
    rack: Rack | int | None = None,
    switch: Switch | int | None = None,
) -> list[Node]:
    """The nodes a maintenance plan takes down: the chosen ones, every node of a rack, or
    every node under a leaf switch (under its leaves, for a spine). Retired nodes are left
    out: they serve nobody."""
    nodes = Node.objects.exclude(status=NodeStatus.RETIRED).select_related("site")
    if scope == MaintenanceScope.NODES:
        nodes = nodes.filter(pk__in=list(node_ids))
    elif scope == MaintenanceScope.RACK:
        nodes = nodes.filter(rack=rack)
    elif scope == MaintenanceScope.SWITCH:
        switch_id = switch.pk if isinstance(switch, Switch) else switch
        nodes = nodes.filter(
            Q(leaf_switch_id=switch_id) | Q(leaf_switch__uplinks__pk=switch_id)
        ).distinct()
    else:
        raise ValueError(f"unknown maintenance scope {scope!r}")
    return list(nodes.order_by("hostname"))


def maintenance_clashes(
    *, node_ids: Sequence[int], start_at: datetime, end_at: datetime
) -> list[Reservation]:
    """The active bookings (holds and firm) whose held range meets ``[start_at, end_at)``
    on these nodes: what a window over them would take from a customer."""
    return list(
        Reservation.objects.filter(
            node_id__in=list(node_ids),
            status__in=ACTIVE_RESERVATION_STATUSES,
            held_from__lt=end_at,
            held_until__gt=start_at,
        )
        .select_related("node")
        .order_by("owner_ref", "node__hostname")
    )
