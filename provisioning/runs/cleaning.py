"""Cleaning the nodes an order used when it ends (disk secure erase, BIOS reset, check):
a node that fails goes to faulty, the others become available again."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import Order, OrderStatus
from billing.orders.selectors import order_nodes
from billing.orders.services import order_transition
from core import lifecycle
from core.texts import Text, clip
from core.types import Actor
from inventory import services as inventory_services
from inventory.models import Node, NodeStatus
from provisioning.models import (
    NodeStep,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
    StepStatus,
)
from provisioning.models.runs import ACTIVE_RUN_STATUSES
from provisioning.runs.create import run_create, run_start
from provisioning.runs.fabric import fabric_release
from provisioning.runs.failure import run_cancel
from provisioning.runs.records import steps_skip


def cleaning_start(*, order: Order, actor: Actor = None) -> ProvisioningRun | None:
    """Wipe every node the order used (disk secure erase, BIOS reset, check) before it is
    available again; a node that fails goes to faulty."""
    nodes = list(
        Node.objects.filter(run_nodes__run__order=order, run_nodes__state=RunNodeState.ACTIVE)
        .exclude(status__in=[NodeStatus.FAULTY, NodeStatus.RETIRED])
        .distinct()
        .order_by("hostname")
    )
    if not nodes:
        nodes = [
            n for n in order_nodes(order) if n.status not in (NodeStatus.FAULTY, NodeStatus.RETIRED)
        ]
    if not nodes:
        return None
    with transaction.atomic():
        for run in ProvisioningRun.objects.filter(
            order=order, kind=RunKind.PROVISION, status__in=ACTIVE_RUN_STATUSES
        ):
            run_cancel(run=run, actor=actor, reason=Text("The order ended."))
        run = run_create(order=order, kind=RunKind.CLEAN, nodes=nodes)
        run = run_start(run=run, actor=actor)
        fabric_release(order=order)
    return run


@transaction.atomic
def order_cancelled_clean(*, order_id: int) -> ProvisioningRun | None:
    """An order cancelled while it was being provisioned: its run stops and its nodes are
    wiped before anyone else gets them, once (safe to run twice)."""
    order = Order.objects.select_for_update().get(pk=order_id)
    if order.status != OrderStatus.CANCELLED:
        return None
    if ProvisioningRun.objects.filter(order=order, kind=RunKind.CLEAN).exists():
        return None
    return cleaning_start(order=order)


def clean_node_failed(*, run: ProvisioningRun, run_node: RunNode, reason: str) -> None:
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=run_node.node_id)
        if node.status not in (NodeStatus.FAULTY, NodeStatus.RETIRED):
            inventory_services.node_mark_faulty(
                node=node, reason=Text("Cleaning failed: %(why)s", why=clip(reason, 1000))
            )
        steps_skip(NodeStep.objects.filter(run=run, node=node), _("Cleaning failed."))


def cleaning_finish(*, run_id: int, launch: int | None = None) -> str:
    """Nodes whose every cleaning step is done become available; the run ends."""
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.RUNNING or (launch is not None and launch != run.launch):
            return "stopped"
        steps = NodeStep.objects.filter(run=run)
        if steps.filter(status__in=[StepStatus.PENDING, StepStatus.RUNNING]).exists():
            return "waiting"
        clean_ids = set(RunNode.objects.filter(run=run).values_list("node_id", flat=True)) - set(
            steps.exclude(status=StepStatus.DONE).values_list("node_id", flat=True)
        )
        nodes = list(
            Node.objects.select_for_update()
            .filter(pk__in=clean_ids)
            .exclude(status=NodeStatus.AVAILABLE)
        )
        if nodes:
            lifecycle.transition_many(
                nodes,
                to=NodeStatus.AVAILABLE,
                reason=Text("Cleaned: disks erased, BIOS reset, checked."),
                locked=True,
            )
        failed = steps.filter(status=StepStatus.FAILED).exists()
        lifecycle.transition(
            run,
            to=RunStatus.FAILED if failed else RunStatus.DELIVERED,
            reason=Text("Cleaning finished with failures.")
            if failed
            else Text("Cleaning finished."),
            updates={"finished_at": timezone.now(), "message": _("Cleaning finished.")},
            locked=True,
        )
    return "cleaned"


@transaction.atomic
def orders_end_due(*, now: datetime | None = None) -> int:
    """Ready orders past their end: ended, and their nodes cleaned."""
    now = now or timezone.now()
    ended = 0
    for order in Order.objects.select_for_update(skip_locked=True).filter(
        status=OrderStatus.READY, end_at__lte=now
    ):
        order_transition(
            order=order, to_status=OrderStatus.ENDED, reason=Text("The rental period is over.")
        )
        cleaning_start(order=order)
        ended += 1
    return ended
