"""Django admin for the inventory: where operations keep sites, racks, switches and nodes.

Node statuses move only through the state machine (``inventory.services``): the status is
read-only on the change form, and the bulk actions call ``node_bulk_transition``. Nodes
and switches have CSV import (previewed, all or nothing) and export; see
``inventory.resources``. A file of more rows than the page imports at once goes to the
background import (``inventory.csv_jobs``), whose jobs are shown with their progress and
errors. Events and reservations are shown, never edited here.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models, transaction
from django.db.models import QuerySet
from django.forms import ModelChoiceField, ModelMultipleChoiceField
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.formats import number_format
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from import_export.admin import ImportExportModelAdmin
from import_export.formats import base_formats
from import_export.results import Result

from core.admin_base import (
    DomainErrorMessagesMixin,
    EventStatusFilter,
    LifecycleEventInline,
    ReadOnlyAdmin,
    ReadOnlyInline,
    SiteTimeZoneMixin,
)
from core.csv import CSVFileError, EscapedCSV, not_csv_message
from core.errors import DomainError
from core.texts import Text
from inventory import csv_jobs, services
from inventory.models import (
    GPUModel,
    ImportJob,
    ImportJobStatus,
    MaintenanceNotice,
    MaintenancePlan,
    MaintenancePlanEvent,
    MaintenanceWindow,
    Node,
    NodeEvent,
    NodeStatus,
    NodeType,
    Rack,
    Reservation,
    ReservationEvent,
    Site,
    Switch,
    SwitchRole,
)
from inventory.resources import (
    InventoryCSV,
    InventoryResource,
    NodeCSV,
    NodeResource,
    SwitchCSV,
    SwitchResource,
    error_lines,
    sync_import_max_rows,
)

# At most this many failed rows are listed one by one in the messages above an import.
IMPORT_ERRORS_LISTED = 50


# --- Shared pieces ----------------------------------------------------------------------


class SiteScopedChoicesMixin:
    """Rack and leaf switch choices read ``SITE/name`` (names repeat from site to site),
    loaded with their sites in one query rather than one per choice."""

    def formfield_for_foreignkey(
        self, db_field: models.ForeignKey, request: HttpRequest, **kwargs: Any
    ) -> ModelChoiceField | None:
        if db_field.name == "rack":
            kwargs["queryset"] = Rack.objects.select_related("site")
        elif db_field.name == "leaf_switch":
            kwargs["queryset"] = Switch.objects.filter(role=SwitchRole.LEAF).select_related("site")
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and db_field.name == "leaf_switch":
            field.label_from_instance = lambda s: f"{s.site.code}/{s.name}"
        return field


class BackgroundImportForm(forms.Form):
    import_file = forms.FileField(label=gettext_lazy("CSV file"))


class InventoryImportExportAdmin(ImportExportModelAdmin):
    """CSV-only import and export with clear messages for bad files and bad rows.

    The import is previewed (a dry run) before the confirm step writes anything, and the
    confirm step imports the whole file in one transaction or nothing of it. A file of
    more rows than :func:`~inventory.resources.sync_import_max_rows` is refused here and
    imported with "Import in the background" instead (no preview; all or nothing too).
    Exported cells never start a spreadsheet formula (:class:`EscapedCSV`).
    """

    import_format: type[InventoryCSV]
    resource_classes: list[type[InventoryResource]]
    import_template_name = "admin/inventory/import.html"

    def get_import_formats(self) -> list[type[base_formats.Format]]:
        return [self.import_format]

    def get_export_formats(self) -> list[type[base_formats.Format]]:
        return [EscapedCSV]

    def has_import_permission(self, request: HttpRequest) -> bool:
        # An import adds and changes rows: it needs both permissions, not just staff status.
        return (
            super().has_import_permission(request)
            and self.has_add_permission(request)
            and self.has_change_permission(request)
        )

    def get_urls(self) -> list[URLPattern]:
        opts = self.model._meta
        return [
            path(
                "import/background/",
                self.admin_site.admin_view(self.background_import_view),
                name=f"{opts.app_label}_{opts.model_name}_import_background",
            ),
            *super().get_urls(),
        ]

    def get_import_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_import_context_data(**kwargs)
        opts = self.model._meta
        context["sync_import_max_rows"] = number_format(sync_import_max_rows(), force_grouping=True)
        context["background_import_url"] = reverse(
            f"admin:{opts.app_label}_{opts.model_name}_import_background",
            current_app=self.admin_site.name,
        )
        return context

    def background_import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload a file of any size; a worker imports it, and its job page shows how far."""
        if not self.has_import_permission(request):
            raise PermissionDenied
        form = BackgroundImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                job = csv_jobs.import_job_create(
                    kind=self.model._meta.model_name,
                    upload=form.cleaned_data["import_file"],
                    actor=request.user,
                    language=getattr(request, "LANGUAGE_CODE", None),
                )
            except CSVFileError as exc:
                form.add_error("import_file", exc.message)
            else:
                messages.success(
                    request,
                    ngettext(
                        "The file's %(rows)s row is being imported in the background: "
                        "all of the file or, if any row has an error, none of it.",
                        "The file's %(rows)s rows are being imported in the background: "
                        "all of them or, if any row has an error, none.",
                        job.rows_total,
                    )
                    % {"rows": number_format(job.rows_total, force_grouping=True)},
                )
                return HttpResponseRedirect(
                    reverse(
                        "admin:inventory_importjob_change",
                        args=[job.pk],
                        current_app=self.admin_site.name,
                    )
                )
        context = {
            **self.admin_site.each_context(request),
            "title": _("Import in the background"),
            "form": form,
            "opts": self.model._meta,
            "media": self.media + form.media,
            "columns": self.resource_classes[0].column_names(),
            "sync_import_max_rows": number_format(sync_import_max_rows(), force_grouping=True),
            "jobs_url": reverse(
                "admin:inventory_importjob_changelist", current_app=self.admin_site.name
            ),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/inventory/import_background.html", context)

    def process_import(self, request: HttpRequest, **kwargs: Any) -> HttpResponse:
        try:
            return super().process_import(request, **kwargs)
        except CSVFileError as exc:
            # The file changed its standing since the preview (the row limit was lowered).
            messages.error(request, exc.message)
            opts = self.model._meta
            return HttpResponseRedirect(
                reverse(
                    f"admin:{opts.app_label}_{opts.model_name}_import",
                    current_app=self.admin_site.name,
                )
            )

    def add_data_read_fail_error_to_form(self, form: forms.Form, e: Exception) -> None:
        if isinstance(e, CSVFileError):
            message = e.message
        elif isinstance(e, UnicodeError):
            message = not_csv_message()
        else:
            message = _("This file cannot be read as CSV (%(error)s).") % {"error": e}
        form.add_error("import_file", message)

    def _report_import_errors(self, request: HttpRequest, result: Result) -> None:
        resource = self.resource_classes[0]
        column_of = {f.attribute: f.column_name for f in resource.fields.values()}
        failed = len(result.invalid_rows) + len(result.row_errors())
        messages.error(
            request,
            ngettext(
                "Nothing was imported: %(count)d row has errors. "
                "Correct the file and upload it again.",
                "Nothing was imported: %(count)d rows have errors. "
                "Correct the file and upload it again.",
                failed,
            )
            % {"count": failed},
        )
        lines = error_lines(result, column_of)
        for line in lines[:IMPORT_ERRORS_LISTED]:
            messages.error(request, line)
        if len(lines) > IMPORT_ERRORS_LISTED:
            messages.error(
                request,
                _("… and %(count)d more.") % {"count": len(lines) - IMPORT_ERRORS_LISTED},
            )

    def import_action(self, request: HttpRequest, **kwargs: Any) -> HttpResponse:
        response = super().import_action(request, **kwargs)
        context = getattr(response, "context_data", None) or {}
        result = context.get("result")
        if result is not None and (result.has_errors() or result.has_validation_errors()):
            self._report_import_errors(request, result)
        return response

    def process_result(self, result: Result, request: HttpRequest) -> HttpResponse:
        # The confirm step: the data may have changed since the preview. Then the
        # resource has rolled everything back; say why instead of claiming success.
        if result.has_errors() or result.has_validation_errors():
            self._report_import_errors(request, result)
            opts = self.model._meta
            return HttpResponseRedirect(
                reverse(
                    f"admin:{opts.app_label}_{opts.model_name}_import",
                    current_app=self.admin_site.name,
                )
            )
        return super().process_result(result, request)


# --- Sites, racks, switches, GPU models, node types ------------------------------------


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ("code", "name", "city", "timezone", "currency", "vat_rate")
    search_fields = ("code", "name", "city")


@admin.register(Rack)
class RackAdmin(admin.ModelAdmin):
    list_display = ("name", "site", "room", "power_kw")
    list_select_related = ("site",)
    list_filter = ("site",)
    search_fields = ("name", "room", "site__code")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Rack]:
        # Also used by autocomplete and the change form, where ``str(rack)`` needs the site.
        return super().get_queryset(request).select_related("site")


