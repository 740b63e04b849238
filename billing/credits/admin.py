"""Admin for credit notes (红字), refunds and SLA credits: issued through the credit
services, shown read-only.
"""

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

from billing.credits import services as credit_services
from billing.invoicing import services as invoicing
from billing.invoicing.exports import fapiao_csv_response
from billing.models import (
    CreditNote,
    Invoice,
    Payment,
    PriceBook,
    Refund,
    SlaCredit,
    TaxCategory,
)
from core.admin_base import ReadOnlyAdmin
from core.errors import DomainError


class CreditNoteForm(forms.Form):
    invoice = forms.CharField(label=gettext_lazy("invoice number"), max_length=32)
    description = forms.CharField(label=gettext_lazy("description"), max_length=300)
    description_zh = forms.CharField(
        label=gettext_lazy("description (Chinese)"), max_length=300, required=False
    )
    net = forms.DecimalField(
        label=gettext_lazy("credit, excl. VAT"), max_digits=14, decimal_places=2, min_value=0
    )
    tax_category = forms.ChoiceField(label=gettext_lazy("tax category"), choices=TaxCategory)
    reason = forms.CharField(label=gettext_lazy("reason"), widget=forms.Textarea)


class RefundForm(forms.Form):
    payment = forms.IntegerField(label=gettext_lazy("payment id"))
    amount = forms.DecimalField(
        label=gettext_lazy("amount"), max_digits=14, decimal_places=2, min_value=0
    )
    reference = forms.CharField(
        label=gettext_lazy("reference"),
        max_length=255,
        required=False,
        help_text=gettext_lazy("Bank transfers: the reference of the transfer that refunded it."),
    )
    reason = forms.CharField(label=gettext_lazy("reason"), required=False)


def _form_page(
    model_admin: admin.ModelAdmin, request: HttpRequest, form: forms.Form, title: str
) -> TemplateResponse:
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": model_admin.model._meta,
        "form": form,
        "errors": [],
    }
    return TemplateResponse(request, "billing/admin_usage_import.html", context)


@admin.register(CreditNote)
class CreditNoteAdmin(ReadOnlyAdmin):
    list_display = ("number", "invoice", "order", "organisation", "gross_total", "currency")
    list_select_related = ("invoice", "order", "organisation")
    search_fields = ("number", "invoice__number", "order__number", "organisation__name")
    actions = ("export_fapiao_csv",)
    change_list_template = "billing/admin_money_changelist.html"

    def get_urls(self) -> list[Any]:
        return [
            path(
                "issue/",
                self.admin_site.admin_view(self.issue_view),
                name="billing_creditnote_issue",
            ),
            *super().get_urls(),
        ]

    def issue_view(self, request: HttpRequest) -> HttpResponse:
        """Staff issue a credit note (红字) against an invoice (``credit_note_issue``)."""
        if not request.user.has_perm("billing.add_creditnote"):
            raise PermissionDenied
        form = CreditNoteForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            invoice = Invoice.objects.filter(number=data["invoice"].strip()).first()
            if invoice is None:
                form.add_error("invoice", _("No invoice with this number."))
            else:
                book = PriceBook.objects.select_related("site").get(
                    pk=invoice.order.quote.price_book_id
                )
                try:
                    note = credit_services.credit_note_issue(
                        invoice=invoice,
                        lines=[
                            credit_services.CreditLine(
                                description=data["description"],
                                description_zh=data["description_zh"],
                                net=data["net"],
                                vat_rate=invoicing.tax_rate_for(
                                    price_book=book, category=data["tax_category"]
                                ),
                                tax_category=data["tax_category"],
                            )
                        ],
                        reason=data["reason"],
                        actor=request.user,
                    )
                except DomainError as exc:
                    form.add_error(None, exc.message)
                else:
                    messages.success(request, _("Credit note %(n)s issued.") % {"n": note.number})
                    return redirect("admin:billing_creditnote_changelist")
        return _form_page(self, request, form, _("Issue a credit note"))

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
    change_list_template = "billing/admin_money_changelist.html"

    def get_urls(self) -> list[Any]:
        return [
            path(
                "issue/",
                self.admin_site.admin_view(self.issue_view),
                name="billing_refund_issue",
            ),
            *super().get_urls(),
        ]

    def issue_view(self, request: HttpRequest) -> HttpResponse:
        """Staff refund a payment: through Stripe for a card payment, recorded with its
        reference for a bank transfer (``refund_record``)."""
        if not request.user.has_perm("billing.add_refund"):
            raise PermissionDenied
        form = RefundForm(request.POST or None, initial={"payment": request.GET.get("payment")})
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            payment = Payment.objects.filter(pk=data["payment"]).select_related("invoice").first()
            if payment is None:
                form.add_error("payment", _("No payment with this id."))
            else:
                try:
                    refund = credit_services.refund_record(
                        payment=payment,
                        amount=data["amount"],
                        actor=request.user,
                        reason=data["reason"],
                        reference=data["reference"],
                    )
                except DomainError as exc:
                    form.add_error(None, exc.message)
                else:
                    messages.success(request, _("Refund %(n)s recorded.") % {"n": refund.number})
                    return redirect("admin:billing_refund_changelist")
        return _form_page(self, request, form, _("Refund a payment"))


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
