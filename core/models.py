"""Abstract bases shared by the apps' models."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


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
    reason = models.TextField(_("why"), blank=True)
    created_at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)

    class Meta:
        abstract = True
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.from_status or '∅'} → {self.to_status}"
