"""Every write to the inventory. Services own their transactions and lock what they move."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Sum
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from core import jobs, lifecycle
from core.errors import DomainError, DoubleBooking
from core.texts import Text
from core.types import Actor
from inventory import selectors
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    NODE_UNBOOKABLE_STATUSES,
    MaintenancePlan,
    MaintenanceScope,
    MaintenanceStatus,
    MaintenanceWindow,
    Node,
    NodeStatus,
    NodeType,
    Rack,
    Reservation,
    ReservationStatus,
    Site,
    Switch,
    SwitchRole,
)

EXCLUSION_CONSTRAINT = "reservation_no_overlap"
# A booking in one of these no longer holds its node.
GONE_STATUSES = frozenset({ReservationStatus.RELEASED, ReservationStatus.EXPIRED})


def _check_range(start_at: datetime, end_at: datetime) -> None:
    if timezone.is_naive(start_at) or timezone.is_naive(end_at):
        raise DomainError(_("Start and end need a time zone."))
    if end_at <= start_at:
        raise DomainError(_("The end must be after the start."))


# --- Nodes ------------------------------------------------------------------------------


def node_transition(*, node: Node, to_status: str, actor: Actor = None, reason: str) -> Node:
    """Move a node along its lifecycle, recording who, when, from, to and why."""
    if not reason or not reason.strip():
        raise DomainError(_("Say why the node changes status."))
    return lifecycle.transition(node, to=to_status, actor=actor, reason=reason)


def node_mark_faulty(*, node: Node, actor: Actor = None, reason: str) -> Node:
    """Take a node out of service because it is broken."""
    return node_transition(node=node, to_status=NodeStatus.FAULTY, actor=actor, reason=reason)


def node_bulk_transition(
    *, nodes: Sequence[Node], to_status: str, actor: Actor = None, reason: str
) -> tuple[list[Node], list[str]]:
    """Move each node through the state machine; one refused move does not stop the rest.

    Returns the moved nodes and one message per refused node.
    """
    moved: list[Node] = []
    refused: list[str] = []
    for node in nodes:
        try:
            moved.append(
                node_transition(node=node, to_status=to_status, actor=actor, reason=reason)
            )
        except DomainError as exc:
            refused.append(exc.message)
    return moved, refused


def leaf_group(leaf: Switch) -> list[Switch]:
    """The switches of a leaf's group: the rail switches of its scalable unit, or itself."""
    if not leaf.scalable_unit:
        return [leaf]
    return list(
        Switch.objects.filter(
            site_id=leaf.site_id, scalable_unit=leaf.scalable_unit, role=SwitchRole.LEAF
        ).order_by("name")
    )


def port_budget_check(
    *, leaf_switch_id: int, node_type_id: int, exclude_node_id: int | None
) -> None:
    """A node under a leaf group must find a free port for each of its NICs: the group's
    ports for nodes against the NICs of the nodes already under it (retired ones left
    out). Raises ``DomainError`` with the figures."""
    leaf = Switch.objects.select_for_update().get(pk=leaf_switch_id)
    group = leaf_group(leaf)
    budget = sum(s.ports_for_nodes for s in group)
    nodes = Node.objects.filter(leaf_switch__in=group).exclude(status=NodeStatus.RETIRED)
    if exclude_node_id is not None:
        nodes = nodes.exclude(pk=exclude_node_id)
    used = nodes.aggregate(n=Sum("node_type__nic_count"))["n"] or 0
    needs = NodeType.objects.values_list("nic_count", flat=True).get(pk=node_type_id)
    if used + needs > budget:
        name = leaf.scalable_unit or leaf.name
        raise DomainError(
            ngettext(
                "Leaf group %(group)s (%(n)s switch) has %(budget)s ports for nodes; its nodes "
                "use %(used)s and this node needs %(needs)s more. Put it under another leaf "
                "group, or give the switch more ports for nodes.",
                "Leaf group %(group)s (%(n)s switches) has %(budget)s ports for nodes; its "
                "nodes use %(used)s and this node needs %(needs)s more. Put it under another "
                "leaf group, or give the switches more ports for nodes.",
                len(group),
            )
            % {"group": name, "n": len(group), "budget": budget, "used": used, "needs": needs}
        )


