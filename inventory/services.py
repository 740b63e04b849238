"""Every write to the inventory. Services own their transactions and lock what they move."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from core import lifecycle
from core.errors import DomainError, DoubleBooking
from core.texts import Text
from core.types import Actor
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    NODE_UNBOOKABLE_STATUSES,
    MaintenanceWindow,
    Node,
    NodeStatus,
    NodeType,
    Reservation,
    ReservationStatus,
    Switch,
    SwitchRole,
)

EXCLUSION_CONSTRAINT = "reservation_no_overlap"


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


# --- Reservations -----------------------------------------------------------------------


def _conflicts(node_ids: Sequence[int], start_at: datetime, end_at: datetime) -> list[str]:
    """Human-readable reasons why some of the nodes cannot be booked over the range."""
    reasons: list[str] = []
    clashes = (
        Reservation.objects.filter(
            node_id__in=node_ids,
            status__in=ACTIVE_RESERVATION_STATUSES,
            start_at__lt=end_at,
            end_at__gt=start_at,
        )
        .select_related("node")
        .order_by("node__hostname", "start_at")
    )
    for r in clashes:
        reasons.append(
            _("%(hostname)s is already booked from %(start)s to %(end)s")
            % {
                "hostname": r.node.hostname,
                "start": r.start_at.isoformat(),
                "end": r.end_at.isoformat(),
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
) -> list[Reservation]:
    """Book every node over ``[start_at, end_at)``, all or none.

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
            reasons = _conflicts(node_ids, start_at, end_at)
            if reasons:
                raise DoubleBooking(
                    _("These nodes are not free for the whole period: %(reasons)s.")
                    % {"reasons": "; ".join(reasons)}
                )
            created = Reservation.objects.bulk_create(
                [
                    Reservation(
                        node=n,
                        start_at=start_at,
                        end_at=end_at,
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


def reservation_transition(
    *, reservation: Reservation, to_status: str, actor: Actor = None, reason: str
) -> Reservation:
    updates = {} if to_status == ReservationStatus.HOLD else {"expires_at": None}
    return lifecycle.transition(
        reservation, to=to_status, actor=actor, reason=reason, updates=updates
    )


def _bulk_transition(
    reservations: Sequence[Reservation], *, to_status: str, actor: Actor, reason: str
) -> list[Reservation]:
    """Move reservations the caller has locked (with their nodes read) together: one
    insert of events and one update, whatever the number of nodes."""
    updates = {} if to_status == ReservationStatus.HOLD else {"expires_at": None}
    return lifecycle.transition_many(
        reservations, to=to_status, actor=actor, reason=reason, updates=updates, locked=True
    )


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
            reasons = _conflicts([spare.pk], start_at, current.end_at)
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
        expired = len(
            lifecycle.transition_many(
                due,
                to=ReservationStatus.EXPIRED,
                reason=lambda r: Text("The hold expired at %(at)s.", at=r.expires_at),
                updates={"expires_at": None},
            )
        )
    return expired
