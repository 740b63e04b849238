"""Price books: every write to a book or its entries, each logged in ``PriceChange``.

A book that is in force and priced a quote that was sent is frozen: sent quotes store
their own lines, so an edit could not change them, but the book would no longer say what
those quotes were priced from. Prices change by a new book from a future date (or from
now) instead, usually a copy of the current one (``price_book_create(copy_from=...)``).

Every save is checked by the pricing engine's own ``validate_book``: first the entry on
its own (so that the engine's clear message comes before the database's check
constraint), then the whole book as stored, inside the same transaction, so that a
refused change leaves nothing behind.
"""

from __future__ import annotations

import logging
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, TypeAlias

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

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
    QuoteStatus,
    TaxCategory,
)
from billing.pricing import engine as pricing
from billing.pricing import selectors
from core.errors import DomainError
from inventory.models import Site

logger = logging.getLogger(__name__)

Actor: TypeAlias = User | AnonymousUser | None
PriceEntry: TypeAlias = (
    NodePrice | CardOptionPrice | AddonPrice | FreeService | DiscountRule | Promotion
)

# Every model that belongs to a price book, in the order a copy creates them.
ENTRY_MODELS: tuple[type[models.Model], ...] = (
    NodePrice,
    CardOptionPrice,
    AddonPrice,
    FreeService,
    DiscountRule,
    Promotion,
)
# A quote in one of these statuses was never shown to the customer.
UNSENT_STATUSES = (QuoteStatus.DRAFT, QuoteStatus.PENDING_APPROVAL, QuoteStatus.APPROVED)
# The fields a change log records: everything but the key and the book itself.
_NOT_LOGGED = frozenset({"id", "price_book"})
_BOOK_FIELDS = ("name", "effective_from", "notes", "tax_rates")


# --- Reads the rules need ---------------------------------------------------------------


def price_book_sent_quotes(*, book: PriceBook) -> models.QuerySet[Quote]:
    """Quotes priced from ``book`` that were sent to the customer (whatever came after)."""
    return Quote.objects.filter(price_book=book).exclude(status__in=UNSENT_STATUSES)


def price_book_is_frozen(*, book: PriceBook, now: datetime | None = None) -> bool:
    """In force (effective by now) and used by a sent quote: no more edits."""
    now = now or timezone.now()
    return book.effective_from <= now and price_book_sent_quotes(book=book).exists()


def _check_editable(book: PriceBook) -> None:
    if price_book_is_frozen(book=book):
        raise DomainError(
            _(
                "Price book “%(book)s” is in force and sent quotes were priced from it, so "
                "it cannot change: create a new price book effective from a future date "
                "instead; sent quotes keep their prices."
            )
            % {"book": book.name}
        )


def _check_start(
    *, site: Site, currency: str, effective_from: datetime, book: PriceBook | None = None
) -> None:
    """A book may not start before a quote that another book priced and that was sent:
    that quote would seem to have ignored the book in force when it was made."""
    if timezone.is_naive(effective_from):
        raise DomainError(_("Give the start of the price book with its time zone."))
    sent_since = Quote.objects.filter(
        site=site, currency=currency, created_at__gte=effective_from
    ).exclude(status__in=UNSENT_STATUSES)
    if book is not None:
        sent_since = sent_since.exclude(price_book=book)
    later = sent_since.order_by("created_at").first()
    if later is not None:
        raise DomainError(
            _(
                "Quote %(number)s was made after that moment from another price book and "
                "was sent: a price book cannot start before quotes that were sent. Start it "
                "now or later."
            )
            % {"number": later.number}
        )


def _lock_book(pk: int | None) -> PriceBook:
    if pk is None:
        raise DomainError(_("A price entry needs its price book."))
    return PriceBook.objects.select_for_update().select_related("site").get(pk=pk)


# --- The change log ---------------------------------------------------------------------


def _logged_fields(model: type[models.Model]) -> list[models.Field]:
    return [
        f
        for f in model._meta.concrete_fields
        if f.name not in _NOT_LOGGED and f.editable and not f.auto_created
    ]


def _raw(obj: models.Model, field: models.Field) -> Any:
    """The field's value as the database would compare it (ids for foreign keys)."""
    value = getattr(obj, field.attname)
    if value is None or isinstance(field, models.ForeignKey):
        return value
    try:
        return field.to_python(value)
    except ValidationError:
        return value


