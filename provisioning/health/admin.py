"""Day two in the back office: spare pools (target and free now), health incidents with
their evidence and history, injected faults on simulated nodes, replacement policies,
and the low-utilisation list (raised, answered)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from core.admin_base import LifecycleEventInline, ReadOnlyAdmin
from inventory import selectors as inventory_selectors
from provisioning.health import utilisation
from provisioning.models import (
    HealthIncident,
    HealthIncidentEvent,
    ReplacementPolicy,
    SimulatedFault,
    SparePool,
    UtilisationAlert,
)


@admin.register(SparePool)
class SparePoolAdmin(admin.ModelAdmin):
    list_display = ("site", "node_type", "target", "free_now", "short")
    list_select_related = ("site", "node_type")

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        # Bookable now: a node that shows available under a running booking (a repaired
        # node about to go back to its customer) or in a maintenance window is no spare.
        self._free = inventory_selectors.free_counts_now()
        return super().changelist_view(request, extra_context)

    @admin.display(description=gettext_lazy("free now"))
    def free_now(self, obj: SparePool) -> int:
        return getattr(self, "_free", {}).get((obj.site_id, obj.node_type_id), 0)

    @admin.display(description=gettext_lazy("short of target"), boolean=True)
    def short(self, obj: SparePool) -> bool:
        return self.free_now(obj) < obj.target


class IncidentEventInline(LifecycleEventInline):
    model = HealthIncidentEvent


@admin.register(HealthIncident)
class HealthIncidentAdmin(ReadOnlyAdmin):
    list_display = ("detected_at", "node", "rule", "action", "status", "metric", "value", "order")
    list_filter = ("status", "action", "rule")
    search_fields = ("node__hostname", "order__number")
    list_select_related = ("node", "order")
    inlines = [IncidentEventInline]


@admin.register(SimulatedFault)
class SimulatedFaultAdmin(admin.ModelAdmin):
    list_display = ("node", "kind", "gpu", "value", "start_at", "end_at")
    list_filter = ("kind",)
    search_fields = ("node__hostname",)
    raw_id_fields = ("node",)


@admin.register(ReplacementPolicy)
class ReplacementPolicyAdmin(ReadOnlyAdmin):
    list_display = ("order", "mode", "ask_minutes", "updated_at", "updated_by")


@admin.register(UtilisationAlert)
class UtilisationAlertAdmin(ReadOnlyAdmin):
    list_display = ("raised_at", "order", "utilisation", "pointer", "answered_at", "answered_by")
    list_filter = (("answered_at", admin.EmptyFieldListFilter),)
    actions = ("answer",)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_staff

    @admin.action(description=gettext_lazy("Mark answered (an engineer has contacted them)"))
    def answer(self, request: HttpRequest, queryset: QuerySet[UtilisationAlert]) -> None:
        for alert in queryset:
            utilisation.alert_answer(alert=alert, actor=request.user)
        messages.success(request, gettext_lazy("Marked answered."))
