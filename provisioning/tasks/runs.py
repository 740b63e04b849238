"""The tasks of a provisioning run: thin, taking ids, each bounded by its own time limits.

The canvas of a run (``provisioning_launch``): per slot a chain of
``provisioning_slot_advance`` signatures (one per phase of steps, ``runs.*_PHASE_ENDS``:
today one phase, all of a node's steps in one task, with the time limit of those steps),
all slots in a group, a chord into cluster validation, then delivery.
Cleaning: the same shape, into ``provisioning_clean_finish``. Every task checks the
recorded state first (``provisioning.runs``), so a redelivered or relaunched task
does no harm; a task of an older launch stops at once.
"""

from __future__ import annotations

import logging

from celery import Task, chain, chord, group, shared_task
from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

from accounts.models import Membership
from core.queues import CeleryQueue
from provisioning import access, runs
from provisioning.models import (
    CLEAN_STEPS,
    PROVISION_STEPS,
    NodeStep,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
)
from provisioning.tasks.options import DB_ERRORS, IDEMPOTENT, SWEEP

logger = logging.getLogger(__name__)

ADVANCE_LIMIT_S = settings.CELERY_LONGEST_TASK_S - 60


def _advance_limit(names: tuple[str, ...], upto: str) -> int:
    """The time an advance to ``upto`` may take: every step up to it (a spare swapped in
    catches up from its first step), within the longest task the broker allows."""
    total = sum(runs.STEP_LIMIT_S[n] for n in names[: names.index(upto) + 1])
    return min(total + 60, ADVANCE_LIMIT_S)


@shared_task(
    name="provisioning.tasks.provisioning_start",
    queue=CeleryQueue.PROVISIONING,
    **IDEMPOTENT,
    soft_time_limit=60,
    time_limit=90,
)
def provisioning_start(order_id: int) -> str:
    """Entry point of a released order (enqueued by billing): start its run if its time
    (the rental's start minus the site's lead time) has come; otherwise the beat job
    ``provisioning_start_due_task`` starts it then."""
    if not settings.PORTAL_PROVISIONING_AUTOSTART:
        logger.info("Order %s is paid; provisioning autostart is off.", order_id)
        return "queued"
    outcome = runs.provisioning_start_when_due(order_id=order_id)
    if outcome is None:
        return "skipped"
    if isinstance(outcome, ProvisioningRun):
        return f"run {outcome.pk}"
    return f"scheduled for {outcome.isoformat()}"


@shared_task(
    name="provisioning.tasks.provisioning_start_due_task",
    queue=CeleryQueue.PROVISIONING,
    **SWEEP,
)
def provisioning_start_due_task() -> int:
    """Beat: start the runs of released orders whose provisioning time has come."""
    if not settings.PORTAL_PROVISIONING_AUTOSTART:
        return 0
    return runs.provisioning_start_due()


@shared_task(
    name="provisioning.tasks.provisioning_launch",
    queue=CeleryQueue.PROVISIONING,
    **IDEMPOTENT,
    soft_time_limit=60,
    time_limit=90,
)
def provisioning_launch(run_id: int, launch: int) -> str:
    """Build and apply the run's canvas for its launch number."""
    run = ProvisioningRun.objects.filter(pk=run_id).first()
    if run is None or not run.is_active or run.launch != launch:
        return "stale"
    slots = list(
        RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE)
        .order_by("slot")
        .values_list("slot", flat=True)
    )
    if run.kind == RunKind.CLEAN:
        names, ends = CLEAN_STEPS, runs.CLEAN_PHASE_ENDS
        body = provisioning_clean_finish.si(run_id, launch)
    else:
        names, ends = PROVISION_STEPS, runs.PROVISION_PHASE_ENDS
        # The validate step's bound covers the burn-in where the order has one.
        limit = runs.validate_limit_s(run)
        body = chain(
            provisioning_validate.si(run_id, launch).set(
                soft_time_limit=limit, time_limit=limit + 60
            ),
            provisioning_deliver.si(run_id, launch),
        )
    chains = []
    for slot in slots:
        # One task per phase of the slot's steps (the last one named), each limited by
        # the steps up to it; steps already done are skipped at once by the task itself.
        chains.append(
            chain(
                provisioning_slot_advance.si(run_id, slot, name, launch).set(
                    soft_time_limit=_advance_limit(names, name),
                    time_limit=_advance_limit(names, name) + 30,
                )
                for name in ends
            )
        )
    if not chains:
        body.apply_async()
    else:
        chord(group(chains))(body)
    return f"launched {len(chains)}"


