"""Validation in the back office: rules (editable, with their sources), runs (read-only,
with node results, raw outputs and reports), and nodes with a "re-run validation" action.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy, ngettext

from core.admin_base import (
    LifecycleEventInline,
    ReadOnlyAdmin,
    ReadOnlyInline,
    SiteTimeZoneMixin,
)
from core.errors import DomainError
from provisioning.models import (
    NodeValidation,
    ProvisioningRun,
    ValidationArtifact,
    ValidationCheck,
    ValidationNodeResult,
    ValidationReport,
    ValidationRule,
    ValidationRun,
    ValidationRunEvent,
)
from provisioning.validation import services
from provisioning.validation.reasons import reason_messages


@admin.register(ValidationRule)
class ValidationRuleAdmin(admin.ModelAdmin):
    list_display = (
        "metric",
        "gpu_model",
        "fabric",
        "scope",
        "message_size_bytes",
        "baseline",
        "min_variance",
        "min_value",
        "equals",
        "required",
        "active",
    )
    list_filter = ("active", "scope", "gpu_model", "required")
    search_fields = ("metric", "gpu_model", "source")
    fieldsets = (
        (None, {"fields": ("metric", "gpu_model", "fabric", "scope", "check_name", "unit")}),
        (
            gettext_lazy("Criterion"),
            {
                "fields": (
                    "message_size_bytes",
                    "baseline",
                    "baseline_from",
                    "baseline_multiplier_from",
                    "min_variance",
                    "min_value",
                    "min_inclusive",
                    "max_value",
                    "equals",
                    "max_below_median",
                    "required",
                    "active",
                )
            },
        ),
        (gettext_lazy("Source"), {"fields": ("source",)}),
    )


class ResultInline(ReadOnlyInline):
    model = ValidationNodeResult
    fields = ("hostname", "gpu_model", "device", "accepted", "reasons_text", "report_sha256")
    readonly_fields = fields

    @admin.display(description=gettext_lazy("reasons"))
    def reasons_text(self, obj: ValidationNodeResult) -> str:
        return "; ".join(obj.reason_texts) or "—"


class ArtifactInline(ReadOnlyInline):
    model = ValidationArtifact
    fields = ("node", "check_name", "status", "raw_format", "size", "sha256")
    readonly_fields = fields
    show_change_link = False


class LiveCheckInline(ReadOnlyInline):
    """Each agent check as it ran (written line by line while the agent runs)."""

    model = ValidationCheck
    fk_name = "validation_run"
    fields = (
        "node",
        "name",
        "status",
        "verdict",
        "started_at",
        "finished_at",
        "duration_s",
        "reasons_text",
        "raw_sha256",
    )
    readonly_fields = fields
    show_change_link = False

    @admin.display(description=gettext_lazy("reasons"))
    def reasons_text(self, obj: ValidationCheck) -> str:
        return "; ".join(reason_messages(obj.reasons or [])) or "—"


class ReportInline(ReadOnlyInline):
    model = ValidationReport
    fields = ("language", "file", "size", "sha256", "created_at")
    readonly_fields = fields
    show_change_link = False


class EventInline(LifecycleEventInline):
    model = ValidationRunEvent


@admin.register(ValidationRun)
class ValidationRunAdmin(ReadOnlyAdmin):
    list_display = (
        "run_number",
        "status",
        "profile",
        "trigger",
        "order",
        "node_list",
        "cluster_accepted",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "profile", "trigger")
    search_fields = ("order__number", "nodes__hostname")
    readonly_fields = (
        "status",
        "profile",
        "trigger",
        "order",
        "requested_by",
        "started_at",
        "finished_at",
        "cluster_accepted",
        "cluster_reasons",
        "cluster_metrics",
        "error",
    )
    exclude = ("nodes", "cluster_verdict", "rules_snapshot")
    inlines = (ResultInline, LiveCheckInline, ReportInline, ArtifactInline, EventInline)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ValidationRun]:
        return super().get_queryset(request).select_related("order").prefetch_related("nodes")

    @admin.display(description=gettext_lazy("No."), ordering="pk")
    def run_number(self, obj: ValidationRun) -> int:
        return obj.pk

    @admin.display(description=gettext_lazy("nodes"))
    def node_list(self, obj: ValidationRun) -> str:
        return ", ".join(n.hostname for n in obj.nodes.all())


@admin.register(ValidationNodeResult)
class ValidationNodeResultAdmin(ReadOnlyAdmin):
    list_display = ("hostname", "run", "accepted", "gpu_model", "device", "created_at")
    list_filter = ("accepted",)
    search_fields = ("hostname",)
    readonly_fields = (
        "run",
        "node",
        "hostname",
        "gpu_model",
        "device",
        "accepted",
        "reasons",
        "notes",
        "rule_results",
        "report_sha256",
    )
    exclude = ("report",)


@admin.register(NodeValidation)
class NodeValidationAdmin(admin.ModelAdmin):
    """The nodes, to re-run validation on idle or in-service ones (staff)."""

    list_display = ("hostname", "site", "node_type", "status", "last_run")
    list_filter = ("status", "site", "node_type")
    search_fields = ("hostname", "serial")
    actions = ("recheck",)
    fields = ("hostname", "site", "node_type", "status")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[NodeValidation]:
        return super().get_queryset(request).select_related("site", "node_type")

    @admin.display(description=gettext_lazy("last validation"))
    def last_run(self, obj: NodeValidation) -> str:
        run = obj.validation_runs.order_by("-created_at", "-pk").first()
        if run is None:
            return "—"
        return format_html(
            "{} · {}", run.get_status_display(), run.created_at.strftime("%Y-%m-%d %H:%M")
        )

    @admin.action(
        description=gettext_lazy("Re-run validation (quick profile)"), permissions=["change"]
    )
    def recheck(self, request: HttpRequest, queryset: QuerySet[NodeValidation]) -> None:
        started = 0
        for node in queryset:
            try:
                services.validation_node_recheck(node=node, actor=request.user)
            except DomainError as exc:
                messages.error(request, exc.message)
            else:
                started += 1
        if started:
            messages.success(
                request,
                ngettext(
                    "Validation queued for %(count)s node.",
                    "Validation queued for %(count)s nodes.",
                    started,
                )
                % {"count": started},
            )


@admin.register(ProvisioningRun)
class ProvisioningRunAdmin(SiteTimeZoneMixin, ReadOnlyAdmin):
    """The runs of each order (provisioning, cleaning, replacement): the way staff find
    the run page (``/<lang>/staff/provisioning/runs/<id>/``: steps, retry, swap, cancel)."""

    site_path = "order__site"
    site_time_fields = ("started_at", "finished_at")
    list_display = ("number", "order", "kind", "status", "started_at", "finished_at", "run_page")
    list_display_links = ("number",)
    list_select_related = ("order", "order__site")
    list_filter = ("status", "kind", "order__site")
    search_fields = ("order__number",)

    @admin.display(description=gettext_lazy("number"), ordering="pk")
    def number(self, obj: ProvisioningRun) -> int:
        return obj.pk

    @admin.display(description=gettext_lazy("run page"))
    def run_page(self, obj: ProvisioningRun) -> str:
        return format_html(
            '<a href="{}">{}</a>',
            reverse("provisioning_run", args=[obj.pk]),
            gettext_lazy("Open the run page"),
        )


# Day two's admin pages (spare pools, incidents, faults, policies, utilisation alerts).
from provisioning.health import admin as health_admin  # noqa: E402, F401
