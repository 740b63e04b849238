"""Admin for price books and their entries: the add form, the inlines frozen once a
book is in force, the change log, and the dry run of a price change.
"""

from __future__ import annotations

import json
from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from billing.models import (
    AddonPrice,
    CardOptionPrice,
    DiscountRule,
    FreeService,
    NodePrice,
    PriceBook,
    PriceChange,
    Promotion,
    Quote,
)
from billing.pricing import services as pricebooks
from core.admin_base import (
    DomainErrorMessagesMixin,
    ReadOnlyAdmin,
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