@transaction.atomic
def node_create(
    *,
    site_id: int,
    node_type_id: int,
    rack_id: int,
    leaf_switch_id: int,
    hostname: str,
    serial: str,
    bmc_address: str = "",
    status: str = NodeStatus.AVAILABLE,
    actor: Actor = None,
    reason: str = "",
) -> Node:
    """Add a node to the inventory, validated, with a first event row."""
    node = Node(
        site_id=site_id,
        node_type_id=node_type_id,
        rack_id=rack_id,
        leaf_switch_id=leaf_switch_id,
        hostname=hostname,
        serial=serial,
        bmc_address=bmc_address,
        status=status,
    )
    node.full_clean()
    port_budget_check(
        leaf_switch_id=leaf_switch_id, node_type_id=node_type_id, exclude_node_id=None
    )
    node.save()
    lifecycle.record_creation([node], actor=actor, reason=reason or Text("Added to the inventory."))
    return node


# Fields an operator may edit on an existing node (status moves through the lifecycle).
NODE_EDITABLE = ("hostname", "serial", "bmc_address", "site", "rack", "leaf_switch", "node_type")
# Changing these under an active booking would change what the customer was sold.
NODE_BOOKING_BOUND = ("site", "leaf_switch", "node_type")


@transaction.atomic
def node_update(
    *,
    node_id: int,
    changes: dict[str, object],
    status: str | None = None,
    actor: Actor = None,
    reason: str,
) -> Node:
    """Edit a node's fields (admin form, CSV import, API), validated as a whole.

    Refuses to move a node that is booked (an active hold or firm reservation that has
    not ended) to another site, leaf switch or node type: placement and price were based
    on them. A changed ``status`` moves through the node lifecycle with an event.
    """
    node = Node.objects.select_for_update().get(pk=node_id)
    unknown = set(changes) - set(NODE_EDITABLE) - {"notes"}
    if unknown:
        raise DomainError(
            _("These node fields cannot be edited: %(fields)s.")
            % {"fields": ", ".join(sorted(unknown))}
        )
    changed = [
        name
        for name, value in changes.items()
        if getattr(node, f"{name}_id" if name in (*NODE_BOOKING_BOUND, "rack") else name)
        != (getattr(value, "pk", value))
    ]
    bound = [name for name in changed if name in NODE_BOOKING_BOUND]
    if bound:
        booking = (
            Reservation.objects.filter(
                node=node, status__in=ACTIVE_RESERVATION_STATUSES, end_at__gt=timezone.now()
            )
            .order_by("start_at")
            .first()
        )
        if booking is not None:
            labels = {f.name: str(f.verbose_name) for f in Node._meta.fields}
            raise DomainError(
                _(
                    "Node %(hostname)s is booked (%(owner)s until %(end)s), so its "
                    "%(fields)s cannot change; move the booking to another node first."
                )
                % {
                    "hostname": node.hostname,
                    "owner": booking.owner_ref,
                    "end": booking.end_at.strftime("%Y-%m-%d"),
                    "fields": ", ".join(labels[name] for name in bound),
                }
            )
    for name in changed:
        setattr(node, name, changes[name])
    if changed:
        try:
            node.full_clean(exclude=["status"])
        except ValidationError as exc:
            raise DomainError(" ".join(exc.messages)) from exc
        if {"leaf_switch", "node_type"} & set(changed):
            port_budget_check(
                leaf_switch_id=node.leaf_switch_id,
                node_type_id=node.node_type_id,
                exclude_node_id=node.pk,
            )
        node.save(update_fields=changed)
    if status is not None and status != node.status:
        node = node_transition(node=node, to_status=status, actor=actor, reason=reason)
    return node


