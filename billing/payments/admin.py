"""Admin for invoices (with the bank-transfer action), payments (duplicates flagged)
and the Stripe webhook events received.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from billing.documents.common import payment_document_name
from billing.invoicing.exports import fapiao_csv_response
from billing.models import (
    Invoice,
    InvoiceEvent,
    Payment,
    PaymentEvent,
    PaymentStatus,
    StripeEvent,
)
from billing.orders import services as order_services
from billing.payments import services as payment_services
from billing.pricing.periods import site_today
from core.admin_base import (
    LifecycleEventInline,
    ReadOnlyAdmin,
    ReadOnlyInline,
    SiteTimeZoneMixin,
)
from core.errors import DomainError

# --- Invoices, payments and Stripe events -----------------------------------------------


class BankTransferForm(forms.Form):
    """What staff read off the bank statement when marking an invoice paid."""

    reference = forms.CharField(
        label=gettext_lazy("transfer reference"),
        max_length=100,
        help_text=gettext_lazy("The bank's reference of the incoming transfer."),
    )
    amount = forms.DecimalField(
        label=gettext_lazy("amount received"),
        max_digits=14,
        decimal_places=2,
        help_text=gettext_lazy("At most what is still due; less is recorded as a partial payment."),
    )
    value_date = forms.DateField(
        label=gettext_lazy("value date"),
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text=gettext_lazy("The day the money reached the account (the bank statement's)."),
    )


class InvoiceEventInline(LifecycleEventInline):
    model = InvoiceEvent


class PaymentEventInline(LifecycleEventInline):
    model = PaymentEvent


class PaymentInline(ReadOnlyInline):
    model = Payment
    fields = (
        "created_at",
        "method",
        "status",
        "amount",
        "amount_refunded",
        "currency",
        "reference",
        "stripe_payment_intent",
        "provider_succeeded_at",
        "duplicate",
        "failure_message",
    )
    readonly_fields = fields
    verbose_name_plural = gettext_lazy("payments")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Payment]:
        return super().get_queryset(request).select_related("duplicate_of")

    @admin.display(description=gettext_lazy("duplicate"))
    def duplicate(self, obj: Payment) -> str:
        return duplicate_label(obj)


def duplicate_label(obj: Payment) -> str:
    """The label of a payment flagged as a duplicate ("duplicate of pi_…, refund"); empty
    for a payer."""
    payer = obj.duplicate_of
    if payer is None:
        return ""
    name = payer.stripe_payment_intent or payer.reference or str(payer.pk)
    if obj.duplicate_refund or obj.status == PaymentStatus.REFUNDED:
        return _("duplicate of %(payer)s, refunded %(refund)s") % {
            "payer": name,
            "refund": obj.duplicate_refund or "",
        }
    return _("duplicate of %(payer)s, refund") % {"payer": name}


@admin.register(Invoice)
class InvoiceAdmin(SiteTimeZoneMixin, ReadOnlyAdmin):
    """Invoices come with orders; staff mark bank transfers paid here (an action)."""

    site_path = "order__site"
    site_time_fields = ("due_at", "paid_at")

    list_display = (
        "number",
        "order",
        "organisation",
        "status",
        "gross_total",
        "currency",
        "bank_reference",
        "due_at",
        "paid_at",
        "paid_reference",
    )
    list_select_related = ("order", "organisation")
    list_filter = ("status", "currency")
    search_fields = ("number", "bank_reference", "order__number", "organisation__name")
    inlines = (PaymentInline, InvoiceEventInline)
    actions = ("mark_paid_by_transfer", "export_fapiao_csv")

    @admin.action(description=gettext_lazy("Export fapiao requests (CSV for the tax software)"))
    def export_fapiao_csv(self, request: HttpRequest, queryset: QuerySet[Invoice]) -> HttpResponse:
        return fapiao_csv_response(invoices=queryset)

    def has_mark_paid_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("billing.change_invoice")

    @admin.action(
        description=gettext_lazy("Mark paid by bank transfer…"), permissions=["mark_paid"]
    )
    def mark_paid_by_transfer(
        self, request: HttpRequest, queryset: QuerySet[Invoice]
    ) -> HttpResponse | None:
        """Ask for the transfer's reference on an intermediate page, then record it."""
        invoices = list(queryset.select_related("order", "organisation")[:2])
        if len(invoices) != 1:
            messages.error(
                request, _("Select exactly one invoice: each transfer has its own reference.")
            )
            return None
        invoice = invoices[0]
        if "apply" in request.POST:
            form = BankTransferForm(request.POST)
            if form.is_valid():
                try:
                    recorded = order_services.transfer_record(
                        organisation_id=invoice.organisation_id,
                        currency=invoice.currency,
                        invoice=invoice,
                        reference=form.cleaned_data["reference"],
                        amount=form.cleaned_data["amount"],
                        value_date=form.cleaned_data["value_date"],
                        actor=request.user,
                    )
                except DomainError as exc:
                    form.add_error(None, exc.message)
                else:
                    # Says what happened: paid in full (and the order confirmed), or how
                    # much is still due after a partial payment.
                    messages.success(request, recorded.message())
                    return None
        else:
            form = BankTransferForm(
                initial={"amount": invoice.amount_due, "value_date": site_today(invoice.order.site)}
            )
        context = {
            **self.admin_site.each_context(request),
            "title": _("Mark %(document)s paid by bank transfer")
            % {"document": payment_document_name(invoice)},
            "opts": self.model._meta,
            "invoice": invoice,
            "document_name": payment_document_name(invoice),
            "form": form,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "billing/pay/admin_mark_paid.html", context)


