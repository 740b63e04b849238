"""Admin for metered usage: the records and the CSV upload."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from billing.invoicing.usage import UsageImportError, usage_import_csv
from billing.models import (
    UsageRecord,
)
from core.admin_base import ReadOnlyAdmin


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
                    ngettext(
                        "Usage imported: %(new)s new record, %(same)s already recorded.",
                        "Usage imported: %(new)s new records, %(same)s already recorded.",
                        result.created,
                    )
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
