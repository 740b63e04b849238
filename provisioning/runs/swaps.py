"""Swapping a failed node for a spare (chosen by ``spares.choose_spare``) and booking the
spare in its place; staff send a node to swap."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import Order
from core import lifecycle
from core.errors import DomainError
from core.texts import Text, clip
from core.types import Actor
from inventory import services as inventory_services
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    MaintenanceWindow,
    Node,
    NodeStatus,
    Reservation,
)
from provisioning.models import NodeStep, NodeSwap, ProvisioningRun, RunNode, RunNodeState
from provisioning.runs.failure import run_fail
from provisioning.runs.plan import deadline, steps_for
from provisioning.runs.records import (
    active_run_node,
    create_steps,
    run_back_to_running,
    run_launch,
    steps_skip,
)
from provisioning.runs.spares import SpareCandidate, choose_spare


def spare_candidates(
    *, order: Order, failed: Node, exclude: list[int], start_at: datetime
) -> list[SpareCandidate]:
    """Free nodes of the same type at the order's site for the rest of its period."""
    busy = Reservation.objects.filter(  # over the held ranges: lead time and cleaning
        node=OuterRef("pk"),
        status__in=ACTIVE_RESERVATION_STATUSES,
        held_from__lt=order.end_at,
        held_until__gt=start_at,
    )
    maintained = MaintenanceWindow.objects.filter(
        node=OuterRef("pk"), start_at__lt=order.end_at, end_at__gt=start_at
    )
    rows = (
        Node.objects.filter(
            site_id=failed.site_id, node_type_id=failed.node_type_id, status=NodeStatus.AVAILABLE
        )
        .exclude(pk__in=exclude)
        .filter(~Exists(busy), ~Exists(maintained))
        .values_list("pk", "hostname", "leaf_switch_id", "rack_id")
    )
    return [SpareCandidate(*row) for row in rows]


def node_swap(
    *, run: ProvisioningRun, run_node: RunNode, reason: str, actor: Actor = None
) -> RunNode | None:
    """The failed node goes to faulty with the reason; a spare takes its slot (booked
    through ``inventory_services.reservation_swap``). ``None`` when no spare is free or the
    slot used up its swaps. Safe to call twice: a slot already swapped returns its spare."""
    now = timezone.now()
    for _attempt in range(3):  # a spare taken meanwhile by another booking: choose again
        with transaction.atomic():
            current = RunNode.objects.select_for_update().select_related("node").get(pk=run_node.pk)
            if current.state != RunNodeState.ACTIVE:
                return active_run_node(run, current.slot)
            order = Order.objects.get(pk=run.order_id)
            failed = Node.objects.get(pk=current.node_id)
            # One spare choice at a time per site and node type, as a booking's placement
            # and day two's replacements: two swaps at once never pick the same node.
            inventory_services.placement_lock(
                site_id=failed.site_id, node_type_ids=[failed.node_type_id]
            )
            if failed.status not in (NodeStatus.FAULTY, NodeStatus.RETIRED):
                inventory_services.node_mark_faulty(
                    node=failed, actor=actor, reason=clip(reason, 1000)
                )
            steps_skip(
                NodeStep.objects.filter(run=run, node=failed), Text("Node swapped out."), actor
            )
            used = NodeSwap.objects.filter(
                run=run,
                failed_node__in=RunNode.objects.filter(run=run, slot=current.slot).values("node"),
            ).count()
            run_nodes = list(RunNode.objects.filter(run=run).select_related("node"))
            cluster_leaves = {
                rn.node.leaf_switch_id for rn in run_nodes if rn.state == RunNodeState.ACTIVE
            }
            spare = None
            if used < settings.PORTAL_PROVISIONING_MAX_SWAPS_PER_NODE:
                spare = choose_spare(
                    spare_candidates(
                        order=order,
                        failed=failed,
                        exclude=[rn.node_id for rn in run_nodes],
                        start_at=max(now, order.start_at),
                    ),
                    failed_leaf_id=failed.leaf_switch_id,
                    failed_rack_id=failed.rack_id,
                    cluster_leaf_ids=cluster_leaves,
                )
            if spare is None:
                NodeSwap.objects.create(
                    order=order,
                    run=run,
                    failed_node=failed,
                    reason=reason,
                    failed_at=now,
                    requested_by=actor if getattr(actor, "is_authenticated", False) else None,
                )
                RunNode.objects.filter(pk=current.pk).update(state=RunNodeState.SWAPPED_OUT)
                return None
            reservation = (
                Reservation.objects.filter(
                    node=failed,
                    group=order.reservation_group,
                    status__in=ACTIVE_RESERVATION_STATUSES,
                )
                .order_by("start_at")
                .first()
            )
            spare_node = Node.objects.get(pk=spare.node_id)
            try:
                with transaction.atomic():
                    if reservation is not None:
                        inventory_services.reservation_swap(
                            reservation=reservation,
                            new_node=spare_node,
                            actor=actor,
                            reason=Text(
                                "%(failed)s replaced by %(spare)s: %(why)s",
                                failed=failed.hostname,
                                spare=spare_node.hostname,
                                why=clip(reason, 500),
                            ),
                        )
            except DomainError:
                continue  # taken meanwhile (the constraint's word): choose again
            RunNode.objects.filter(pk=current.pk).update(state=RunNodeState.SWAPPED_OUT)
            replacement = RunNode.objects.create(run=run, node=spare_node, slot=current.slot)
            create_steps(run, spare_node, steps_for(run.kind))
            NodeSwap.objects.create(
                order=order,
                run=run,
                failed_node=failed,
                spare_node=spare_node,
                reason=reason,
                failed_at=now,
                requested_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
            locked_run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
            lifecycle.record_note(
                [locked_run],
                actor=actor,
                reason=Text(
                    "%(failed)s swapped for %(spare)s: %(why)s",
                    failed=failed.hostname,
                    spare=spare_node.hostname,
                    why=clip(reason, 500),
                ),
            )
            ProvisioningRun.objects.filter(pk=run.pk).update(
                deadline_at=deadline(now),
                message=_("%(failed)s swapped for %(spare)s.")
                % {"failed": failed.hostname, "spare": spare_node.hostname},
            )
            return replacement
    return None


def node_send_to_swap(
    *, run: ProvisioningRun, node_id: int, actor: Actor, reason: str
) -> RunNode | None:
    """Staff: take a node out of the run and put a spare in its slot; relaunch."""
    if not reason.strip():
        raise DomainError(_("Say why the node is swapped."))
    run_node = RunNode.objects.filter(run=run, node_id=node_id, state=RunNodeState.ACTIVE).first()
    if run_node is None:
        raise DomainError(_("This node is not active in the run."))
    if not run.is_active:
        raise DomainError(_("The run is over."))
    with transaction.atomic():
        steps_skip(NodeStep.objects.filter(run=run, node_id=node_id), _("Node swapped out."), actor)
    spare = node_swap(run=run, run_node=run_node, reason=reason, actor=actor)
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
        if spare is None:
            run_fail(
                run=run,
                reason=Text("No spare is free for %(node)s.", node=run_node.node.hostname),
                actor=actor,
            )
        else:
            run_back_to_running(run, actor=actor)
            run_launch(run)
    return spare