@shared_task(
    name="provisioning.tasks.provisioning_slot_advance",
    queue=CeleryQueue.PROVISIONING,
    # A chord's header task: the chord counts its results (every other task ignores its
    # result, CELERY_TASK_IGNORE_RESULT).
    ignore_result=False,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=200,
    soft_time_limit=ADVANCE_LIMIT_S,
    time_limit=ADVANCE_LIMIT_S + 30,
)
def provisioning_slot_advance(self: Task, run_id: int, slot: int, upto: str, launch: int) -> str:
    """Bring one slot's node through its steps up to ``upto`` (idempotent)."""
    try:
        return runs.slot_advance(run_id=run_id, slot=slot, upto=upto, launch=launch)
    except runs.StepTransient as exc:
        # Backoff grows with the step's recorded attempts; the cap is in step_execute.
        countdown = min(
            settings.PORTAL_PROVISIONING_RETRY_BACKOFF_S * 2 ** (exc.attempt - 1), 300.0
        )
        raise self.retry(countdown=countdown, exc=exc) from None
    except runs.StepBusy:
        raise self.retry(countdown=5) from None
    except DB_ERRORS as exc:
        raise self.retry(countdown=5, exc=exc) from None


@shared_task(
    name="provisioning.tasks.provisioning_validate",
    queue=CeleryQueue.PROVISIONING,
    bind=True,
    **IDEMPOTENT,
    soft_time_limit=runs.STEP_LIMIT_S["validate"],
    time_limit=runs.STEP_LIMIT_S["validate"] + 60,
)
def provisioning_validate(self: Task, run_id: int, launch: int) -> str:
    """Cluster validation (the chord's body); swaps rejected nodes and relaunches. With
    the burn-in it outlasts the broker's visibility timeout: it measures under a lease
    that it renews, named for this worker and task (a copy of this message handed out
    again returns "held" and is acknowledged; the holder is at work)."""
    holder = runs.holder_name(self.request.hostname, self.request.id)
    return runs.run_validate(run_id=run_id, launch=launch, holder=holder)


@shared_task(
    name="provisioning.tasks.provisioning_deliver",
    queue=CeleryQueue.PROVISIONING,
    **IDEMPOTENT,
    soft_time_limit=60,
    time_limit=90,
)
def provisioning_deliver(run_id: int, launch: int) -> str:
    return runs.run_deliver(run_id=run_id, launch=launch)


@shared_task(
    name="provisioning.tasks.provisioning_clean_finish",
    queue=CeleryQueue.PROVISIONING,
    **IDEMPOTENT,
    soft_time_limit=60,
    time_limit=90,
)
def provisioning_clean_finish(run_id: int, launch: int) -> str:
    return runs.cleaning_finish(run_id=run_id, launch=launch)


@shared_task(
    name="provisioning.tasks.provisioning_reaper_task",
    queue=CeleryQueue.PROVISIONING,
    **SWEEP,
)
def provisioning_reaper_task() -> dict[str, int]:
    """Beat: resume runs whose worker died, fail runs past their deadline."""
    return runs.reaper()


@shared_task(
    name="provisioning.tasks.provisioning_end_due_orders_task",
    queue=CeleryQueue.PROVISIONING,
    **SWEEP,
)
def provisioning_end_due_orders_task() -> int:
    """Beat: ready orders past their end are ended and their nodes cleaned."""
    return runs.orders_end_due()


@shared_task(
    name="provisioning.tasks.order_cancelled_clean",
    queue=CeleryQueue.PROVISIONING,
    **IDEMPOTENT,
    soft_time_limit=60,
    time_limit=90,
)
def order_cancelled_clean(order_id: int) -> int | None:
    """An order cancelled before delivery whose provisioning had begun: wipe its nodes."""
    run = runs.order_cancelled_clean(order_id=order_id)
    return run.pk if run else None


@shared_task(
    name="provisioning.tasks.provisioning_email",
    queue=CeleryQueue.PROVISIONING,
    autoretry_for=(ConnectionError, TimeoutError, OSError),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=60,
    time_limit=90,
)
def provisioning_email(run_id: int, kind: str) -> int:
    """Tell the customer's members: the cluster is ready, or there is a problem."""
    run = ProvisioningRun.objects.select_related("order", "order__quote").filter(pk=run_id).first()
    if run is None:
        return 0
    order = run.order
    emails = sorted(
        set(
            Membership.objects.filter(organisation=order.organisation).values_list(
                "user__email", flat=True
            )
        )
        - {""}
    )
    if not emails:
        return 0
    language = getattr(order.quote, "language", "") or settings.LANGUAGE_CODE
    with translation.override(language):
        context = {
            "order": order,
            "run": run,
            "kind": kind,
            "url": settings.PORTAL_BASE_URL + reverse("dashboard_order", args=[order.number]),
            "nodes": RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).select_related(
                "node"
            ),
            "failed_steps": NodeStep.objects.filter(run=run, status="failed").select_related(
                "node"
            ),
            "access": access.order_access(order, run) if kind == "ready" else None,
        }
        subject = render_to_string("provisioning/email_subject.txt", context).strip()
        body = render_to_string("provisioning/email_body.txt", context)
    return send_mail(subject, body, None, emails)
