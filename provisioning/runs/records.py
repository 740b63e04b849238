"""The small record moves that creating, stepping, swapping, delivering and failing a
run share: a node's steps created, a step moved, steps skipped, the run put back to
running, and its canvas (re)launched after commit."""

from __future__ import annotations

from typing import Any

from billing.models import Order, OrderStatus
from billing.orders.services import order_transition
from core import jobs, lifecycle
from core.texts import Text, clip
from core.types import Actor
from inventory.models import Node
from provisioning.models import (
    NodeStep,
    ProvisioningRun,
    RunNode,
    RunNodeState,
    RunStatus,
    StepStatus,
)
from provisioning.runs.plan import LAUNCH_TASK, STEP_EXPECTED_S


def create_steps(run: ProvisioningRun, node: Node, names: tuple[str, ...]) -> None:
    NodeStep.objects.bulk_create(
        [
            NodeStep(
                run=run,
                node=node,
                name=name,
                position=i,
                expected_s=STEP_EXPECTED_S.get(name, 0.0),
            )
            for i, name in enumerate(names)
        ],
        ignore_conflicts=True,
    )


def run_launch(run: ProvisioningRun) -> None:
    """(Re)start the run's canvas after commit; older launches stop at their next step."""
    ProvisioningRun.objects.filter(pk=run.pk).update(launch=run.launch + 1)
    run.launch += 1
    jobs.enqueue(LAUNCH_TASK, run.pk, run.launch)


def active_run_node(run: ProvisioningRun, slot: int) -> RunNode | None:
    return (
        RunNode.objects.select_related("node")
        .filter(run=run, slot=slot, state=RunNodeState.ACTIVE)
        .first()
    )


def step_move(step: NodeStep, to: str, reason: str, **updates: Any) -> NodeStep:
    return lifecycle.transition(
        step, to=to, reason=clip(reason, 2000), updates=updates, locked=True
    )


def steps_skip(steps: Any, reason: str, actor: Actor = None) -> None:
    """Steps that will not run (their node left the run, or the run ended)."""
    locked = list(
        steps.select_for_update(of=("self",))
        .select_related("node")
        .filter(status__in=[StepStatus.PENDING, StepStatus.RUNNING])
    )
    if locked:
        lifecycle.transition_many(
            locked,
            to=StepStatus.SKIPPED,
            actor=actor,
            reason=reason,
            updates={"lease_until": None, "message": reason},
            locked=True,
        )


def run_back_to_running(run: ProvisioningRun, *, actor: Actor = None) -> None:
    if run.status == RunStatus.VALIDATING:
        lifecycle.transition(
            run,
            to=RunStatus.RUNNING,
            actor=actor,
            reason=Text("A spare is provisioned."),
            locked=True,
        )
        order = Order.objects.select_for_update().get(pk=run.order_id)
        if order.status == OrderStatus.VALIDATING:
            order_transition(
                order=order,
                to_status=OrderStatus.PROVISIONING,
                actor=actor,
                reason=Text("A node is swapped for a spare."),
            )