@transaction.atomic
def node_bulk_create(*, nodes: Sequence[Node], actor: Actor = None, reason: str) -> list[Node]:
    """Add many nodes at once (demo data, large imports): each is validated with
    ``clean()``; uniqueness is left to the database's constraints."""
    for node in nodes:
        node.clean_fields(exclude=["site", "node_type", "rack", "leaf_switch"])
        node.clean()
    created = Node.objects.bulk_create(nodes)
    if any(n.pk is None for n in created):
        hostnames = [n.hostname for n in nodes]
        created = list(Node.objects.filter(hostname__in=hostnames))
    lifecycle.record_creation(created, actor=actor, reason=reason)
    return created


# --- Maintenance windows ----------------------------------------------------------------


@transaction.atomic
def maintenance_window_create(
    *, node: Node, start_at: datetime, end_at: datetime, reason: str, actor: Actor = None
) -> MaintenanceWindow:
    """Plan downtime for a node; refused if an active booking overlaps it."""
    _check_range(start_at, end_at)
    Node.objects.select_for_update().get(pk=node.pk)
    clash = (
        Reservation.objects.filter(
            node=node,
            status__in=ACTIVE_RESERVATION_STATUSES,
            start_at__lt=end_at,
            end_at__gt=start_at,
        )
        .order_by("start_at")
        .first()
    )
    if clash is not None:
        raise DoubleBooking(
            _(
                "Node %(hostname)s is booked from %(start)s to %(end)s (%(owner)s); "
                "move or swap that booking before planning maintenance over it."
            )
            % {
                "hostname": node.hostname,
                "start": clash.start_at.isoformat(),
                "end": clash.end_at.isoformat(),
                "owner": clash.owner_ref,
            }
        )
    window = MaintenanceWindow(
        node=node, start_at=start_at, end_at=end_at, reason=reason, created_by=actor
    )
    window.full_clean()
    window.save()
    return window


# --- Maintenance plans ------------------------------------------------------------------

# The task (portal.operations) that tells the customers a plan touches; named, not imported.
MAINTENANCE_NOTIFY_TASK = "portal.operations.tasks.maintenance_notify_task"


def _clash_text(clashes: Sequence[Reservation]) -> str:
    return "; ".join(
        _("%(hostname)s is booked for %(owner)s from %(start)s to %(end)s")
        % {
            "hostname": r.node.hostname,
            "owner": r.owner_ref,
            "start": r.start_at.isoformat(),
            "end": r.end_at.isoformat(),
        }
        for r in clashes
    )


