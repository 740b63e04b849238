"""Maintenance writes: a window of downtime on one node, and maintenance plans (work over
some nodes, a rack or a switch) from planning through announcing to completion or
cancellation, with the beat sweep that finds the plans due."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from core import jobs, lifecycle
from core.errors import DomainError, DoubleBooking
from core.texts import Text
from core.types import Actor
from inventory import selectors
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    MaintenancePlan,
    MaintenanceScope,
    MaintenanceStatus,
    MaintenanceWindow,
    Node,
    Rack,
    Reservation,
    Switch,
)
from inventory.services.reservations import _check_range

__all__ = [
    "MAINTENANCE_NOTIFY_TASK",
    "maintenance_plan_announce",
    "maintenance_plan_cancel",
    "maintenance_plan_complete",
    "maintenance_plan_create",
    "maintenance_plans_due",
    "maintenance_window_create",
]


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
