"""CSV imports run in the background: one row per uploaded node or switch file."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

__all__ = [
    "FINISHED_IMPORT_JOB_STATUSES",
    "ImportJob",
    "ImportJobStatus",
]


class ImportJobStatus(models.TextChoices):
    PENDING = "pending", _("waiting for a worker")
    RUNNING = "running", _("importing")
    DONE = "done", _("imported")
    FAILED = "failed", _("failed, nothing imported")


FINISHED_IMPORT_JOB_STATUSES = (ImportJobStatus.DONE, ImportJobStatus.FAILED)


class ImportJob(models.Model):
    """A node or switch CSV too large to import on the admin page, imported by a Celery task.

    Written only by ``inventory.csv_jobs``: the file is imported whole or not at all, and
    ``errors`` lists every failed row by its line in the file. Progress while the task
    runs is kept in the cache (the import's own transaction hides it from other readers);
    ``rows_done`` here is the final count.
    """

    kind = models.CharField(_("what"), max_length=20)
    file = models.FileField(_("file"), upload_to="inventory/imports/%Y/%m/")
    file_name = models.CharField(_("file name"), max_length=255)
    # The uploader's language: the row errors are written in it (blank: the site's default).
    language = models.CharField(_("language"), max_length=16, blank=True)
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=ImportJobStatus.choices,
        default=ImportJobStatus.PENDING,
        db_index=True,
    )
    rows_total = models.PositiveIntegerField(_("rows in the file"), default=0)
    rows_done = models.PositiveIntegerField(_("rows checked"), default=0)
    rows_new = models.PositiveIntegerField(_("rows added"), default=0)
    rows_updated = models.PositiveIntegerField(_("rows updated"), default=0)
    rows_unchanged = models.PositiveIntegerField(_("rows unchanged"), default=0)
    errors = models.JSONField(_("errors"), default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("uploaded"), auto_now_add=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("CSV import job")
        verbose_name_plural = _("CSV import jobs")

    def __str__(self) -> str:
        return f"{self.kind} {self.file_name} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_IMPORT_JOB_STATUSES
