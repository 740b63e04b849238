"""Quote PDFs: the quote's context for ``templates/pdf/quote.html``, rendered through the
toolkit in ``core.pdf`` and stored once.

``quote_document`` returns the stored ``QuoteDocument`` of a quote in a language. A quote
that was sent (or decided, expired, superseded) is rendered once: the stored file, with
the SHA-256 of its exact bytes, is what the customer got, and a later price-book change
never alters it. A quote that can still change is re-rendered on every call and its row
updated. ``QuoteDocument.created_at`` is the time of the last rendering: a row rendered
before the quote was sent (a draft preview) is replaced once.

The line texts (quantities, periods, notes) and the provider block every document
shares are in ``billing.documents.common``.
"""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils import timezone, translation
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing.documents.common import (
    bank_details,
    basis_text,
    duration_label,
    line_note,
    node_specs,
    periods_text,
    placement_text,
    provider,
    quantity_text,
)
from billing.documents.numerals import rmb_upper
from billing.models import (
    QUOTE_SENT_STATUSES,
    AddonPrice,
    ItemKind,
    Quote,
    QuoteDocument,
    QuoteLine,
    TaxCategory,
    tax_category_reason,
)
from billing.pricing import engine as pricing
from billing.pricing import selectors
from billing.pricing.engine import GpuEquivalent, gpu_equivalent
from billing.pricing.periods import rental_period
from billing.pricing.schedule import billing_periods
from billing.pricing.terms import (
    hold_rows,
    invoice_issue_days,
    payment_methods_offered,
    payment_methods_text,
)
from core.documents import DocumentKind, register
from core.pdf import css_content

logger = logging.getLogger(__name__)

# Statuses whose content can no longer change: their PDF is rendered once and kept.


def _configurations(quote: Quote) -> list[dict[str, Any]]:
    """Each node type in the quote with its count, specs, optional cards and placement."""
    placement = _placement(quote)
    configs: dict[int, dict[str, Any]] = {}
    for item in quote.items.all():
        if item.kind != ItemKind.NODE or item.node_type is None:
            continue
        nt = item.node_type
        config = configs.setdefault(
            nt.pk, {"node_type": nt, "count": 0, "specs": node_specs(nt), "cards": []}
        )
        config["count"] += int(item.quantity)
        if item.card_gpu_model is not None and item.cards_per_node:
            config["cards"].append(
                ngettext(
                    "%(nodes)s node with %(cards)s × %(gpu)s (%(memory)s GB)",
                    "%(nodes)s nodes with %(cards)s × %(gpu)s (%(memory)s GB) each",
                    int(item.quantity),
                )
                % {
                    "nodes": int(item.quantity),
                    "cards": item.cards_per_node,
                    "gpu": item.card_gpu_model.name,
                    "memory": item.card_gpu_model.memory_gb,
                }
            )
    for config in configs.values():
        config["placement"] = placement.get(config["node_type"].code, "")
    return list(configs.values())


def _configuration_rows(configs: list[dict[str, Any]], per_row: int = 3) -> list[dict[str, Any]]:
    """The configurations side by side, ``per_row`` node types per table: each table has
    its node types as columns and one row per spec label."""
    tables = []
    for start in range(0, len(configs), per_row):
        chunk = configs[start : start + per_row]
        labels: list[str] = []
        for config in chunk:
            for label, _value in config["specs"]:
                if label not in labels:
                    labels.append(label)
        rows = [
            (label, [[dict(config["specs"]).get(label, "—")] for config in chunk])
            for label in labels
        ]
        if any(config["cards"] for config in chunk):
            rows.append((_("GPU cards"), [c["cards"] or ["—"] for c in chunk]))
        if any(config["placement"] for config in chunk):
            rows.append((_("Placement"), [[c["placement"] or "—"] for c in chunk]))
        tables.append({"configs": chunk, "rows": rows, "pad": per_row - len(chunk)})
    return tables


def _placement(quote: Quote) -> dict[str, str]:
    """Node type code -> where its nodes are held: leaf switches, racks, fabric."""
    return placement_texts(quote.placement or {})


def placement_texts(placement: dict[str, Any]) -> dict[str, str]:
    """Node type code -> the placement in words, from a placement record's groups (the
    one sentence ``placement_text`` writes for every page and document)."""
    return {g.get("node_type", ""): placement_text(g) for g in placement.get("groups", [])}


def _rental_period(quote: Quote) -> tuple[datetime, datetime]:
    """The quote's rental as stored, ``[start, end)`` (shown by ``period_text``)."""
    return rental_period(
        site=quote.site, start_date=quote.start_date, term=quote.term, duration=quote.duration
    )


def quote_holds(quote: Quote) -> list[dict[str, Any]]:
    """What the quote states about holds once accepted (self-service quotes are accepted
    when sent): the rows of ``hold_rows`` for its site, start and expiry."""
    return hold_rows(
        site=quote.site,
        start_date=quote.start_date,
        now=quote.sent_at or timezone.now(),
        quote_expires_at=quote.expiry,
        self_service=not quote.created_by.is_staff,
    )