@admin.register(Switch)
class SwitchAdmin(SiteScopedChoicesMixin, InventoryImportExportAdmin):
    resource_classes = [SwitchResource]
    import_format = SwitchCSV
    list_display = ("name", "site", "role", "fabric", "port_speed_gbps", "port_count", "rack")
    list_select_related = ("site", "rack__site")
    list_filter = ("site", "role", "fabric")
    search_fields = ("name",)
    filter_horizontal = ("uplinks",)

    def formfield_for_manytomany(
        self, db_field: models.ManyToManyField, request: HttpRequest, **kwargs: Any
    ) -> ModelMultipleChoiceField | None:
        if db_field.name == "uplinks":
            kwargs["queryset"] = Switch.objects.filter(role=SwitchRole.SPINE).order_by(
                "site__code", "name"
            )
        return super().formfield_for_manytomany(db_field, request, **kwargs)


@admin.register(GPUModel)
class GPUModelAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "memory_gb",
        "memory_bandwidth_tbs",
        "reference_tflops",
        "reference_precision",
        "nvlink_generation",
    )
    search_fields = ("name",)


@admin.register(NodeType)
class NodeTypeAdmin(admin.ModelAdmin):
    list_display = (
        "code",
        "name",
        "gpu_model",
        "gpu_count",
        "interconnect",
        "nic_count",
        "nic_speed_gbps",
        "fabric",
    )
    list_select_related = ("gpu_model",)
    list_filter = ("fabric", "interconnect", "gpu_model")
    search_fields = ("code", "name")
    filter_horizontal = ("optional_gpu_models",)