class DuplicateFilter(admin.SimpleListFilter):
    """Payments flagged "duplicate, refund" (another payment paid the invoice first)."""

    title = gettext_lazy("duplicate")
    parameter_name = "duplicate"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("refund", gettext_lazy("duplicate, refund")),
            ("refunded", gettext_lazy("duplicate, refunded")),
            ("payer", gettext_lazy("not a duplicate")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Payment]) -> QuerySet[Payment]:
        duplicates = queryset.filter(duplicate_of__isnull=False)
        refunded = models.Q(status=PaymentStatus.REFUNDED) | ~models.Q(duplicate_refund="")
        if self.value() == "refund":
            return duplicates.exclude(refunded)
        if self.value() == "refunded":
            return duplicates.filter(refunded)
        if self.value() == "payer":
            return queryset.filter(duplicate_of__isnull=True)
        return queryset


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdmin):
    """Every attempt to pay an invoice (written by the payment services and webhooks).
    Staff refund a payment flagged as a duplicate here (an action, after confirming)."""

    list_display = (
        "created_at",
        "invoice",
        "method",
        "status",
        "amount",
        "amount_refunded",
        "currency",
        "reference",
        "stripe_payment_intent",
        "provider_succeeded_at",
        "duplicate",
    )
    list_select_related = ("invoice", "duplicate_of")
    list_filter = (DuplicateFilter, "status", "method", "currency")
    search_fields = ("invoice__number", "reference", "stripe_payment_intent")
    inlines = (PaymentEventInline,)
    actions = ("refund_duplicates",)

    @admin.display(description=gettext_lazy("duplicate"))
    def duplicate(self, obj: Payment) -> str:
        return duplicate_label(obj)

    def has_refund_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("billing.change_payment")

    @admin.action(
        description=gettext_lazy("Refund selected duplicate payments…"), permissions=["refund"]
    )
    def refund_duplicates(
        self, request: HttpRequest, queryset: QuerySet[Payment]
    ) -> HttpResponse | None:
        """Show the flagged duplicates among the selection and what each refund returns;
        on confirmation refund each in full through Stripe, once."""
        selected = list(queryset.select_related("invoice", "duplicate_of").order_by("pk"))
        due = [
            p
            for p in selected
            if p.duplicate_of_id is not None
            and p.stripe_payment_intent
            and not p.duplicate_refund
            and p.status == PaymentStatus.SUCCEEDED
        ]
        if not due:
            messages.warning(
                request,
                _("None of the selected payments is a duplicate waiting for a refund."),
            )
            return None
        if "apply" not in request.POST:
            context = {
                **self.admin_site.each_context(request),
                "title": _("Refund duplicate payments"),
                "opts": self.model._meta,
                "payments": due,
                "skipped": len(selected) - len(due),
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "billing/pay/admin_refund_duplicates.html", context)
        for payment in due:
            try:
                payment, refunded = payment_services.payment_duplicate_refund(
                    payment=payment, actor=request.user
                )
            except DomainError as exc:
                messages.error(request, exc.message)
                continue
            if refunded:
                messages.success(
                    request,
                    _(
                        "Refunded duplicate payment %(pi)s of invoice %(n)s: %(amount)s "
                        "%(cur)s (Stripe refund %(refund)s)."
                    )
                    % {
                        "pi": payment.stripe_payment_intent,
                        "n": payment.invoice.number,
                        "amount": payment.amount,
                        "cur": payment.currency,
                        "refund": payment.duplicate_refund,
                    },
                )
            else:
                messages.warning(
                    request,
                    _("Duplicate payment %(pi)s was already refunded; nothing was done.")
                    % {"pi": payment.stripe_payment_intent},
                )
        return None


@admin.register(StripeEvent)
class StripeEventAdmin(ReadOnlyAdmin):
    """Every verified Stripe webhook event, stored once; flagged ones need a person."""

    list_display = ("received_at", "stripe_id", "type", "status", "error", "processed_at")
    list_filter = ("status", "type")
    search_fields = ("stripe_id", "error")
    fields = ("stripe_id", "type", "status", "error", "received_at", "processed_at", "body")
    readonly_fields = fields

    @admin.display(description=gettext_lazy("payload"))
    def body(self, obj: StripeEvent) -> SafeString:
        return format_html(
            "<pre>{}</pre>", json.dumps(obj.payload, ensure_ascii=False, indent=2, sort_keys=True)
        )
