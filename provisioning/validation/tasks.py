"""Thin Celery tasks of the validation suite: take ids, re-fetch, return early if done,
call a service. The runs go to the validation queue, the report's render to the
documents queue with every document's options (each task declares its queue)."""

from __future__ import annotations

from celery import shared_task

from core.documents import DOCUMENT_TASK_OPTIONS
from core.queues import CeleryQueue
from provisioning.models import ValidationRun
from provisioning.validation import report, services

# Seconds: (soft, hard). An acceptance run (DCGM -r 3 is about 15 minutes per node, nodes
# one after the other) is long; the quick profile takes a minute or two.
RUN_LIMITS = {"soft_time_limit": 3600, "time_limit": 3660}
SWEEP_LIMITS = {"soft_time_limit": 120, "time_limit": 150}


@shared_task(
    name="provisioning.validation.tasks.validation_run_execute_task",
    queue=CeleryQueue.VALIDATION,
    acks_late=True,
    reject_on_worker_lost=True,
    **RUN_LIMITS,
)
def validation_run_execute_task(run_id: int) -> str:
    """Execute a validation run; returns its status. Idempotent: a finished run is left
    as it is; one left running by a dead worker starts again."""
    run = services.validation_run_execute(run_id=run_id)
    return run.status if run is not None else "missing"


@shared_task(
    name="provisioning.validation.tasks.validation_idle_sweep_task",
    queue=CeleryQueue.VALIDATION,
    **SWEEP_LIMITS,
)
def validation_idle_sweep_task() -> int:
    """Beat: a quick validation run for every idle node; returns how many were started."""
    return len(services.validation_idle_sweep())


@shared_task(name=report.ACCEPTANCE_REPORT.render_task, **DOCUMENT_TASK_OPTIONS)
def document_render_acceptance_report(run_id: int, language: str) -> str:
    """Render and store a finished run's acceptance report; returns its SHA-256.
    Idempotent: a stored report is returned as it is."""
    run = ValidationRun.objects.filter(pk=run_id).first()
    if run is None or not run.finished:
        return ""
    return report.acceptance_report_document(run=run, language=language).sha256