# --- Nodes ------------------------------------------------------------------------------


class LeafSwitchFilter(admin.RelatedFieldListFilter):
    """Leaf switches as ``SITE/name``: names repeat from one site to the next."""

    def field_choices(
        self, field: models.Field, request: HttpRequest, model_admin: admin.ModelAdmin
    ) -> list[tuple[int, str]]:
        leaves = (
            Switch.objects.filter(role=SwitchRole.LEAF)
            .select_related("site")
            .order_by("site__code", "name")
        )
        return [(s.pk, f"{s.site.code}/{s.name}") for s in leaves]


class NodeReservationInline(ReadOnlyInline):
    model = Reservation
    fields = ("start_at", "end_at", "status", "expires_at", "owner_ref", "created_by")
    readonly_fields = fields
    ordering = ("-start_at",)
    verbose_name_plural = gettext_lazy("reservations")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Reservation]:
        return super().get_queryset(request).select_related("created_by")


class NodeEventInline(LifecycleEventInline):
    model = NodeEvent


@admin.register(Node)
class NodeAdmin(DomainErrorMessagesMixin, SiteScopedChoicesMixin, InventoryImportExportAdmin):
    resource_classes = [NodeResource]
    import_format = NodeCSV
    list_display = (
        "hostname",
        "serial",
        "site",
        "node_type",
        "rack",
        "leaf_switch",
        "status",
        "status_changed_at",
    )
    list_select_related = ("site", "node_type", "rack__site", "leaf_switch")
    list_filter = ("site", "node_type", "status", ("leaf_switch", LeafSwitchFilter))
    search_fields = ("hostname", "serial")
    inlines = (NodeReservationInline, NodeEventInline)
    actions = ("to_maintenance", "back_to_available", "mark_faulty")

    def get_fields(self, request: HttpRequest, obj: Node | None = None) -> list[str]:
        fields = [
            "hostname",
            "serial",
            "bmc_address",
            "site",
            "node_type",
            "rack",
            "leaf_switch",
            "status",
            "notes",
        ]
        if obj is not None:
            fields.insert(fields.index("status") + 1, "status_changed_at")
        return fields

    def get_readonly_fields(self, request: HttpRequest, obj: Node | None = None) -> tuple[str, ...]:
        # A node's status moves only through the state machine (the actions below); on
        # the add form it is the status the node starts in.
        return ("status", "status_changed_at") if obj is not None else ()

    def get_inlines(self, request: HttpRequest, obj: Node | None = None) -> list[type]:
        return list(self.inlines) if obj is not None else []

    def save_model(
        self, request: HttpRequest, obj: Node, form: forms.ModelForm, change: bool
    ) -> None:
        if change:
            changed = [f for f in form.changed_data if f not in ("status", "status_changed_at")]
            if changed:
                services.node_update(
                    node_id=obj.pk,
                    changes={name: getattr(obj, name) for name in changed},
                    actor=request.user,
                    reason=Text("Edited in the admin."),
                )
            return
        created = services.node_create(
            site_id=obj.site_id,
            node_type_id=obj.node_type_id,
            rack_id=obj.rack_id,
            leaf_switch_id=obj.leaf_switch_id,
            hostname=obj.hostname,
            serial=obj.serial,
            bmc_address=obj.bmc_address,
            status=obj.status,
            actor=request.user,
            reason=Text("Added in the admin."),
        )
        if obj.notes:
            created.notes = obj.notes
            created.save(update_fields=["notes"])
        obj.pk = created.pk
        obj.status_changed_at = created.status_changed_at
        obj._state.adding = False
        obj._state.db = created._state.db

    def _move(self, request: HttpRequest, queryset: QuerySet[Node], to_status: str) -> None:
        label = NodeStatus(to_status).label
        moved, refused = services.node_bulk_transition(
            nodes=list(queryset.order_by("hostname")),
            to_status=to_status,
            actor=request.user,
            reason=Text("Moved to “%(status)s” with the admin's bulk action.", status=label),
        )
        if moved:
            messages.success(
                request,
                ngettext(
                    "%(count)d node moved to “%(status)s”.",
                    "%(count)d nodes moved to “%(status)s”.",
                    len(moved),
                )
                % {"count": len(moved), "status": label},
            )
        for message in refused:
            messages.error(request, message)

    @admin.action(description=gettext_lazy("Move to maintenance"), permissions=["change"])
    def to_maintenance(self, request: HttpRequest, queryset: QuerySet[Node]) -> None:
        self._move(request, queryset, NodeStatus.MAINTENANCE)

    @admin.action(description=gettext_lazy("Back to available"), permissions=["change"])
    def back_to_available(self, request: HttpRequest, queryset: QuerySet[Node]) -> None:
        self._move(request, queryset, NodeStatus.AVAILABLE)

    @admin.action(description=gettext_lazy("Mark faulty"), permissions=["change"])
    def mark_faulty(self, request: HttpRequest, queryset: QuerySet[Node]) -> None:
        self._move(request, queryset, NodeStatus.FAULTY)