@transaction.atomic
def maintenance_plan_create(
    *,
    title: str,
    scope: str,
    start_at: datetime,
    end_at: datetime,
    node_ids: Sequence[int] = (),
    rack: Rack | None = None,
    switch: Switch | None = None,
    notice_days: int | None = None,
    override_reason: str = "",
    actor: Actor = None,
    now: datetime | None = None,
) -> MaintenancePlan:
    """Plan maintenance of some nodes, a rack or a switch over ``[start_at, end_at)``: one
    window per node, the nodes out of every availability search meanwhile.

    Refused over an active booking (hold or firm, held range) unless ``override_reason``
    says why; such a plan is unplanned downtime for the SLA credits. Customers are told
    ``notice_days`` before the start (the portal's task, enqueued now when that is past,
    else by the beat sweep).
    """
    now = now or timezone.now()
    _check_range(start_at, end_at)
    title = (title or "").strip()
    override_reason = (override_reason or "").strip()
    if not title:
        raise DomainError(_("Say what work the maintenance is for."))
    if end_at <= now:
        raise DomainError(_("The window is over already; choose one that ends in the future."))
    notice = settings.PORTAL_MAINTENANCE_NOTICE_DAYS if notice_days is None else notice_days
    if notice < 0:
        raise DomainError(_("The notice cannot be negative."))
    if scope == MaintenanceScope.RACK and rack is None:
        raise DomainError(_("Choose the rack."))
    if scope == MaintenanceScope.SWITCH and switch is None:
        raise DomainError(_("Choose the switch."))
    found = selectors.maintenance_scope_nodes(
        scope=scope, node_ids=node_ids, rack=rack, switch=switch
    )
    if not found:
        raise DomainError(_("No node is in this scope: choose at least one node."))
    sites = {n.site_id for n in found}
    if len(sites) > 1:
        raise DomainError(_("Plan maintenance one site at a time."))
    locked = list(Node.objects.select_for_update().filter(pk__in=[n.pk for n in found]))
    ids = [n.pk for n in locked]
    clashes = selectors.maintenance_clashes(node_ids=ids, start_at=start_at, end_at=end_at)
    if clashes and not override_reason:
        raise DoubleBooking(
            _(
                "The window covers active bookings: %(clashes)s. Move them first, or work "
                "over them with a reason (it then counts as unplanned downtime for SLA "
                "credits)."
            )
            % {"clashes": _clash_text(clashes)}
        )
    overlapping = (
        MaintenanceWindow.objects.filter(node_id__in=ids, start_at__lt=end_at, end_at__gt=start_at)
        .select_related("node")
        .order_by("node__hostname")
        .first()
    )
    if overlapping is not None:
        raise DomainError(
            _("%(hostname)s is already in maintenance from %(start)s to %(end)s.")
            % {
                "hostname": overlapping.node.hostname,
                "start": overlapping.start_at.isoformat(),
                "end": overlapping.end_at.isoformat(),
            }
        )
    plan = MaintenancePlan(
        site_id=sites.pop(),
        title=title,
        scope=scope,
        rack=rack if scope == MaintenanceScope.RACK else None,
        switch=switch if scope == MaintenanceScope.SWITCH else None,
        start_at=start_at,
        end_at=end_at,
        notice_days=notice,
        notify_at=start_at - timedelta(days=notice),
        override_reason=override_reason if clashes else "",
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    try:
        plan.full_clean()
    except ValidationError as exc:
        raise DomainError(" ".join(exc.messages)) from exc
    plan.save()
    MaintenanceWindow.objects.bulk_create(
        [
            MaintenanceWindow(
                node_id=pk,
                plan=plan,
                start_at=start_at,
                end_at=end_at,
                reason=title[:200],
                created_by=plan.created_by,
            )
            for pk in sorted(ids)
        ]
    )
    reason = (
        Text(
            "Planned over %(n)s active bookings: %(why)s",
            n=len({r.owner_ref for r in clashes}),
            why=override_reason,
        )
        if clashes
        else Text("Planned: %(title)s.", title=title)
    )
    lifecycle.record_creation([plan], actor=actor, reason=reason)
    if plan.notify_at <= now:
        jobs.enqueue(MAINTENANCE_NOTIFY_TASK, plan.pk)
    return plan


def maintenance_plan_announce(
    *, plan: MaintenancePlan, now: datetime | None = None
) -> MaintenancePlan:
    """Record that the customers were told (the notifying task calls it, in its
    transaction, after writing the notices)."""
    now = now or timezone.now()
    return lifecycle.transition(
        plan,
        to=MaintenanceStatus.ANNOUNCED,
        reason=Text("Customers told."),
        updates={"announced_at": now},
    )


def _cut_windows(plan: MaintenancePlan, now: datetime) -> None:
    """Windows not begun are dropped; a running one ends now (the nodes are free again)."""
    MaintenanceWindow.objects.filter(plan=plan, start_at__gte=now).delete()
    MaintenanceWindow.objects.filter(plan=plan, end_at__gt=now).update(end_at=now)


@transaction.atomic
def maintenance_plan_cancel(
    *, plan: MaintenancePlan, actor: Actor = None, reason: str, now: datetime | None = None
) -> MaintenancePlan:
    """Call the work off: the nodes are free again from now; who and why are recorded."""
    if not (reason or "").strip():
        raise DomainError(_("Say why the maintenance is called off."))
    now = now or timezone.now()
    moved = lifecycle.transition(plan, to=MaintenanceStatus.CANCELLED, actor=actor, reason=reason)
    _cut_windows(moved, now)
    return moved


@transaction.atomic
def maintenance_plan_complete(
    *, plan: MaintenancePlan, actor: Actor = None, reason: str = "", now: datetime | None = None
) -> MaintenancePlan:
    """The work is done (early, or at the end of its window)."""
    now = now or timezone.now()
    if plan.status == MaintenanceStatus.SCHEDULED:
        raise DomainError(_("The customers have not been told yet: cancel it instead."))
    moved = lifecycle.transition(
        plan,
        to=MaintenanceStatus.COMPLETED,
        actor=actor,
        reason=reason or Text("The work is done."),
    )
    _cut_windows(moved, now)
    return moved


def maintenance_plans_due(*, now: datetime | None = None) -> tuple[list[int], int]:
    """Beat: the open plans whose customers are to be told now (their ids), and the
    announced plans whose window has ended, completed. Safe to run twice."""
    now = now or timezone.now()
    due = list(
        MaintenancePlan.objects.filter(
            status=MaintenanceStatus.SCHEDULED, notify_at__lte=now
        ).values_list("pk", flat=True)
    )
    ended = 0
    for plan in MaintenancePlan.objects.filter(status=MaintenanceStatus.ANNOUNCED, end_at__lte=now):
        maintenance_plan_complete(plan=plan, reason=Text("The window ended."), now=now)
        ended += 1
    return due, ended


# --- Reservations -----------------------------------------------------------------------


def _conflicts(
    node_ids: Sequence[int],
    start_at: datetime,
    end_at: datetime,
    *,
    ignore: Collection[int] = (),
) -> list[str]:
    """Human-readable reasons why some of the nodes cannot be held over ``[start_at,
    end_at)`` (a held range: the rental with its lead and cleaning time)."""
    reasons: list[str] = []
    clashes = (
        Reservation.objects.filter(
            node_id__in=node_ids,
            status__in=ACTIVE_RESERVATION_STATUSES,
            held_from__lt=end_at,
            held_until__gt=start_at,
        )
        .exclude(pk__in=list(ignore))
        .select_related("node")
        .order_by("node__hostname", "start_at")
    )
    for r in clashes:
        reasons.append(
            _(
                "%(hostname)s is already booked from %(start)s to %(end)s (held from "
                "%(held_from)s to %(held_until)s for provisioning and cleaning)"
            )
            % {
                "hostname": r.node.hostname,
                "start": r.start_at.isoformat(),
                "end": r.end_at.isoformat(),
                "held_from": r.held_from.isoformat(),
                "held_until": r.held_until.isoformat(),
            }
        )
    windows = (
        MaintenanceWindow.objects.filter(
            node_id__in=node_ids, start_at__lt=end_at, end_at__gt=start_at
        )
        .select_related("node")
        .order_by("node__hostname", "start_at")
    )
    for w in windows:
        reasons.append(
            _("%(hostname)s is in maintenance from %(start)s to %(end)s")
            % {
                "hostname": w.node.hostname,
                "start": w.start_at.isoformat(),
                "end": w.end_at.isoformat(),
            }
        )
    return reasons


# pg_advisory_xact_lock's first key: placements (the second is the site and node type).
PLACEMENT_LOCK_CLASS = 0x47505550  # "GPUP"


def placement_lock(*, site_id: int, node_type_ids: Collection[int]) -> None:
    """Place one booking at a time per site and node type, until the caller's transaction
    ends: a search that runs while another placement of the same nodes is not committed
    yet would pick the same "best" nodes, lose at the exclusion constraint and refuse a
    customer while other nodes are free (seen with six customers quoting at once). Locks
    are taken in one order (no deadlock between two placements of several types).
    PostgreSQL only; SQLite (the embedded default) writes one transaction at a time."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("placement_lock needs the caller's transaction")
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for type_id in sorted(set(node_type_ids)):
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)",
                [PLACEMENT_LOCK_CLASS, (site_id << 16) ^ type_id],
            )


def reservation_hold(
    *,
    nodes: Sequence[Node],
    start_at: datetime,
    end_at: datetime,
    owner_ref: str,
    expires_at: datetime | None = None,
    firm: bool = False,
    actor: Actor = None,
    group: uuid.UUID | None = None,
    continues: str = "",
) -> list[Reservation]:
    """Book every node over ``[start_at, end_at)``, all or none.

    Each node is held from the site's lead time before the start to its cleaning time
    after the end (``Site.held_range``). ``continues`` names the owner of bookings this
    one continues without a break (a renewal on the same nodes): where such a booking of
    a node ends at ``start_at``, neither its cleaning nor this one's lead time is needed,
    so its held range ends at its end and this one's begins at the start.

    A hold (the default) needs ``expires_at``; ``firm=True`` books for good. The check
    here gives a clear message; PostgreSQL's exclusion constraint is the last word when
    two processes race past it.
    """
    _check_range(start_at, end_at)
    if not nodes:
        raise DomainError(_("Choose at least one node to book."))
    if not firm:
        if expires_at is None:
            raise DomainError(_("A hold needs an expiry time."))
        if timezone.is_naive(expires_at):
            raise DomainError(_("The hold expiry needs a time zone."))
    status = ReservationStatus.FIRM if firm else ReservationStatus.HOLD
    node_ids = sorted({n.pk for n in nodes})
    group = group or uuid.uuid4()
    try:
        with transaction.atomic():
            locked = list(Node.objects.select_for_update().filter(pk__in=node_ids).order_by("pk"))
            if len(locked) != len(node_ids):
                raise DomainError(_("Some of the chosen nodes no longer exist."))
            unbookable = [n for n in locked if n.status in NODE_UNBOOKABLE_STATUSES]
            if unbookable:
                raise DoubleBooking(
                    _("Cannot book %(nodes)s: not in service (%(statuses)s).")
                    % {
                        "nodes": ", ".join(n.hostname for n in unbookable),
                        "statuses": ", ".join(n.get_status_display() for n in unbookable),
                    }
                )
            ranges = _held_ranges(locked, start_at, end_at)
            before = _continued(node_ids, start_at, continues)
            for node_id in before:
                ranges[node_id] = (start_at, ranges[node_id][1])
            reasons = [
                reason
                for n in locked
                for reason in _conflicts(
                    [n.pk], *ranges[n.pk], ignore=[r.pk for r in before.get(n.pk, [])]
                )
            ]
            if reasons:
                raise DoubleBooking(
                    _("These nodes are not free for the whole period: %(reasons)s.")
                    % {"reasons": "; ".join(reasons)}
                )
            for previous in before.values():  # cleaning moves to the end of this one
                Reservation.objects.filter(pk__in=[r.pk for r in previous]).update(
                    held_until=F("end_at")
                )
            created = Reservation.objects.bulk_create(
                [
                    Reservation(
                        node=n,
                        start_at=start_at,
                        end_at=end_at,
                        held_from=ranges[n.pk][0],
                        held_until=ranges[n.pk][1],
                        status=status,
                        expires_at=None if firm else expires_at,
                        group=group,
                        owner_ref=owner_ref,
                        created_by=actor,
                    )
                    for n in locked
                ]
            )
            if any(r.pk is None for r in created):  # backends that return no ids
                created = list(Reservation.objects.filter(group=group).order_by("node_id"))
            lifecycle.record_creation(
                created, actor=actor, reason=Text("Booked for %(owner)s.", owner=owner_ref)
            )
            return created
    except IntegrityError as exc:
        if EXCLUSION_CONSTRAINT in str(exc):
            raise DoubleBooking(
                _("Another booking took some of these nodes a moment ago; choose again.")
            ) from exc
        raise


def _held_ranges(
    nodes: Sequence[Node], start_at: datetime, end_at: datetime
) -> dict[int, tuple[datetime, datetime]]:
    sites = {s.pk: s for s in Site.objects.filter(pk__in={n.site_id for n in nodes})}
    return {n.pk: sites[n.site_id].held_range(start_at, end_at) for n in nodes}


def _continued(
    node_ids: Sequence[int], start_at: datetime, owner_ref: str
) -> dict[int, list[Reservation]]:
    """The active bookings of ``owner_ref`` that end where a continuing booking starts."""
    if not owner_ref:
        return {}
    found: dict[int, list[Reservation]] = {}
    for r in Reservation.objects.select_for_update().filter(
        node_id__in=node_ids,
        status__in=ACTIVE_RESERVATION_STATUSES,
        owner_ref=owner_ref,
        end_at=start_at,
    ):
        found.setdefault(r.node_id, []).append(r)
    return found


def _restore_cleaning(gone: Sequence[Reservation]) -> None:
    """Bookings that ``gone`` continued get their cleaning time back (up to the next
    active booking of the node) once ``gone`` no longer holds the node."""
    for r in gone:
        previous = list(
            Reservation.objects.select_for_update()
            .filter(
                node_id=r.node_id,
                status__in=ACTIVE_RESERVATION_STATUSES,
                end_at=r.start_at,
                held_until=r.start_at,
            )
            .select_related("node__site")
        )
        for p in previous:
            until = p.node.site.held_range(p.start_at, p.end_at)[1]
            nxt = (
                Reservation.objects.filter(
                    node_id=p.node_id,
                    status__in=ACTIVE_RESERVATION_STATUSES,
                    held_from__gte=p.end_at,
                )
                .exclude(pk=r.pk)
                .order_by("held_from")
                .values_list("held_from", flat=True)
                .first()
            )
            if nxt is not None:
                until = min(until, nxt)
            Reservation.objects.filter(pk=p.pk).update(held_until=max(until, p.end_at))


def reservation_transition(
    *, reservation: Reservation, to_status: str, actor: Actor = None, reason: str
) -> Reservation:
    updates = {} if to_status == ReservationStatus.HOLD else {"expires_at": None}
    moved = lifecycle.transition(
        reservation, to=to_status, actor=actor, reason=reason, updates=updates
    )
    if to_status in GONE_STATUSES:
        _restore_cleaning([moved])
    return moved


def _bulk_transition(
    reservations: Sequence[Reservation], *, to_status: str, actor: Actor, reason: str
) -> list[Reservation]:
    """Move reservations the caller has locked (with their nodes read) together: one
    insert of events and one update, whatever the number of nodes."""
    updates = {} if to_status == ReservationStatus.HOLD else {"expires_at": None}
    moved = lifecycle.transition_many(
        reservations, to=to_status, actor=actor, reason=reason, updates=updates, locked=True
    )
    if to_status in GONE_STATUSES:
        _restore_cleaning(moved)
    return moved


def _group_transition(
    *, group: uuid.UUID, to_status: str, actor: Actor, reason: str
) -> list[Reservation]:
    reservations = list(
        Reservation.objects.select_for_update()
        .filter(group=group)
        .select_related("node")
        .order_by("node_id")
    )
    if not reservations:
        raise DomainError(_("No booking with this reference exists."))
    return _bulk_transition(reservations, to_status=to_status, actor=actor, reason=reason)


@transaction.atomic
def reservation_group_confirm(
    *, group: uuid.UUID, actor: Actor = None, reason: str = ""
) -> list[Reservation]:
    """Turn every hold of a booking into a firm reservation, or none of them."""
    return _group_transition(
        group=group,
        to_status=ReservationStatus.FIRM,
        actor=actor,
        reason=reason or Text("Confirmed."),
    )


@transaction.atomic
def reservation_group_release(
    *, group: uuid.UUID, actor: Actor = None, reason: str
) -> list[Reservation]:
    """Give the nodes of a booking back; already ended parts stay as they are."""
    reservations = list(
        Reservation.objects.select_for_update()
        .filter(group=group, status__in=ACTIVE_RESERVATION_STATUSES)
        .select_related("node")
        .order_by("node_id")
    )
    return _bulk_transition(
        reservations, to_status=ReservationStatus.RELEASED, actor=actor, reason=reason
    )


@transaction.atomic
def reservation_group_extend(
    *,
    group: uuid.UUID,
    expires_at: datetime,
    owner_ref: str,
    actor: Actor = None,
    reason: str,
) -> list[Reservation]:
    """Hand a booking's holds to a new owner with a new expiry (a quote's holds become an
    order's, held until its payment deadline). Every part must still be held."""
    if timezone.is_naive(expires_at):
        raise DomainError(_("The hold expiry needs a time zone."))
    held = list(
        Reservation.objects.select_for_update()
        .filter(group=group)
        .select_related("node")
        .order_by("node_id")
    )
    lost = [r.node.hostname for r in held if r.status != ReservationStatus.HOLD]
    if lost or not held:
        raise DoubleBooking(
            _("These nodes are no longer held: %(nodes)s.") % {"nodes": ", ".join(lost) or "—"}
        )
    lifecycle.record_note(held, actor=actor, reason=reason)
    Reservation.objects.filter(pk__in=[r.pk for r in held]).update(
        expires_at=expires_at, owner_ref=owner_ref
    )
    for r in held:
        r.expires_at, r.owner_ref = expires_at, owner_ref
    return held


def reservation_swap(
    *,
    reservation: Reservation,
    new_node: Node,
    actor: Actor = None,
    reason: str,
    now: datetime | None = None,
) -> Reservation:
    """Move the rest of an active booking to another node (a spare for a failed one).

    The old booking is released from now on; the new node is booked from now (or from the
    booking's start, if later) to its end, in the same group and for the same owner. The
    check here gives a clear message; PostgreSQL's exclusion constraint stays the last word.
    """
    now = now or timezone.now()
    try:
        with transaction.atomic():
            current = (
                Reservation.objects.select_for_update(of=("self",))
                .select_related("node")
                .get(pk=reservation.pk)
            )
            if current.status not in ACTIVE_RESERVATION_STATUSES:
                raise DomainError(_("This booking is no longer active."))
            spare = Node.objects.select_for_update().get(pk=new_node.pk)
            if spare.pk == current.node_id:
                raise DomainError(_("A node cannot replace itself."))
            if spare.status in NODE_UNBOOKABLE_STATUSES:
                raise DoubleBooking(
                    _("Cannot book %(node)s: not in service (%(status)s).")
                    % {"node": spare.hostname, "status": spare.get_status_display()}
                )
            start_at = max(now, current.start_at)
            if start_at >= current.end_at:
                raise DomainError(_("The booking is over: nothing left to move."))
            held_from, held_until = _held_ranges([spare], start_at, current.end_at)[spare.pk]
            held_from = min(max(held_from, now), start_at)  # the swap provisions from now
            reasons = _conflicts([spare.pk], held_from, held_until)
            if reasons:
                raise DoubleBooking(
                    _("These nodes are not free for the whole period: %(reasons)s.")
                    % {"reasons": "; ".join(reasons)}
                )
            lifecycle.transition(
                current,
                to=ReservationStatus.RELEASED,
                actor=actor,
                reason=reason,
                updates={"expires_at": None},
                locked=True,
            )
            created = Reservation.objects.create(
                node=spare,
                start_at=start_at,
                end_at=current.end_at,
                held_from=held_from,
                held_until=held_until,
                status=ReservationStatus.FIRM
                if reservation.status == ReservationStatus.FIRM
                else ReservationStatus.HOLD,
                expires_at=None
                if reservation.status == ReservationStatus.FIRM
                else current.expires_at,
                group=current.group,
                owner_ref=current.owner_ref,
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
            lifecycle.record_creation([created], actor=actor, reason=reason)
            return created
    except IntegrityError as exc:
        if EXCLUSION_CONSTRAINT in str(exc):
            raise DoubleBooking(
                _("Another booking took this spare a moment ago; choose again.")
            ) from exc
        raise


def reservation_expire_holds(*, now: datetime | None = None) -> int:
    """Expire every hold whose time is up, freeing its nodes. Safe to run twice."""
    now = now or timezone.now()
    expired = 0
    with transaction.atomic():
        due = list(
            Reservation.objects.select_for_update(skip_locked=True)
            .filter(status=ReservationStatus.HOLD, expires_at__lte=now)
            .order_by("pk")
        )
        if not due:
            return 0
        gone = lifecycle.transition_many(
            due,
            to=ReservationStatus.EXPIRED,
            reason=lambda r: Text("The hold expired at %(at)s.", at=r.expires_at),
            updates={"expires_at": None},
        )
        _restore_cleaning(gone)
        expired = len(gone)
    return expired
