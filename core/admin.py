"""The outbox in the admin: staff see work waiting for the broker, with its age."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import gettext_lazy, ngettext

from core import outbox, task_labels
from core.admin_base import ReadOnlyAdmin
from core.models import OutboxMessage, OutboxStatus


@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdmin):
    list_display = ("id", "tasks", "status", "age", "attempts", "next_attempt_at", "last_error")
    list_filter = ("status",)
    ordering = ("-created_at",)
    actions = ("publish_now",)

    @admin.display(description=gettext_lazy("tasks"))
    def tasks(self, obj: OutboxMessage) -> str:
        # What the work does, in the page's language (never the tasks' Python names).
        return " → ".join(task_labels.label(name) for name in obj.task_names)

    @admin.display(description=gettext_lazy("waiting for"))
    def age(self, obj: OutboxMessage) -> str:
        if obj.status == OutboxStatus.PUBLISHED:
            return "—"
        return timesince(obj.created_at, timezone.now())

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("core.change_outboxmessage")

    @admin.action(description=gettext_lazy("Publish now"), permissions=["publish"])
    def publish_now(self, request: HttpRequest, queryset: QuerySet[OutboxMessage]) -> None:
        ids = list(queryset.filter(status=OutboxStatus.PENDING).values_list("pk", flat=True))
        published = sum(1 for pk in ids if outbox.publish_now(pk))
        level = messages.SUCCESS if published == len(ids) else messages.WARNING
        self.message_user(
            request,
            ngettext(
                "%(done)d of %(count)d pending message published.",
                "%(done)d of %(count)d pending messages published.",
                len(ids),
            )
            % {"done": published, "count": len(ids)},
            level,
        )