@admin.register(NodeEvent)
class NodeEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "node", "from_label", "to_label", "actor", "why")
    fields = list_display
    readonly_fields = list_display
    list_select_related = ("node", "actor")
    list_filter = (EventStatusFilter, "node__site")
    search_fields = ("node__hostname", "reason")


# --- Maintenance windows ----------------------------------------------------------------


class _DryRun(Exception):
    """Rolls back the trial run of a service inside form validation."""


class MaintenanceWindowForm(forms.ModelForm):
    """Asks the service itself whether the window may be planned, so that a clash with a
    booking is a form error. The service runs in a savepoint that is always rolled back;
    ``MaintenanceWindowAdmin.save_model`` then plans the window for real."""

    class Meta:
        model = MaintenanceWindow
        fields = ("node", "start_at", "end_at", "reason")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        node = cleaned.get("node")
        start_at, end_at = cleaned.get("start_at"), cleaned.get("end_at")
        if self.instance.pk is not None or self.errors or not (node and start_at and end_at):
            return cleaned
        if end_at <= start_at:
            return cleaned  # the model's own check says so
        try:
            with transaction.atomic():
                services.maintenance_window_create(
                    node=node,
                    start_at=start_at,
                    end_at=end_at,
                    reason=cleaned.get("reason") or "-",
                )
                raise _DryRun
        except _DryRun:
            pass
        except DomainError as exc:
            raise ValidationError(exc.message) from exc
        except ValidationError:
            pass  # field errors: the model validation of this form reports them
        return cleaned