def tax_notes(lines: Any) -> list[str]:
    """One note per tax category on the document: what it is and its rate."""
    seen: dict[str, Decimal] = {}
    for line in lines:
        if line.kind == "free":
            continue
        seen.setdefault(line.tax_category, line.vat_rate)
    return [
        _("%(category)s: VAT %(rate)s. %(reason)s")
        % {
            "category": capfirst(str(TaxCategory(code).label)),
            "rate": f"{(rate * 100).normalize():f}%",
            "reason": tax_category_reason(code),
        }
        for code, rate in seen.items()
        if code in TaxCategory.values
    ]


def single_rate(lines: Any, default: Decimal) -> Decimal | None:
    """The one VAT rate of all lines, or ``None`` when the lines have several."""
    rates = {
        (line["vat_rate"] if isinstance(line, dict) else line.vat_rate) or default
        for line in lines
        if (line.get("kind") if isinstance(line, dict) else line.kind) != "free"
    }
    if len(rates) <= 1:
        return next(iter(rates), default)
    return None


def quote_gpu_equivalent(quote: Quote, lines: list[QuoteLine]) -> GpuEquivalent | None:
    """The quote's nodes and cards per GPU-month and GPU-hour (net), or ``None``."""
    gpus = 0
    for item in quote.items.all():
        if item.kind == ItemKind.NODE and item.node_type is not None:
            per_node = item.node_type.gpu_count or item.cards_per_node
            gpus += int(item.quantity) * per_node
    priced = [ln for ln in lines if ln.kind in ("node", "card")]
    if not priced or not gpus:
        return None
    first = priced[0]
    months = first.periods if first.period_unit == "month" else first.periods / Decimal(30)
    amount = sum((ln.net for ln in priced), Decimal("0"))
    return gpu_equivalent(amount=amount, gpus=gpus, months=months)