def _json(obj: models.Model, field: models.Field) -> Any:
    """The field's value for the log: Decimals as strings in the field's places, dates in
    ISO form, foreign keys by their natural name (a node type's code, a GPU's name)."""
    value = _raw(obj, field)
    if value is None:
        return None
    if isinstance(field, models.ForeignKey):
        related = getattr(obj, field.name)
        return getattr(related, "code", None) or str(related)
    if isinstance(value, Decimal):
        places = getattr(field, "decimal_places", None)
        if places is not None and value.is_finite():
            value = value.quantize(Decimal(1).scaleb(-places))
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def _values(obj: models.Model, names: list[str] | None = None) -> dict[str, Any]:
    fields = _logged_fields(type(obj))
    return {f.name: _json(obj, f) for f in fields if names is None or f.name in names}


def _changed(stored: models.Model, instance: models.Model) -> list[str]:
    return [f.name for f in _logged_fields(type(instance)) if _raw(stored, f) != _raw(instance, f)]


def entry_label(instance: models.Model) -> str:
    """How the log names an entry: ``NodePrice h100-8x-nvlink``."""
    if isinstance(instance, NodePrice):
        key = instance.node_type.code
    elif isinstance(instance, CardOptionPrice):
        key = f"{instance.node_type.code} + {instance.gpu_model.name}"
    elif isinstance(instance, FreeService):
        key = instance.name
    else:
        key = getattr(instance, "code", "") or str(instance.pk)
    return f"{type(instance).__name__} {key}"


