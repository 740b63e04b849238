"""The reaper (beat): the work a dead worker or a lost message left, found and resumed;
runs past their deadline failed; nodes an ended run left in provisioning released."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone
from django.utils.translation import gettext as _

from core import lifecycle
from core.texts import Text
from inventory.models import Node, NodeStatus
from provisioning.models import NodeStep, ProvisioningRun, RunStatus, StepStatus
from provisioning.models.runs import ACTIVE_RUN_STATUSES
from provisioning.runs.failure import run_fail
from provisioning.runs.records import run_launch, step_move


def reaper(*, now: datetime | None = None, stall_s: float | None = None) -> dict[str, int]:
    """Find work a dead worker left: steps running past their lease go back to waiting
    and their run is relaunched from its last finished step (a step's lease lasts its
    limit; validation's, a few minutes renewed by its holder while it measures, runs out
    soon after the holder died, however long the burn-in); runs past their deadline
    fail; runs with no progress for ``stall_s`` are relaunched (a lost message); nodes
    left in provisioning by an ended run are released."""
    now = now or timezone.now()
    stall_s = settings.PORTAL_PROVISIONING_STALL_S if stall_s is None else stall_s
    relaunched: set[int] = set()
    reaped = failed = released = 0
    with transaction.atomic():
        stale = list(
            NodeStep.objects.select_for_update(of=("self",), skip_locked=True)
            .select_related("node")
            .filter(status=StepStatus.RUNNING, lease_until__lt=now)
        )
        for step in stale:
            step_move(
                step,
                StepStatus.PENDING,
                _("The worker running this step was lost; resumed."),
                lease_until=None,
                message=_("Resumed after a lost worker."),
            )
            relaunched.add(step.run_id)
            reaped += 1
    for run in ProvisioningRun.objects.filter(status__in=ACTIVE_RUN_STATUSES, deadline_at__lt=now):
        run_fail(run=run, reason=Text("The run passed its deadline."))
        relaunched.discard(run.pk)
        failed += 1
    quiet = (
        ProvisioningRun.objects.filter(status__in=[RunStatus.RUNNING, RunStatus.VALIDATING])
        .annotate(last=Max("steps__status_changed_at"))
        .filter(last__lt=now - timedelta(seconds=stall_s))
        .exclude(steps__status=StepStatus.RUNNING)
    )
    relaunched.update(quiet.values_list("pk", flat=True))
    for run_id in relaunched:
        with transaction.atomic():
            run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
            if run.status in (RunStatus.RUNNING, RunStatus.VALIDATING):
                lifecycle.record_note(
                    [run], reason=Text("Resumed by the reaper from the last finished step.")
                )
                run_launch(run)
    with transaction.atomic():
        live = ProvisioningRun.objects.filter(
            run_nodes__node=OuterRef("pk"), status__in=ACTIVE_RUN_STATUSES
        )
        orphans = list(
            Node.objects.select_for_update(skip_locked=True)
            .filter(status__in=[NodeStatus.PROVISIONING, NodeStatus.VALIDATING])
            .filter(~Exists(live))
        )
        if orphans:
            lifecycle.transition_many(
                orphans, to=NodeStatus.AVAILABLE, reason=Text("Its run is over."), locked=True
            )
            released = len(orphans)
    return {"reaped": reaped, "relaunched": len(relaunched), "failed": failed, "released": released}