@admin.register(MaintenanceWindow)
class MaintenanceWindowAdmin(SiteTimeZoneMixin, DomainErrorMessagesMixin, admin.ModelAdmin):
    form = MaintenanceWindowForm
    site_path = "node__site"
    site_time_fields = ("start_at", "end_at")
    list_display = ("node", "start_at", "end_at", "reason", "created_by")
    list_select_related = ("node", "created_by")
    list_filter = ("node__site",)
    search_fields = ("node__hostname", "reason")
    autocomplete_fields = ("node",)

    def get_readonly_fields(
        self, request: HttpRequest, obj: MaintenanceWindow | None = None
    ) -> tuple[str, ...]:
        # Planned through the service, which checks the bookings; to move a window,
        # delete it and plan a new one.
        return ("node", "start_at", "end_at", "created_by") if obj is not None else ()

    def save_model(
        self, request: HttpRequest, obj: MaintenanceWindow, form: forms.ModelForm, change: bool
    ) -> None:
        if change:
            obj.save(update_fields=["reason"])
            return
        window = services.maintenance_window_create(
            node=obj.node,
            start_at=obj.start_at,
            end_at=obj.end_at,
            reason=obj.reason,
            actor=request.user,
        )
        obj.pk = window.pk
        obj.created_by = window.created_by
        obj._state.adding = False
        obj._state.db = window._state.db


class MaintenancePlanEventInline(LifecycleEventInline):
    model = MaintenancePlanEvent


class MaintenanceNoticeInline(ReadOnlyInline):
    model = MaintenanceNotice
    fields = ("organisation", "orders", "language", "emailed_at")


@admin.register(MaintenancePlan)
class MaintenancePlanAdmin(SiteTimeZoneMixin, ReadOnlyAdmin):
    """Planned, told, cancelled and completed on the operations console
    (``/staff/operations/maintenance/``), which lists the affected orders first; shown
    here with its history and notices."""

    site_path = "site"
    site_time_fields = ("start_at", "end_at", "notify_at", "announced_at", "created_at")
    list_display = (
        "title",
        "site",
        "start_at",
        "end_at",
        "status",
        "announced_at",
        "override_reason",
        "created_by",
    )
    list_select_related = ("site", "created_by")
    list_filter = ("status", "site")
    search_fields = ("title", "override_reason")
    inlines = (MaintenanceNoticeInline, MaintenancePlanEventInline)


