"""A run that fails, a run staff cancel, a failed step staff retry."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from core import jobs, lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor
from inventory.models import Node, NodeStatus
from provisioning.models import (
    NodeStep,
    ProvisioningRun,
    RunNode,
    RunNodeState,
    RunStatus,
    StepStatus,
)
from provisioning.models.runs import ACTIVE_RUN_STATUSES
from provisioning.runs.plan import EMAIL_TASK, deadline
from provisioning.runs.records import run_back_to_running, run_launch, steps_skip

logger = logging.getLogger(__name__)


def _release_nodes(run: ProvisioningRun, reason: str, actor: Actor = None) -> None:
    """No node stays in provisioning or validating once its run is over: the order's
    booking still holds them; cleaning wipes them when the order ends."""
    nodes = list(
        Node.objects.select_for_update().filter(
            pk__in=RunNode.objects.filter(run=run).values("node_id"),
            status__in=[NodeStatus.PROVISIONING, NodeStatus.VALIDATING],
        )
    )
    if nodes:
        lifecycle.transition_many(
            nodes, to=NodeStatus.AVAILABLE, actor=actor, reason=reason, locked=True
        )


@transaction.atomic
def run_fail(*, run: ProvisioningRun, reason: str, actor: Actor = None) -> ProvisioningRun:
    """The run stops with the reason; staff are alerted and the customer told."""
    run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
    if run.status not in ACTIVE_RUN_STATUSES:
        return run
    lifecycle.transition(
        run,
        to=RunStatus.FAILED,
        actor=actor,
        reason=reason,
        updates={"finished_at": timezone.now(), "message": reason[:2000]},
        locked=True,
    )
    _release_nodes(run, Text("Run %(id)s failed.", id=run.pk), actor)
    logger.error("Provisioning run %s of order %s failed: %s", run.pk, run.order_id, reason)
    jobs.enqueue(EMAIL_TASK, run.pk, "problem")
    return run


@transaction.atomic
def run_cancel(*, run: ProvisioningRun, actor: Actor, reason: str) -> ProvisioningRun:
    """Staff stop a run: its nodes leave provisioning; running steps are abandoned."""
    if not reason.strip():
        raise DomainError(_("Say why the run is cancelled."))
    run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
    lifecycle.transition(
        run,
        to=RunStatus.CANCELLED,
        actor=actor,
        reason=reason,
        updates={"finished_at": timezone.now(), "message": reason},
        locked=True,
    )
    steps_skip(NodeStep.objects.filter(run=run), Text("Run cancelled."), actor)
    _release_nodes(run, _("Run %(id)s cancelled.") % {"id": run.pk}, actor)
    return run


@transaction.atomic
def step_retry(*, step: NodeStep, actor: Actor, reason: str = "") -> NodeStep:
    """Staff: run a failed step again (a failed run goes back to running)."""
    step = NodeStep.objects.select_for_update(of=("self",)).select_related("node").get(pk=step.pk)
    run = ProvisioningRun.objects.select_for_update().get(pk=step.run_id)
    if not RunNode.objects.filter(
        run=run, node_id=step.node_id, state=RunNodeState.ACTIVE
    ).exists():
        raise DomainError(_("This node is no longer part of the run."))
    lifecycle.transition(
        step,
        to=StepStatus.PENDING,
        actor=actor,
        reason=reason or Text("Retried by staff."),
        updates={"message": _("Retry requested.")},
        locked=True,
    )
    if run.status == RunStatus.FAILED:
        lifecycle.transition(
            run,
            to=RunStatus.RUNNING,
            actor=actor,
            reason=Text("A step is retried."),
            updates={"finished_at": None, "deadline_at": deadline(timezone.now())},
            locked=True,
        )
    elif run.status == RunStatus.VALIDATING:
        run_back_to_running(run, actor=actor)
    run_launch(run)
    return step
