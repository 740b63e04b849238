"""Abstract bases shared by the apps' models, and the outbox of work that follows a commit."""

from __future__ import annotations

import functools

from django.apps import apps
from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core import task_labels, texts


class LifecycleEvent(models.Model):
    """One row per move of a lifecycle: who, when, from, to and why.

    Each lifecycle has its own concrete event model with a foreign key to its subject
    (named in the model's ``Lifecycle``). ``from_status`` is empty for the creation event;
    ``from_status == to_status`` records a note that changed no status.
    """

    from_status = models.CharField(_("from"), max_length=24, blank=True)
    to_status = models.CharField(_("to"), max_length=24)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("by"),
    )
    # ``reason`` is the English text (logs, search, hash chains); ``reason_text`` the code
    # and parameters of a system text (``core.texts``), None for words a person typed.
    # Pages and documents show ``why()``: the text in their own language.
    reason = models.TextField(_("why"), blank=True)
    reason_text = models.JSONField(_("why (code)"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)

    class Meta:
        abstract = True
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.from_label()} → {self.to_label()}"

    @classmethod
    def status_choices(cls) -> list[tuple[str, str]]:
        """The statuses of the lifecycle whose events this model records, with their
        translated labels (the admin shows and filters by these, never the raw codes)."""
        return _lifecycle_choices(cls._meta.label)

    @classmethod
    def status_label(cls, status: str) -> str:
        return str(dict(cls.status_choices()).get(status, status)) if status else "∅"

    def why(self) -> str:
        """Why it happened, in the active language (as typed when a person wrote it)."""
        return texts.render(self.reason_text, self.reason)

    why.short_description = _("why")  # type: ignore[attr-defined]

    def from_label(self) -> str:
        return self.status_label(self.from_status)

    from_label.short_description = _("from")  # type: ignore[attr-defined]

    def to_label(self) -> str:
        return self.status_label(self.to_status)

    to_label.short_description = _("to")  # type: ignore[attr-defined]


@functools.cache
def _lifecycle_choices(event_model: str) -> list[tuple[str, str]]:
    for model in apps.get_models():
        lifecycle = model.__dict__.get("lifecycle")
        if lifecycle is not None and lifecycle.event_model == event_model:
            return list(lifecycle.choices.choices)
    return []


class StoredDocument(models.Model):
    """A rendered document kept once per owner and language with the SHA-256 of its exact
    bytes (``core.pdf.store_document`` writes them). Subclasses add the foreign key to
    their owner and the ``file`` field with its upload folder."""

    language = models.CharField(
        max_length=8, choices=settings.LANGUAGES, verbose_name=_("language")
    )
    sha256 = models.CharField(max_length=64, verbose_name=_("SHA-256"))
    size = models.PositiveIntegerField(verbose_name=_("size"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        abstract = True


class OutboxStatus(models.TextChoices):
    PENDING = "pending", _("waiting to be published")
    PUBLISHED = "published", _("published")


class OutboxMessage(models.Model):
    """Work that must follow a commit, written in the same transaction (the outbox).

    ``steps`` is a chain of ``[task name, [args…]]``; the relay publishes it to the broker
    and marks it published. A broker that is down delays the work and never loses it: the
    message stays pending and is retried with backoff (``core.outbox``).
    """

    steps = models.JSONField(_("tasks"))
    status = models.CharField(
        _("status"), max_length=12, choices=OutboxStatus.choices, default=OutboxStatus.PENDING
    )
    attempts = models.PositiveIntegerField(_("publish attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt"), default=timezone.now)
    last_error = models.TextField(_("last error"), blank=True)
    created_at = models.DateTimeField(_("written"), auto_now_add=True)
    published_at = models.DateTimeField(_("published"), null=True, blank=True)
    # The log context of the work that wrote it (the request id), carried into the tasks'
    # headers when the relay publishes it later (``core.outbox``).
    log_context = models.JSONField(_("log context"), default=dict, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("outbox message")
        verbose_name_plural = _("outbox messages")
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="outbox_pending_due_idx",
                condition=models.Q(status="pending"),
            )
        ]

    def __str__(self) -> str:
        return " → ".join(task_labels.label(step[0]) for step in self.steps)

    @property
    def task_names(self) -> list[str]:
        return [step[0] for step in self.steps]


class WorkerHeartbeat(models.Model):
    """A Celery worker's last sign of life, per queue it consumes (``portal.celery``
    writes it every ``PORTAL_WORKER_HEARTBEAT_S``; ``/readyz`` reads it). In the database,
    the one dependency every process has, so a broker or cache outage does not hide the
    workers that are still there."""

    hostname = models.CharField(_("worker"), max_length=200)
    queue = models.CharField(_("queue"), max_length=64)
    seen_at = models.DateTimeField(_("last seen"), default=timezone.now)
    # Where Prometheus scrapes this worker's task metrics ("" when it serves none).
    metrics_url = models.CharField(_("metrics address"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("worker heartbeat")
        verbose_name_plural = _("worker heartbeats")
        constraints = [
            models.UniqueConstraint(fields=["hostname", "queue"], name="worker_heartbeat_once")
        ]

    def __str__(self) -> str:
        return f"{self.hostname} ({self.queue})"