# --- Reservations -----------------------------------------------------------------------


class ReservationEventInline(LifecycleEventInline):
    model = ReservationEvent


@admin.register(Reservation)
class ReservationAdmin(SiteTimeZoneMixin, ReadOnlyAdmin):
    """Bookings are made and released by services (quotes, orders); shown here only."""

    site_path = "node__site"
    site_time_fields = ("start_at", "end_at", "expires_at", "created_at")

    list_display = (
        "node",
        "start_at",
        "end_at",
        "status",
        "expires_at",
        "owner_ref",
        "created_by",
        "created_at",
    )
    list_select_related = ("node", "created_by")
    list_filter = ("status", "node__site")
    search_fields = ("owner_ref", "node__hostname")
    inlines = (ReservationEventInline,)


@admin.register(ReservationEvent)
class ReservationEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "reservation", "node", "from_label", "to_label", "actor")
    fields = (*list_display, "why")
    readonly_fields = fields
    list_select_related = ("reservation__node", "actor")
    list_filter = (EventStatusFilter,)
    search_fields = ("reservation__owner_ref", "reservation__node__hostname", "reason")

    @admin.display(description=gettext_lazy("node"), ordering="reservation__node__hostname")
    def node(self, obj: ReservationEvent) -> str:
        return obj.reservation.node.hostname


# --- CSV imports run in the background --------------------------------------------------


@admin.register(ImportJob)
class ImportJobAdmin(ReadOnlyAdmin):
    """Background CSV imports with their progress and errors; the pages refresh themselves
    while a job is waiting or importing."""

    list_display = (
        "id",
        "what",
        "file_name",
        "status",
        "progress",
        "created_by",
        "created_at",
        "finished_at",
    )
    list_select_related = ("created_by",)
    list_filter = ("status", "kind")
    search_fields = ("file_name",)
    fields = (
        "what",
        "file_name",
        "status",
        "progress",
        "rows_new",
        "rows_updated",
        "rows_unchanged",
        "error_list",
        "created_by",
        "created_at",
        "started_at",
        "finished_at",
    )
    readonly_fields = fields
    # While any job runs, the list and the job page reload themselves this often.
    refresh_seconds = 3

    @admin.display(description=gettext_lazy("what"), ordering="kind")
    def what(self, obj: ImportJob) -> str:
        resource, _csv_format = csv_jobs.IMPORTS.get(obj.kind, (None, None))
        if resource is None:
            return obj.kind
        return str(resource._meta.model._meta.verbose_name_plural)

    @admin.display(description=gettext_lazy("progress"))
    def progress(self, obj: ImportJob) -> str:
        done = csv_jobs.import_job_rows_done(obj)
        total = obj.rows_total
        percent = 100 if not total else min(100, done * 100 // total)
        return _("%(done)s of %(total)s rows checked (%(percent)d%%)") % {
            "done": number_format(done, force_grouping=True),
            "total": number_format(total, force_grouping=True),
            "percent": percent,
        }

    @admin.display(description=gettext_lazy("errors"))
    def error_list(self, obj: ImportJob) -> str:
        if not obj.errors:
            return "-"
        return format_html(
            "<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((e,) for e in obj.errors))
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        active = ImportJob.objects.filter(
            status__in=[ImportJobStatus.PENDING, ImportJobStatus.RUNNING]
        ).exists()
        extra_context = {
            **(extra_context or {}),
            "refresh_seconds": self.refresh_seconds if active else None,
        }
        return super().changelist_view(request, extra_context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        job = ImportJob.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        active = job is not None and not job.is_finished
        extra_context = {
            **(extra_context or {}),
            "refresh_seconds": self.refresh_seconds if active else None,
        }
        return super().change_view(request, object_id, form_url, extra_context)