def promotion_notes(quote: Quote) -> list[str]:
    """The rule of each promotion that applies to a node line of the quote (the Hong Kong
    bare-metal "buy one, get one"), stated in words with what it gives on this quote; a
    line below the promotion's count is told what it would take."""
    book = quote.price_book
    if book is None:
        return []
    categories = {np.node_type_id: np.category for np in book.node_prices.all()}
    counts: dict[Any, int] = {}
    for item in quote.items.all():
        if item.kind == "node" and item.node_type_id:
            counts[item.node_type] = counts.get(item.node_type, 0) + int(item.quantity)
    notes = []
    for promo in book.promotions.select_related("node_type"):
        rule = selectors.engine_promotion(promo, site_code=quote.site.code)
        for node_type, count in counts.items():
            category = categories.get(node_type.pk)
            if category is None or not rule.applies(
                on=quote.start_date,
                site=quote.site.code,
                node_type=node_type.code,
                category=pricing.Category(category),
            ):
                continue
            free = (count // (promo.buy + promo.get)) * promo.get
            every = ngettext(
                "for every %(buy)s %(type)s node paid for, %(get)s more is free",
                "for every %(buy)s %(type)s nodes paid for, %(get)s more are free",
                promo.buy,
            ) % {"buy": promo.buy, "get": promo.get, "type": node_type.display_name}
            notes.append(
                _(
                    "Promotion “%(name)s”: %(every)s, for terms starting from %(start)s to "
                    "%(end)s. On this quote %(free)s of %(count)s nodes are free."
                )
                % {
                    "name": promo.localized_name(),
                    "every": every,
                    "start": promo.valid_from.isoformat(),
                    "end": promo.valid_until.isoformat(),
                    "free": free,
                    "count": count,
                }
            )
    return notes


def salesperson(quote: Quote) -> tuple[str, str]:
    """(name, email) of who speaks for the provider on a quote: the salesperson who made
    it, or for a self-service quote the provider's sales contact, never the customer."""
    creator = quote.created_by
    if creator is not None and creator.is_staff:
        return creator.get_full_name() or creator.get_username(), creator.email or ""
    return (
        settings.PORTAL_SALES_CONTACT_NAME or _("Sales team"),
        settings.PORTAL_SALES_CONTACT_EMAIL or settings.PORTAL_PROVIDER_EMAIL,
    )


def quote_context(quote: Quote, *, language: str) -> dict[str, Any]:
    """Everything ``pdf/quote.html`` shows, translated into ``language``."""
    quote = (
        Quote.objects.select_related("organisation", "site", "created_by", "price_book")
        .prefetch_related("lines", "items__node_type__gpu_model", "items__card_gpu_model")
        .get(pk=quote.pk)
    )
    lines = list(quote.lines.all())
    addon_notes_zh = {
        (a.code, a.note): a.note_zh
        for a in AddonPrice.objects.filter(price_book_id=quote.price_book_id).exclude(note_zh="")
    }
    with translation.override(language):
        tz = quote.site.tzinfo
        issued: datetime = (quote.sent_at or quote.created_at).astimezone(tz)
        priced = []
        for line in lines:
            if line.kind == "free":
                continue
            line.note_text = line_note(line, addon_notes_zh, language)
            line.quantity_text = quantity_text(line.quantity, line.unit)
            line.basis_text = basis_text(line.unit, line.period_unit)
            line.periods_text = periods_text(line.periods, line.period_unit)
            priced.append(line)
        amount_in_words = ""
        if language.lower().startswith("zh") and quote.currency == "CNY":
            amount_in_words = rmb_upper(quote.gross_total)
        party = quote.organisation.legal_name or quote.organisation.name
        the_provider = provider(language, quote.site)
        configurations = _configurations(quote)
        return {
            "quote": quote,
            "organisation": quote.organisation,
            "site": quote.site,
            "provider": the_provider,
            "running_left_css": css_content(f"{the_provider.brand} · {_('Quote')}"),
            "running_right_css": css_content(f"{quote.number} v{quote.version} · {party}"),
            "footer_left_css": css_content(f"{the_provider.name} · {the_provider.website}"),
            "issued": issued,
            "is_final": quote.status in QUOTE_SENT_STATUSES,
            "term_label": quote.get_term_display(),
            "duration_label": duration_label(quote.term, quote.duration),
            "period_start": (period := _rental_period(quote))[0],
            "period_end": period[1],
            "site_timezone": quote.site.timezone,
            "configurations": configurations,
            "configuration_rows": _configuration_rows(configurations),
            "lines": priced,
            "free_lines": [line for line in lines if line.kind == "free"],
            "has_egress": any(line.code == "egress" for line in lines),
            "currency": quote.currency,
            "vat_applies": quote.vat_rate > Decimal("0"),
            "amount_in_words": amount_in_words,
            "expiry": quote.expiry_text,
            "billed_periods": len(
                billing_periods(
                    term=quote.term, duration=quote.duration, start_date=quote.start_date, tz=tz
                )
            ),
            "issue_days": invoice_issue_days(),
            "gpu_equivalent": quote_gpu_equivalent(quote, lines),
            "tax_notes": tax_notes(lines),
            "single_rate": single_rate(lines, quote.vat_rate),
            "holds": quote_holds(quote),
            "payment_methods_text": payment_methods_text(payment_methods_offered()),
            "bank": bank_details(quote.site, language),
            "promotions": promotion_notes(quote),
            "prepared_by": salesperson(quote)[0],
            "prepared_by_email": salesperson(quote)[1],
        }


# --- Stored documents -------------------------------------------------------------------

RENDER_TASK = "billing.tasks.document_render_quote"


class QuoteKind(DocumentKind[Quote, QuoteDocument]):
    """A frozen (sent) quote's PDF is rendered once after sending and kept; a draft's is
    re-rendered on every ``document`` call, and served only when rendered at or after
    ``since`` (when it was asked for)."""

    name = "quote"
    template = "pdf/quote.html"
    render_task = RENDER_TASK
    model = QuoteDocument
    owner_field = "quote"

    def context(self, owner: Quote, *, language: str) -> dict[str, Any]:
        return quote_context(owner, language=language)

    def filename(self, owner: Quote, *, language: str) -> str:
        return f"{owner.number}-v{owner.version}-{language}.pdf"

    def is_current(
        self, document: QuoteDocument, owner: Quote, *, since: datetime | None = None
    ) -> bool:
        if owner.status in QUOTE_SENT_STATUSES:
            # The final document, not a draft rendered before sending.
            return owner.sent_at is None or document.created_at >= owner.sent_at
        return since is not None and document.created_at >= since

    def refreshed(self, owner: Quote) -> Quote:
        return Quote.objects.get(pk=owner.pk)

    def document(self, owner: Quote, *, language: str | None = None) -> QuoteDocument:
        """The quote's PDF, stored with its SHA-256 (see the module docstring)."""
        quote = self.refreshed(owner)
        language = self.language(quote, language)
        frozen = quote.status in QUOTE_SENT_STATUSES
        if frozen:
            found = self.stored(quote, language=language)
            if found is not None:
                return found
        data = self.render(quote, language=language)
        if (
            not frozen
            and Quote.objects.filter(pk=quote.pk, status__in=QUOTE_SENT_STATUSES).exists()
        ):
            # Sent while this draft was rendering: render (and store) the final document.
            return self.document(quote, language=language)
        return self.store(quote, language=language, data=data)


QUOTE = register(QuoteKind())


def render_quote_pdf(*, quote: Quote, language: str) -> bytes:
    """A fresh rendering of the quote (not stored)."""
    return QUOTE.render(quote, language=language)


def quote_document(*, quote: Quote, language: str) -> QuoteDocument:
    """The quote's PDF in ``language``, stored with its SHA-256 (``QuoteKind.document``)."""
    return QUOTE.document(quote, language=language)
