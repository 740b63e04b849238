"""Django admin for billing: price books (edited here, through the services that log every
change), sales limits, and quotes and orders (shown, never edited: they are made on the
sales pages and by the customer, and their numbers must stay gapless).

Every write to a price book goes through ``billing.services.pricebooks``, which logs it in
``PriceChange`` with the admin user and refuses what would make the book invalid or
rewrite the prices sent quotes were made from; a refusal is a form error or a message,
never a server error. Changelists select their related rows up front, so each runs the
same few queries however many rows it shows.
"""

from __future__ import annotations

import json
from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from billing import quote_pdf
from billing.exports import fapiao_csv_response
from billing.models import (
    AddonPrice,
    CardOptionPrice,
    DiscountRule,
    FreeService,
    Invoice,
    InvoiceEvent,
    NodePrice,
    Order,
    OrderEvent,
    Payment,
    PaymentStatus,
    PriceBook,
    PriceChange,
    Promotion,
    Quote,
    QuoteEvent,
    QuoteLine,
    SalesProfile,
    SellerEntity,
    StripeEvent,
)
from billing.services import orders as order_services
from billing.services import payments as payment_services
from billing.services import pricebooks
from core.admin_base import (
    DomainErrorMessagesMixin,
    ReadOnlyAdmin,
    ReadOnlyInline,
    SiteTimeZoneMixin,
)
from core.errors import DomainError

# The price book's change page lists this many of its latest changes (the rest: a link).
CHANGES_SHOWN = 20


def percent(fraction: Decimal) -> str:
    """0.1250 → "12.5%"."""
    text = f"{(fraction * 100).quantize(Decimal('0.01')):f}".rstrip("0").rstrip(".")
    return f"{text}%"


def _json(value: Any) -> str:
    if value is None:
        return "—"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class _DryRun(Exception):
    """Rolls back the trial run of a service inside form validation."""


# --- Price books ------------------------------------------------------------------------


def _frozen(book: PriceBook | None) -> bool:
    """Whether ``book`` may no longer change (asked once per request and book)."""
    if book is None or book.pk is None:
        return False
    if "_frozen" not in book.__dict__:
        book.__dict__["_frozen"] = pricebooks.price_book_is_frozen(book=book)
    return book.__dict__["_frozen"]


