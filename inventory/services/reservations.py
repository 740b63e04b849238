"""Reservation writes: holding nodes over a rental (all or none, with lead and cleaning
time), confirming, releasing, handing over and extending a booking, swapping a node for a
spare, and the beat sweep that expires holds. PostgreSQL's exclusion constraint
``reservation_no_overlap`` is the last word when two processes race past the check here."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from core import lifecycle
from core.errors import DomainError, DoubleBooking
from core.texts import Text
from core.types import Actor
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    NODE_UNBOOKABLE_STATUSES,
    MaintenanceWindow,
    Node,
    Reservation,
    ReservationStatus,
    Site,
)

__all__ = [
    "EXCLUSION_CONSTRAINT",
    "GONE_STATUSES",
    "reservation_expire_holds",
    "reservation_group_confirm",
    "reservation_group_extend",
    "reservation_group_release",
    "reservation_hold",
    "reservation_swap",
    "reservation_transition",
]


EXCLUSION_CONSTRAINT = "reservation_no_overlap"
# A booking in one of these no longer holds its node.
GONE_STATUSES = frozenset({ReservationStatus.RELEASED, ReservationStatus.EXPIRED})


def _check_range(start_at: datetime, end_at: datetime) -> None:
    if timezone.is_naive(start_at) or timezone.is_naive(end_at):
        raise DomainError(_("Start and end need a time zone."))
    if end_at <= start_at:
        raise DomainError(_("The end must be after the start."))


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
