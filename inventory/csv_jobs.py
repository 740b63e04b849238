"""CSV imports too large for the admin page, imported by a Celery task.

The admin page imports at most ``INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS`` rows at once
(preview, then confirm). A larger file is uploaded to the background import: it is read
at once (a file that is not the expected CSV is refused on the spot), stored with the
default storage and recorded as an :class:`~inventory.models.ImportJob`; the task
``inventory.tasks.import_job_run_task`` is published when that row commits and gets the
job's id. The task imports the file as the admin's confirm step does: in one transaction,
all or nothing, every failed row listed by its line in the file and why.

These are the services of that import. They live apart from ``inventory.services`` because
they use the CSV resources, which themselves call ``inventory.services``.

Running a job twice does no harm: the run locks the job row for the whole import and
returns at once when the job has finished. A worker that dies mid-import leaves the job
"importing" with nothing written (the import's transaction is rolled back), and the
redelivered task (``acks_late``) imports it again.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from import_export.results import Result, RowResult

from core import jobs
from core.csv import CSVFileError
from core.errors import DomainError
from core.types import Actor, actor_or_none
from inventory.models import ImportJob, ImportJobStatus
from inventory.resources import (
    InventoryCSV,
    InventoryResource,
    NodeCSV,
    NodeResource,
    SwitchCSV,
    SwitchResource,
    error_lines,
)

logger = logging.getLogger(__name__)

IMPORT_TASK = "inventory.tasks.import_job_run_task"

#: What can be imported in the background, by the model name of its admin.
IMPORTS: dict[str, tuple[type[InventoryResource], type[InventoryCSV]]] = {
    "node": (NodeResource, NodeCSV),
    "switch": (SwitchResource, SwitchCSV),
}

#: A job still waiting this long after its upload was lost on the way to a worker.
PENDING_LOST_AFTER = timedelta(minutes=10)

#: Progress is written to the cache every this many rows (and at the end).
PROGRESS_EVERY_ROWS = 25
PROGRESS_TTL_S = 24 * 3600


class ImportTimeUp(DomainError):
    """The import ran longer than its task may; it is stopped and nothing is kept."""


def _progress_key(job_id: int) -> str:
    return f"inventory:import-job:{job_id}:rows-done"


def import_job_rows_done(job: ImportJob) -> int:
    """Rows checked so far: from the cache while the task runs, else the recorded count."""
    if job.is_finished:
        return job.rows_done
    return int(cache.get(_progress_key(job.pk), job.rows_done) or 0)


def import_job_create(
    *, kind: str, upload: UploadedFile, actor: Actor = None, language: str | None = None
) -> ImportJob:
    """Store the uploaded file, record the job and have a worker import it.

    Raises :class:`~core.csv.CSVFileError` (nothing stored) when the file is
    not the expected CSV of ``kind``; row errors are found by the import itself.
    """
    if kind not in IMPORTS:
        raise DomainError(_("“%(kind)s” cannot be imported from CSV.") % {"kind": kind})
    _resource_class, csv_format = IMPORTS[kind]
    data = b"".join(upload.chunks())
    dataset = csv_format().create_dataset(data, max_rows=None)
    name = os.path.basename(upload.name or "import.csv")
    with transaction.atomic():
        job = ImportJob(
            kind=kind,
            file_name=name[:255],
            language=language or translation.get_language() or "",
            rows_total=dataset.height,
            created_by=actor_or_none(actor),
        )
        job.file.save(name, ContentFile(data), save=False)
        job.save()
        jobs.enqueue(IMPORT_TASK, job.pk)
    return job


def _progress_writer(job_id: int, total: int, deadline: float | None) -> Callable[[int], None]:
    def report(rows_done: int) -> None:
        if rows_done % PROGRESS_EVERY_ROWS == 0 or rows_done >= total:
            cache.set(_progress_key(job_id), rows_done, PROGRESS_TTL_S)
        if deadline is not None and time.monotonic() > deadline:
            raise ImportTimeUp(
                ngettext(
                    "The import took too long and was stopped after %(rows)d row.",
                    "The import took too long and was stopped after %(rows)d rows.",
                    rows_done,
                )
                % {"rows": rows_done}
            )

    return report


def _import(job: ImportJob, deadline: float | None) -> Result:
    resource_class, csv_format = IMPORTS[job.kind]
    with job.file.open("rb") as stored:
        data = stored.read()
    dataset = csv_format().create_dataset(data, max_rows=None)
    job.rows_total = dataset.height
    resource = resource_class(progress=_progress_writer(job.pk, dataset.height, deadline))
    return resource.import_data(
        dataset,
        dry_run=False,
        raise_errors=False,
        use_transactions=True,
        file_name=job.file_name,
        user=job.created_by,
    )


def import_job_run(*, job_id: int, time_budget_s: float | None = None) -> ImportJob | None:
    """Import the job's file whole or not at all and record the outcome on the job.

    ``time_budget_s`` stops an import that runs longer (nothing is kept). Returns the job,
    or ``None`` when there is no such job.
    """
    ImportJob.objects.filter(pk=job_id, status=ImportJobStatus.PENDING).update(
        status=ImportJobStatus.RUNNING, started_at=timezone.now()
    )
    deadline = None if time_budget_s is None else time.monotonic() + time_budget_s
    language = settings.LANGUAGE_CODE
    try:
        with transaction.atomic():
            job = ImportJob.objects.select_for_update().filter(pk=job_id).first()
            if job is None or job.is_finished:
                return job
            language = job.language or settings.LANGUAGE_CODE
            with translation.override(language):
                result = _import(job, deadline)
                failed = result.has_errors() or result.has_validation_errors()
                resource_class, _csv_format = IMPORTS[job.kind]
                column_of = {f.attribute: f.column_name for f in resource_class.fields.values()}
                totals = result.totals
                job.rows_done = result.total_rows
                job.errors = error_lines(result, column_of) if failed else []
                job.rows_new = 0 if failed else totals.get(RowResult.IMPORT_TYPE_NEW, 0)
                job.rows_updated = 0 if failed else totals.get(RowResult.IMPORT_TYPE_UPDATE, 0)
                job.rows_unchanged = 0 if failed else totals.get(RowResult.IMPORT_TYPE_SKIP, 0)
                job.status = ImportJobStatus.FAILED if failed else ImportJobStatus.DONE
                job.finished_at = timezone.now()
                job.save()
    except Exception as exc:  # every way of stopping is recorded on the job, as a failure
        with translation.override(language):
            if isinstance(exc, DomainError):
                reason = exc.message
            elif isinstance(exc, CSVFileError):
                reason = exc.message
            elif isinstance(exc, SoftTimeLimitExceeded):
                reason = _("The import took too long and was stopped.")
            else:
                logger.exception("CSV import job %s stopped", job_id)
                reason = _("The import stopped on an unexpected error: %(error)s") % {"error": exc}
            reason = reason + " " + _("Nothing was imported.")
        ImportJob.objects.filter(
            pk=job_id, status__in=[ImportJobStatus.PENDING, ImportJobStatus.RUNNING]
        ).update(status=ImportJobStatus.FAILED, errors=[reason], finished_at=timezone.now())
        return ImportJob.objects.filter(pk=job_id).first()
    cache.delete(_progress_key(job.pk))
    return job


def import_job_sweep(*, running_lost_after: timedelta, now: datetime | None = None) -> int:
    """Hand jobs that no worker is on to Celery again (Celery beat); returns how many.

    A job still waiting ``PENDING_LOST_AFTER`` after its upload, or importing for longer
    than its task may run (``running_lost_after``), was lost with a message or a worker.
    Running a job again is safe (see :func:`import_job_run`).
    """
    now = now or timezone.now()
    lost = ImportJob.objects.filter(
        status=ImportJobStatus.PENDING, created_at__lt=now - PENDING_LOST_AFTER
    ) | ImportJob.objects.filter(
        status=ImportJobStatus.RUNNING, started_at__lt=now - running_lost_after
    )
    job_ids = list(lost.order_by("pk").values_list("pk", flat=True))
    for job_id in job_ids:
        with transaction.atomic():
            jobs.enqueue(IMPORT_TASK, job_id)
    return len(job_ids)