def _log(
    book: PriceBook,
    actor: Actor,
    what: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> PriceChange:
    return PriceChange.objects.create(
        price_book=book,
        actor=_user(actor),
        what=what[: PriceChange._meta.get_field("what").max_length],
        before=before,
        after=after,
    )


def _user(actor: Actor) -> User | None:
    if actor is None or not getattr(actor, "is_authenticated", False):
        return None
    return actor


# --- Validation -------------------------------------------------------------------------


def _problems_message(problems: list[str]) -> str:
    return _("This change would make the price book invalid: %(problems)s.") % {
        "problems": "; ".join(problems)
    }


def _validation_message(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        parts = []
        for name, errors in exc.message_dict.items():
            text = " ".join(errors)
            parts.append(text if name == "__all__" else f"{name}: {text}")
        return " ".join(parts)
    return " ".join(exc.messages)


def _entry_engine_book(instance: models.Model, book: PriceBook) -> pricing.PriceBook | None:
    """The entry alone as the engine would see it, so that ``validate_book`` judges it
    before the database's check constraints can refuse it with a less helpful error."""
    site = book.site
    base: dict[str, Any] = {"site": site.code, "currency": book.currency, "vat_rate": site.vat_rate}
    if isinstance(instance, NodePrice):
        nt = instance.node_type
        per_gpu = instance.basis == pricing.Basis.PER_GPU
        node = pricing.NodePrice(
            node_type=nt.code,
            name=nt.name,
            category=pricing.Category(instance.category),
            basis=pricing.Basis(instance.basis),
            units_per_node=nt.gpu_count if per_gpu else 1,
            monthly=instance.monthly,
            daily=instance.daily,
        )
        return pricing.PriceBook(**base, nodes={nt.code: node})
    if isinstance(instance, CardOptionPrice):
        # The card alone, on a free host: only the card's own prices are judged here.
        option = pricing.CardOption(
            code=instance.code,
            name=instance.gpu_model.name,
            gpu_model=instance.gpu_model.name,
            monthly=instance.monthly,
            daily=instance.daily,
            max_per_node=instance.max_per_node,
        )
        host = pricing.NodePrice(
            node_type=instance.node_type.code,
            name=instance.node_type.name,
            category=pricing.Category.BARE_METAL,
            basis=pricing.Basis.PER_NODE,
            units_per_node=1,
            monthly=Decimal(0),
            daily=Decimal(0),
            options=(option,),
        )
        return pricing.PriceBook(**base, nodes={host.node_type: host})
    if isinstance(instance, AddonPrice):
        addon = pricing.AddonPrice(
            code=instance.code,
            name=instance.name,
            unit=pricing.AddonUnit(instance.unit),
            price=instance.price,
        )
        return pricing.PriceBook(**base, nodes={}, addons={addon.code: addon})
    if isinstance(instance, DiscountRule):
        rule = pricing.DiscountRule(
            code=instance.code,
            label=instance.name,
            term=pricing.Term(instance.term),
            multiplier=instance.multiplier,
        )
        return pricing.PriceBook(**base, nodes={}, discounts=(rule,))
    if isinstance(instance, Promotion):
        promo = pricing.Promotion(
            code=instance.code,
            label=instance.name,
            valid_from=instance.valid_from,
            valid_until=instance.valid_until,
            buy=instance.buy,
            get=instance.get,
        )
        return pricing.PriceBook(**base, nodes={}, promotions=(promo,))
    return None  # free services carry no price


def _check_entry(instance: models.Model, book: PriceBook) -> None:
    """Field validation, then the engine on the entry alone, then the model's unique and
    check constraints: a refusal is a ``DomainError`` that says why, never a crash."""
    try:
        instance.full_clean(exclude=["price_book"], validate_constraints=False)
    except ValidationError as exc:
        raise DomainError(_validation_message(exc)) from exc
    alone = _entry_engine_book(instance, book)
    if alone is not None:
        problems = pricing.validate_book(alone)
        if problems:
            raise DomainError(_problems_message(problems))
    try:
        instance.validate_constraints()
    except ValidationError as exc:
        raise DomainError(_validation_message(exc)) from exc


def _check_book(book: PriceBook) -> None:
    """The whole book as now stored (inside the caller's transaction): refuse, and so roll
    everything back, if the engine finds a problem."""
    problems = pricing.validate_book(selectors.price_book_snapshot(book=book).engine)
    if problems:
        raise DomainError(_problems_message(problems))


# --- Price books ------------------------------------------------------------------------


def _copy_entries(source: PriceBook, target: PriceBook, actor: Actor) -> int:
    """Copy every entry of ``source`` into ``target``, one log row per entry."""
    copied = 0
    changes = []
    for model in ENTRY_MODELS:
        rows = list(
            model.objects.filter(price_book=source).select_related(
                *[f.name for f in _logged_fields(model) if isinstance(f, models.ForeignKey)]
            )
        )
        for row in rows:
            row.pk = None
            row._state.adding = True
            row.price_book = target
            changes.append(
                PriceChange(
                    price_book=target,
                    actor=_user(actor),
                    what=_("%(entry)s copied") % {"entry": entry_label(row)},
                    before=None,
                    after=_values(row),
                )
            )
        model.objects.bulk_create(rows)
        copied += len(rows)
    PriceChange.objects.bulk_create(changes)
    return copied


@transaction.atomic
def price_book_create(
    *,
    site: Site,
    name: str,
    effective_from: datetime,
    actor: Actor,
    copy_from: PriceBook | None = None,
    notes: str = "",
) -> PriceBook:
    """A new price book for ``site`` in its currency, optionally with every entry of
    ``copy_from`` (the usual way to change prices: copy, edit, let it come into force)."""
    if not name.strip():
        raise DomainError(_("Give the price book a name."))
    currency = site.currency
    _check_start(site=site, currency=currency, effective_from=effective_from)
    if copy_from is not None and copy_from.currency != currency:
        raise DomainError(
            _(
                "Price book “%(book)s” is in %(from)s and %(site)s bills in %(to)s: copy a "
                "book in the same currency."
            )
            % {
                "book": copy_from.name,
                "from": copy_from.currency,
                "site": site.display_name,
                "to": currency,
            }
        )
    if PriceBook.objects.filter(
        site=site, currency=currency, effective_from=effective_from
    ).exists():
        raise DomainError(
            _("%(site)s already has a price book in %(currency)s starting at that moment.")
            % {"site": site.display_name, "currency": currency}
        )
    book = PriceBook.objects.create(
        site=site,
        name=name.strip(),
        currency=currency,
        effective_from=effective_from,
        notes=notes,
        created_by=_user(actor),
        # The VAT rates per tax category carry over to the copy (data, edited in the admin).
        tax_rates=dict(copy_from.tax_rates or {}) if copy_from is not None else {},
    )
    after: dict[str, Any] = {
        "site": site.code,
        "currency": currency,
        "name": book.name,
        "effective_from": effective_from.isoformat(),
        "notes": notes,
    }
    if copy_from is None:
        _log(book, actor, _("PriceBook created"), None, after)
        return book
    after["copied_from"] = str(copy_from)
    _log(
        book, actor, _("PriceBook created as a copy of %(book)s") % {"book": copy_from}, None, after
    )
    _copy_entries(copy_from, book, actor)
    _check_book(book)
    logger.info("price book %s copied from %s by %s", book.pk, copy_from.pk, _user(actor))
    return book


@transaction.atomic
def price_book_update(
    *,
    book: PriceBook,
    actor: Actor,
    name: str,
    effective_from: datetime,
    notes: str,
    tax_rates: dict[str, Any] | None = None,
) -> PriceBook:
    """Rename a book, move its start, change its notes or its VAT rates per tax category;
    logged like any price change."""
    stored = _lock_book(book.pk)
    _check_editable(stored)
    if not name.strip():
        raise DomainError(_("Give the price book a name."))
    if effective_from != stored.effective_from:
        _check_start(
            site=stored.site,
            currency=stored.currency,
            effective_from=effective_from,
            book=stored,
        )
    if (
        effective_from != stored.effective_from
        and PriceBook.objects.filter(
            site_id=stored.site_id, currency=stored.currency, effective_from=effective_from
        )
        .exclude(pk=stored.pk)
        .exists()
    ):
        raise DomainError(
            _("%(site)s already has a price book in %(currency)s starting at that moment.")
            % {"site": stored.site.display_name, "currency": stored.currency}
        )
    new: dict[str, Any] = {"name": name.strip(), "effective_from": effective_from, "notes": notes}
    new["tax_rates"] = stored.tax_rates if tax_rates is None else _tax_rates_check(tax_rates)
    changed = [f for f in _BOOK_FIELDS if getattr(stored, f) != new[f]]
    if not changed:
        return stored
    before = {f: _book_json(getattr(stored, f)) for f in changed}
    for f in changed:
        setattr(stored, f, new[f])
    stored.save(update_fields=changed)
    _log(
        stored,
        actor,
        f"PriceBook {', '.join(changed)}",
        before,
        {f: _book_json(getattr(stored, f)) for f in changed},
    )
    return stored


def _tax_rates_check(rates: Any) -> dict[str, str]:
    """VAT rates per tax category: known categories, fractions from 0 to 1."""
    if not isinstance(rates, dict):
        raise DomainError(_("Give the VAT rates as an object: category → rate."))
    clean: dict[str, str] = {}
    for category, rate in rates.items():
        if category not in TaxCategory.values:
            raise DomainError(_("Unknown tax category “%(c)s”.") % {"c": category})
        try:
            value = Decimal(str(rate))
        except (InvalidOperation, ValueError):
            value = Decimal(-1)
        if not (Decimal(0) <= value <= Decimal(1)):
            raise DomainError(
                _("The VAT rate of %(c)s must be a fraction from 0 to 1.") % {"c": category}
            )
        clean[category] = str(value)
    return clean


def _book_json(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


@transaction.atomic
def price_book_delete(*, book: PriceBook, actor: Actor) -> None:
    """Delete a book no quote was priced from (its entries and change log go with it)."""
    stored = _lock_book(book.pk)
    if Quote.objects.filter(price_book=stored).exists():
        raise DomainError(
            _(
                "Price book “%(book)s” priced quotes and is kept with them; to change "
                "prices, create a new price book."
            )
            % {"book": stored.name}
        )
    # The log rows go with the book, so the deletion itself is logged here.
    logger.warning(
        "price book %s (%s, from %s) deleted by %s",
        stored.pk,
        stored,
        stored.effective_from.isoformat(),
        _user(actor),
    )
    stored.delete()


# --- Entries ----------------------------------------------------------------------------


def _check_entry_model(instance: models.Model) -> None:
    if not isinstance(instance, ENTRY_MODELS):
        raise TypeError(f"{type(instance).__name__} is not a price-book entry")


@transaction.atomic
def price_entry_save(*, instance: PriceEntry, actor: Actor) -> PriceEntry:
    """Create or change one entry of a price book, log the fields that changed (before
    and after) and check the whole book with the engine. Nothing is saved if refused."""
    _check_entry_model(instance)
    book = _lock_book(instance.price_book_id)
    model = type(instance)
    stored = (
        model.objects.select_for_update().filter(pk=instance.pk).first()
        if instance.pk is not None
        else None
    )
    if stored is not None and stored.price_book_id != book.pk:
        raise DomainError(_("A price entry cannot move to another price book."))
    _check_editable(book)
    if stored is None:
        changed = None
    else:
        changed = _changed(stored, instance)
        if not changed:
            return instance
    _check_entry(instance, book)
    instance.save()
    label = entry_label(instance)
    if changed is None:
        _log(book, actor, _("%(entry)s added") % {"entry": label}, None, _values(instance))
    else:
        _log(
            book,
            actor,
            f"{label} {', '.join(changed)}",
            _values(stored, changed),
            _values(instance, changed),
        )
    _check_book(book)
    return instance


@transaction.atomic
def price_entry_delete(*, instance: PriceEntry, actor: Actor) -> None:
    """Remove one entry of a price book, logging what it was."""
    _check_entry_model(instance)
    book = _lock_book(instance.price_book_id)
    stored = type(instance).objects.select_for_update().filter(pk=instance.pk).first()
    if stored is None:
        return  # already gone
    _check_editable(book)
    before = _values(stored)
    label = entry_label(stored)
    stored.delete()
    _log(book, actor, _("%(entry)s removed") % {"entry": label}, before, None)
    _check_book(book)
