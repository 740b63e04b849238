"""Admin for metered usage: the records and the CSV import (preview, then confirm).

The import is django-import-export's, with the usage resource
(:class:`~billing.invoicing.resources.UsageRecordPreviewResource`): the preview is a dry
run that lists every row's problems (row, column and reason); the confirm step imports
the whole file in one transaction, or nothing of it. Who may import or void: whoever
has ``billing.record_usage`` (the API's staff sessions need the same). A wrong record is
voided by the "Void the selected records" action with the reason typed beside it.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from import_export.admin import ImportMixin
from import_export.formats import base_formats
from import_export.forms import ImportForm
from import_export.results import Result, RowResult

from billing.invoicing.resources import (
    MAX_UPLOAD_BYTES,
    UsageCSV,
    UsageRecordPreviewResource,
    import_errors,
)
from billing.invoicing.usage import may_record_usage, usage_record_void
from billing.models import UsageRecord
from core.admin_base import ReadOnlyAdmin
from core.csv import CSVFileError, not_csv_message
from core.errors import DomainError

#: The preview lists at most this many problems as messages (the page shows them all).
IMPORT_ERRORS_LISTED = 20


class UsageImportForm(ImportForm):
    """The upload, refused above ``MAX_UPLOAD_BYTES`` before it is read (the API's cap)."""

    def clean_import_file(self) -> Any:
        upload = self.cleaned_data["import_file"]
        if upload is not None and upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                _(
                    "This file has %(size)s MB; at most %(max)s MB are taken at once. Split "
                    "it into smaller files (each is imported whole or not at all)."
                )
                % {
                    "size": f"{upload.size / 1024 / 1024:.1f}",
                    "max": MAX_UPLOAD_BYTES // (1024 * 1024),
                }
            )
        return upload


class VoidActionForm(ActionForm):
    reason = forms.CharField(
        label=gettext_lazy("Reason for voiding"), required=False, max_length=500
    )


@admin.register(UsageRecord)
class UsageRecordAdmin(ImportMixin, ReadOnlyAdmin):
    list_display = (
        "order",
        "day",
        "metric",
        "quantity",
        "external_id",
        "source",
        "voids",
        "void_reason",
        "invoice",
    )
    list_select_related = ("order", "invoice", "voids")
    action_form = VoidActionForm
    actions = ("void_records",)
    list_filter = ("metric", "source")
    search_fields = ("order__number", "external_id", "node_hostname")
    # The changelist's own "Import usage (CSV)" link, not import-export's second button.
    change_list_template = "billing/admin_usage_changelist.html"
    import_export_change_list_template = None
    import_template_name = "admin/billing/usage_import.html"
    resource_classes = [UsageRecordPreviewResource]
    import_form_class = UsageImportForm
    # Records say who imported them (recorded_by); no admin log entry per row.
    skip_admin_log = True

    def get_import_formats(self) -> list[type[base_formats.Format]]:
        return [UsageCSV]

    def has_import_permission(self, request: HttpRequest) -> bool:
        return may_record_usage(request.user)

    def has_record_permission(self, request: HttpRequest) -> bool:
        return may_record_usage(request.user)

    @admin.action(
        description=gettext_lazy("Void the selected records (give the reason)"),
        permissions=["record"],
    )
    def void_records(self, request: HttpRequest, queryset: QuerySet[UsageRecord]) -> None:
        reason = request.POST.get("reason", "")
        done = 0
        for record in queryset:
            try:
                usage_record_void(record=record, reason=reason, actor=request.user)
                done += 1
            except DomainError as exc:
                messages.error(request, f"{record.external_id}: {exc.message}")
        if done:
            messages.success(
                request,
                ngettext(
                    "%(n)s record voided; the next invoice reflects it.",
                    "%(n)s records voided; the next invoice reflects it.",
                    done,
                )
                % {"n": done},
            )

    def get_import_resource_kwargs(self, request: HttpRequest, **kwargs: Any) -> dict[str, Any]:
        return {"source": "csv", "actor": request.user}

    def add_data_read_fail_error_to_form(self, form: forms.Form, e: Exception) -> None:
        if isinstance(e, CSVFileError):
            message = e.message
        elif isinstance(e, UnicodeError):
            message = not_csv_message()
        else:
            message = _("This file cannot be read as CSV (%(error)s).") % {"error": e}
        form.add_error("import_file", message)

    def _report_import_errors(self, request: HttpRequest, result: Result) -> None:
        errors = import_errors(result)
        messages.error(
            request, _("Nothing was imported. Correct these rows and upload the file again:")
        )
        for error in errors[:IMPORT_ERRORS_LISTED]:
            messages.error(request, str(error))
        if len(errors) > IMPORT_ERRORS_LISTED:
            messages.error(
                request,
                _("… and %(count)d more.") % {"count": len(errors) - IMPORT_ERRORS_LISTED},
            )

    def _import_url(self) -> str:
        return reverse("admin:billing_usagerecord_import", current_app=self.admin_site.name)

    def import_action(self, request: HttpRequest, **kwargs: Any) -> HttpResponse:
        """The upload and its preview (a dry run: every problem is listed)."""
        response = super().import_action(request, **kwargs)
        context = getattr(response, "context_data", None)
        if context is not None:
            context["title"] = _("Import usage (CSV)")
            result = context.get("result")
            if result is not None and (result.has_errors() or result.has_validation_errors()):
                self._report_import_errors(request, result)
        return response

    def process_import(self, request: HttpRequest, **kwargs: Any) -> HttpResponse:
        try:
            return super().process_import(request, **kwargs)
        except CSVFileError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(self._import_url())

    def process_result(self, result: Result, request: HttpRequest) -> HttpResponse:
        # The confirm step: the data may have changed since the preview. Then the
        # resource has rolled everything back; say why instead of claiming success.
        if result.has_errors() or result.has_validation_errors():
            self._report_import_errors(request, result)
            return HttpResponseRedirect(self._import_url())
        return super().process_result(result, request)

    def add_success_message(self, result: Result, request: HttpRequest) -> None:
        created = result.totals[RowResult.IMPORT_TYPE_NEW]
        messages.success(
            request,
            ngettext(
                "Usage imported: %(new)s new record, %(same)s already recorded.",
                "Usage imported: %(new)s new records, %(same)s already recorded.",
                created,
            )
            % {"new": created, "same": result.totals[RowResult.IMPORT_TYPE_SKIP]},
        )