class PriceEntryInline(admin.TabularInline):
    """An entry of a price book: edited while the book may change, shown once frozen.

    Saved by ``PriceBookAdmin.save_formset`` through the services, never by the formset.
    Choices of a foreign key are read once per page, not once per row.
    """

    extra = 0

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_add_permission(request, obj) and not _frozen(obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and not _frozen(obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and not _frozen(obj)

    def formfield_for_foreignkey(
        self, db_field: models.ForeignKey, request: HttpRequest, **kwargs: Any
    ) -> ModelChoiceField | None:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None:
            field.choices = list(field.choices)
        return field


class NodePriceInline(PriceEntryInline):
    model = NodePrice
    fields = ("node_type", "category", "tax_category", "basis", "monthly", "daily", "daily_note")

    def get_queryset(self, request: HttpRequest) -> QuerySet[NodePrice]:
        return super().get_queryset(request).select_related("node_type").order_by("node_type__code")


class CardOptionPriceInline(PriceEntryInline):
    model = CardOptionPrice
    fields = ("node_type", "gpu_model", "monthly", "daily", "max_per_node")

    def get_queryset(self, request: HttpRequest) -> QuerySet[CardOptionPrice]:
        return super().get_queryset(request).select_related("node_type", "gpu_model")


class AddonPriceInline(PriceEntryInline):
    model = AddonPrice
    fields = (
        "code",
        "name",
        "name_zh",
        "unit",
        "price",
        "note",
        "note_zh",
        "tax_category",
        "position",
    )


class FreeServiceInline(PriceEntryInline):
    model = FreeService
    fields = ("name", "name_zh", "position")


class DiscountRuleInline(PriceEntryInline):
    model = DiscountRule
    fields = (
        "code",
        "name",
        "name_zh",
        "term",
        "multiplier",
        "category",
        "node_type",
        "gpu_model",
    )


class PromotionInline(PriceEntryInline):
    model = Promotion
    fields = (
        "code",
        "name",
        "name_zh",
        "valid_from",
        "valid_until",
        "buy",
        "get",
        "category",
        "node_type",
    )


class PriceBookAddForm(forms.ModelForm):
    """A new book, empty or a copy of another. Asks the service itself (in a savepoint
    that is always rolled back) so that a refusal is a form error;
    ``PriceBookAdmin.save_model`` then creates the book for real."""

    copy_from = forms.ModelChoiceField(
        queryset=PriceBook.objects.select_related("site").order_by("site__code", "-effective_from"),
        required=False,
        label=gettext_lazy("copy every entry from"),
        help_text=gettext_lazy(
            "The usual way to change prices: copy the book in force, start it on a future "
            "date, then edit the copy."
        ),
    )

    class Meta:
        model = PriceBook
        fields = ("site", "name", "effective_from", "notes")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        site, name = cleaned.get("site"), cleaned.get("name")
        effective_from = cleaned.get("effective_from")
        if self.errors or not (site and name and effective_from):
            return cleaned
        try:
            with transaction.atomic():
                pricebooks.price_book_create(
                    site=site,
                    name=name,
                    effective_from=effective_from,
                    actor=None,
                    copy_from=cleaned.get("copy_from"),
                    notes=cleaned.get("notes") or "",
                )
                raise _DryRun
        except _DryRun:
            pass
        except DomainError as exc:
            raise ValidationError(exc.message) from exc
        return cleaned


@admin.register(PriceBook)
class PriceBookAdmin(DomainErrorMessagesMixin, admin.ModelAdmin):
    list_display = (
        "name",
        "site",
        "currency",
        "effective_from",
        "frozen",
        "created_by",
        "created_at",
    )
    list_select_related = ("site", "created_by")
    list_filter = ("site", "currency")
    search_fields = ("name", "site__code", "site__name")
    inlines = (
        NodePriceInline,
        CardOptionPriceInline,
        AddonPriceInline,
        FreeServiceInline,
        DiscountRuleInline,
        PromotionInline,
    )
    actions = ("copy_from_tomorrow",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[PriceBook]:
        # ``str(book)`` needs the site; ``frozen`` needs whether a sent quote used it.
        sent = Quote.objects.filter(price_book=OuterRef("pk")).exclude(
            status__in=pricebooks.UNSENT_STATUSES
        )
        return (
            super()
            .get_queryset(request)
            .select_related("site", "created_by")
            .annotate(sent_quotes=Exists(sent))
        )

    @admin.display(description=gettext_lazy("frozen"), boolean=True)
    def frozen(self, obj: PriceBook) -> bool:
        return bool(getattr(obj, "sent_quotes", False)) and obj.effective_from <= timezone.now()

    # --- Forms --------------------------------------------------------------------------

    def get_form(
        self,
        request: HttpRequest,
        obj: PriceBook | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = PriceBookAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: PriceBook | None = None) -> list[str]:
        if obj is None:
            return ["site", "name", "effective_from", "notes", "copy_from"]
        return [
            "site",
            "currency",
            "name",
            "effective_from",
            "notes",
            "tax_rates",
            "state",
            "created_by",
            "created_at",
            "change_log",
        ]

    def get_readonly_fields(
        self, request: HttpRequest, obj: PriceBook | None = None
    ) -> tuple[str, ...]:
        if obj is None:
            return ()
        always = ("site", "currency", "state", "created_by", "created_at", "change_log")
        if _frozen(obj):
            return (*always, "name", "effective_from", "notes", "tax_rates")
        return always

    def get_inlines(self, request: HttpRequest, obj: PriceBook | None = None) -> list[type]:
        # A new book starts empty or as a copy; its entries are edited once it exists.
        return list(self.inlines) if obj is not None else []

    @admin.display(description=gettext_lazy("state"))
    def state(self, obj: PriceBook) -> str:
        if _frozen(obj):
            return _(
                "In force and used by sent quotes: it cannot change. To change prices, copy "
                "it into a new price book effective from a future date; sent quotes keep "
                "their prices."
            )
        if obj.effective_from > timezone.now():
            return _("Not in force yet: changes apply to quotes priced from its start on.")
        return _("In force; no sent quote used it yet, so it may still change.")

    @admin.display(description=gettext_lazy("changes"))
    def change_log(self, obj: PriceBook) -> SafeString | str:
        changes = list(obj.changes.select_related("actor")[:CHANGES_SHOWN])
        if not changes:
            return _("No changes recorded.")
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td>"
            "<td><code>{}</code></td></tr>",
            (
                (
                    timezone.localtime(c.at).strftime("%Y-%m-%d %H:%M:%S"),
                    c.actor or "—",
                    c.what,
                    _json(c.before),
                    _json(c.after),
                )
                for c in changes
            ),
        )
        url = reverse("admin:billing_pricechange_changelist", current_app=self.admin_site.name)
        return format_html(
            "<table><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr>"
            '</thead><tbody>{}</tbody></table><p><a href="{}?price_book__id__exact={}">{}</a></p>',
            _("when"),
            _("who"),
            _("what"),
            _("before"),
            _("after"),
            rows,
            url,
            obj.pk,
            _("All changes of this price book"),
        )

    # --- Saving through the services ----------------------------------------------------

    def save_model(
        self, request: HttpRequest, obj: PriceBook, form: forms.ModelForm, change: bool
    ) -> None:
        if change:
            # A JSON field reads as changed when only its formatting differs.
            tax_changed = "tax_rates" in form.changed_data and obj.tax_rates != (
                form.initial.get("tax_rates") or {}
            )
            if (set(form.changed_data) - {"tax_rates"}) or tax_changed:
                pricebooks.price_book_update(
                    book=obj,
                    actor=request.user,
                    name=obj.name,
                    effective_from=obj.effective_from,
                    notes=obj.notes,
                    tax_rates=obj.tax_rates if tax_changed else None,
                )
            return
        book = pricebooks.price_book_create(
            site=obj.site,
            name=obj.name,
            effective_from=obj.effective_from,
            actor=request.user,
            copy_from=form.cleaned_data.get("copy_from"),
            notes=obj.notes,
        )
        obj.pk = book.pk
        obj.currency = book.currency
        obj.created_by = book.created_by
        obj.created_at = book.created_at
        obj._state.adding = False
        obj._state.db = book._state.db

    def save_formset(
        self,
        request: HttpRequest,
        form: forms.ModelForm,
        formset: forms.BaseModelFormSet,
        change: bool,
    ) -> None:
        instances = formset.save(commit=False)
        for entry in formset.deleted_objects:
            pricebooks.price_entry_delete(instance=entry, actor=request.user)
        for entry in instances:
            pricebooks.price_entry_save(instance=entry, actor=request.user)

    def delete_model(self, request: HttpRequest, obj: PriceBook) -> None:
        pricebooks.price_book_delete(book=obj, actor=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[PriceBook]) -> None:
        try:
            with transaction.atomic():
                for book in queryset:
                    pricebooks.price_book_delete(book=book, actor=request.user)
        except DomainError as exc:
            messages.error(request, exc.message)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(
                reverse(
                    "admin:billing_pricebook_change",
                    args=[object_id],
                    current_app=self.admin_site.name,
                )
            )

    @admin.action(
        description=gettext_lazy("Copy to a new price book effective from tomorrow"),
        permissions=["add"],
    )
    def copy_from_tomorrow(self, request: HttpRequest, queryset: QuerySet[PriceBook]) -> None:
        for book in queryset.order_by("site__code", "effective_from"):
            site = book.site
            tomorrow = timezone.now().astimezone(site.tzinfo).date() + timedelta(days=1)
            start = datetime.combine(tomorrow, time.min, tzinfo=site.tzinfo)
            try:
                copy = pricebooks.price_book_create(
                    site=site,
                    name=_("%(name)s (from %(date)s)") % {"name": book.name, "date": tomorrow},
                    effective_from=start,
                    actor=request.user,
                    copy_from=book,
                )
            except DomainError as exc:
                messages.error(request, exc.message)
                continue
            messages.success(
                request,
                _("Price book “%(copy)s” created from “%(book)s”, in force from %(date)s.")
                % {"copy": copy.name, "book": book.name, "date": tomorrow},
            )


@admin.register(PriceChange)
class PriceChangeAdmin(ReadOnlyAdmin):
    """The log of every price-book change, written by the services only."""

    list_display = ("at", "actor", "price_book", "what")
    list_select_related = ("actor", "price_book__site")
    list_filter = ("price_book__site",)
    search_fields = ("what", "price_book__name", "actor__username")
    fields = ("at", "actor", "price_book", "what", "before_json", "after_json")
    readonly_fields = fields

    @admin.display(description=gettext_lazy("before"))
    def before_json(self, obj: PriceChange) -> str:
        return _json(obj.before)

    @admin.display(description=gettext_lazy("after"))
    def after_json(self, obj: PriceChange) -> str:
        return _json(obj.after)


# --- Sales ------------------------------------------------------------------------------


@admin.register(SalesProfile)
class SalesProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "max_discount_percent", "can_approve")
    list_select_related = ("user",)
    list_filter = ("can_approve",)
    search_fields = ("user__username", "user__email", "user__first_name", "user__last_name")
    autocomplete_fields = ("user",)

    @admin.display(description=gettext_lazy("maximum extra discount"), ordering="max_discount")
    def max_discount_percent(self, obj: SalesProfile) -> str:
        return percent(obj.max_discount)


# --- Quotes and orders (shown only) -----------------------------------------------------


class QuoteLineInline(ReadOnlyInline):
    model = QuoteLine
    fields = (
        "position",
        "line_description",
        "quantity",
        "unit_price",
        "line_basis",
        "line_periods",
        "list_amount",
        "discount_amount",
        "net",
        "vat",
        "gross",
    )
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = gettext_lazy("priced lines")

    # The line as the quote's PDF words it, in the admin's language (not the raw codes).
    @admin.display(description=gettext_lazy("description"))
    def line_description(self, obj: QuoteLine) -> str:
        return obj.localized_description()

    @admin.display(description=gettext_lazy("unit"))
    def line_basis(self, obj: QuoteLine) -> str:
        return quote_pdf.basis_text(obj.unit, obj.period_unit) or obj.unit

    @admin.display(description=gettext_lazy("periods"))
    def line_periods(self, obj: QuoteLine) -> str:
        return quote_pdf.periods_text(obj.periods, obj.period_unit)


class QuoteEventInline(ReadOnlyInline):
    model = QuoteEvent
    fields = ("created_at", "from_label", "to_label", "actor", "reason")
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = gettext_lazy("status history")

    def get_queryset(self, request: HttpRequest) -> QuerySet[QuoteEvent]:
        return super().get_queryset(request).select_related("actor")


@admin.register(Quote)
class QuoteAdmin(SiteTimeZoneMixin, ReadOnlyAdmin):
    """Quotes are made and moved on the sales pages; numbers must stay gapless."""

    site_time_fields = ("created_at",)

    list_display = (
        "number",
        "version",
        "organisation",
        "site",
        "status",
        "gross_total",
        "currency",
        "created_by",
        "created_at",
    )
    list_select_related = ("organisation", "site", "created_by")
    list_filter = ("status", "site", "created_by")
    search_fields = ("number", "organisation__name", "organisation__legal_name")
    inlines = (QuoteLineInline, QuoteEventInline)


class OrderEventInline(ReadOnlyInline):
    model = OrderEvent
    fields = ("created_at", "from_label", "to_label", "actor", "reason")
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = gettext_lazy("status history")

    def get_queryset(self, request: HttpRequest) -> QuerySet[OrderEvent]:
        return super().get_queryset(request).select_related("actor")


@admin.register(Order)
class OrderAdmin(SiteTimeZoneMixin, ReadOnlyAdmin):
    """Orders come from accepted quotes and move through their services."""

    site_time_fields = ("start_at", "end_at", "created_at")

    list_display = (
        "number",
        "quote",
        "organisation",
        "site",
        "status",
        "gross_total",
        "currency",
        "start_at",
        "end_at",
        "created_at",
    )
    list_select_related = ("quote", "organisation", "site")
    list_filter = ("status", "site")
    search_fields = ("number", "quote__number", "organisation__name")
    inlines = (OrderEventInline,)


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


class InvoiceEventInline(ReadOnlyInline):
    model = InvoiceEvent
    fields = ("created_at", "from_label", "to_label", "actor", "reason")
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = gettext_lazy("status history")

    def get_queryset(self, request: HttpRequest) -> QuerySet[InvoiceEvent]:
        return super().get_queryset(request).select_related("actor")


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
                    order_services.invoice_mark_paid_by_transfer(
                        invoice=invoice,
                        reference=form.cleaned_data["reference"],
                        amount=form.cleaned_data["amount"],
                        actor=request.user,
                    )
                except DomainError as exc:
                    form.add_error(None, exc.message)
                else:
                    messages.success(
                        request,
                        _("Invoice %(n)s is paid; order %(o)s is confirmed.")
                        % {"n": invoice.number, "o": invoice.order.number},
                    )
                    return None
        else:
            form = BankTransferForm(initial={"amount": invoice.amount_due})
        context = {
            **self.admin_site.each_context(request),
            "title": _("Mark invoice %(n)s paid by bank transfer") % {"n": invoice.number},
            "opts": self.model._meta,
            "invoice": invoice,
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


@admin.register(SellerEntity)
class SellerEntityAdmin(admin.ModelAdmin):
    """Who sells at each site: on its quotes and payment documents."""

    list_display = ("legal_name", "site", "registration_kind", "registration_number")
    list_select_related = ("site",)
    search_fields = ("legal_name", "legal_name_zh", "registration_number")


# Contracts, dunning, renewals, credit notes, refunds, usage and SLA credits register
# themselves.
from billing import admin_contracts, admin_dunning, admin_money  # noqa: E402, F401
