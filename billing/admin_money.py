"""Credit notes, refunds, metered usage and SLA credits in the back office (read-only;
every write goes through a service)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from billing.exports import fapiao_csv_response
from billing.models import CreditNote, Refund, SlaCredit, UsageRecord
from billing.services.usage import UsageImportError, usage_import_csv
from core.admin_base import ReadOnlyAdmin


@admin.register(CreditNote)
class CreditNoteAdmin(ReadOnlyAdmin):
    list_display = ("number", "invoice", "order", "organisation", "gross_total", "currency")
    list_select_related = ("invoice", "order", "organisation")
    search_fields = ("number", "invoice__number", "order__number", "organisation__name")
    actions = ("export_fapiao_csv",)

    @admin.action(description=gettext_lazy("Export fapiao requests (CSV for the tax software)"))
    def export_fapiao_csv(
        self, request: HttpRequest, queryset: QuerySet[CreditNote]
    ) -> HttpResponse:
        return fapiao_csv_response(credit_notes=queryset)


@admin.register(Refund)
class RefundAdmin(ReadOnlyAdmin):
    list_display = ("number", "invoice", "payment", "amount", "currency", "created_at")
    list_select_related = ("invoice", "payment")
    search_fields = ("number", "invoice__number", "reference", "stripe_refund")


class UsageUploadForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("CSV file"),
        help_text=gettext_lazy(
            "Columns: external_id, order, day (YYYY-MM-DD), quantity (TB), and optionally "
            "metric and node. Nothing is stored when any row is wrong."
        ),
    )


@admin.register(UsageRecord)
class UsageRecordAdmin(ReadOnlyAdmin):
    list_display = ("order", "day", "metric", "quantity", "external_id", "source", "invoice")
    list_select_related = ("order", "invoice")
    list_filter = ("metric", "source")
    search_fields = ("order__number", "external_id", "node_hostname")
    change_list_template = "billing/admin_usage_changelist.html"

    def get_urls(self) -> list[Any]:
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="billing_usagerecord_import",
            ),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Staff upload a usage CSV: all rows are stored, or none with every problem."""
        if not request.user.has_perm("billing.view_usagerecord"):
            raise PermissionDenied
        errors: list[str] = []
        form = UsageUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                text = form.cleaned_data["file"].read().decode("utf-8-sig")
                result = usage_import_csv(text=text, source="csv", actor=request.user)
            except UnicodeDecodeError:
                errors = [_("The file must be UTF-8 text.")]
            except UsageImportError as exc:
                errors = [str(e) for e in exc.errors]
            else:
                messages.success(
                    request,
                    _("Usage imported: %(new)s new record(s), %(same)s already recorded.")
                    % {"new": result.created, "same": result.unchanged},
                )
                return redirect("admin:billing_usagerecord_changelist")
        context = {
            **self.admin_site.each_context(request),
            "title": _("Import usage (CSV)"),
            "opts": self.model._meta,
            "form": form,
            "errors": errors,
        }
        return TemplateResponse(request, "billing/admin_usage_import.html", context)


@admin.register(SlaCredit)
class SlaCreditAdmin(ReadOnlyAdmin):
    list_display = (
        "order",
        "node_ref",
        "period_seq",
        "availability",
        "credit_percent",
        "amount",
        "invoice_line",
        "credit_note",
    )
    list_select_related = ("order", "invoice_line", "credit_note")
    search_fields = ("order__number", "node_ref")
