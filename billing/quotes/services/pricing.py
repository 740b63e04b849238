"""The adapter between quotes and the pure pricing engine: requests, previews, stored lines."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.utils.translation import gettext as _

from billing.models import ItemKind, Quote, QuoteItem, QuoteLine, Term
from billing.pricing import engine as pricing
from billing.pricing import selectors
from billing.pricing.periods import site_today
from billing.quotes.services.common import ItemSpec
from core.errors import DomainError
from inventory.models import NodeType, Site


def engine_request(
    *, items: list[ItemSpec], term: str, duration: int, on: date, extra_discount: Decimal
) -> pricing.QuoteRequest:
    type_codes = dict(
        NodeType.objects.filter(
            pk__in=[i.node_type_id for i in items if i.node_type_id]
        ).values_list("pk", "code")
    )
    nodes, addons, custom = [], [], []
    for item in items:
        if item.kind == ItemKind.NODE:
            if item.quantity != int(item.quantity):
                raise DomainError(_("Nodes are rented whole: give a whole number of nodes."))
            cards: tuple[tuple[str, int], ...] = ()
            if item.card_gpu_model_id and item.cards_per_node:
                cards = ((f"gpu{item.card_gpu_model_id}", item.cards_per_node),)
            nodes.append(
                pricing.NodeRequest(
                    node_type=type_codes.get(item.node_type_id, f"#{item.node_type_id}"),
                    quantity=int(item.quantity),
                    cards=cards,
                )
            )
        elif item.kind == ItemKind.ADDON:
            addons.append(pricing.AddonRequest(code=item.addon_code, quantity=item.quantity))
        elif item.kind == ItemKind.CUSTOM:
            custom.append(
                pricing.CustomRequest(
                    description=item.description,
                    quantity=item.quantity,
                    unit_price=item.unit_price if item.unit_price is not None else Decimal("-1"),
                    discountable=item.discountable,
                )
            )
        else:
            raise DomainError(_("Unknown line kind “%(kind)s”.") % {"kind": item.kind})
    return pricing.QuoteRequest(
        term=pricing.Term(term),
        duration=duration,
        on=on,
        nodes=tuple(nodes),
        addons=tuple(addons),
        custom=tuple(custom),
        extra_discount=extra_discount,
    )


def quote_price_preview(
    *,
    site: Site,
    term: str,
    duration: int,
    start_date: date,
    items: list[ItemSpec],
    extra_discount: Decimal = Decimal("0"),
) -> tuple[selectors.BookSnapshot, pricing.PricedQuote]:
    """Price without saving anything: live totals, the wizard, instant quotes."""
    snapshot = selectors.price_book_snapshot(book=selectors.price_book_in_force(site=site))
    request = engine_request(
        items=items, term=term, duration=duration, on=start_date, extra_discount=extra_discount
    )
    try:
        priced = pricing.price_quote(snapshot.engine, request)
    except pricing.PricingError as exc:
        raise DomainError(_("This quote cannot be priced: %(reason)s.") % {"reason": exc}) from exc
    return snapshot, priced


def _line_zh(snapshot: selectors.BookSnapshot, line: pricing.PricedLine) -> str:
    if line.kind == pricing.LineKind.ADDON:
        return snapshot.names_zh.get(f"addon:{line.code}", "")
    if line.kind == pricing.LineKind.FREE:
        return snapshot.names_zh.get(f"free:{line.description}", "")
    if line.kind == pricing.LineKind.NODE:
        return snapshot.names_zh.get(f"node:{line.code}", "")
    return ""


def priced_lines_as_rows(
    snapshot: selectors.BookSnapshot, priced: pricing.PricedQuote, *, quote: Quote | None = None
) -> list[QuoteLine]:
    """The engine's lines as (unsaved) ``QuoteLine`` rows: what quotes store, and what
    previews, the wizard and the PDF show, through the same template partial."""
    return [
        QuoteLine(
            quote=quote,
            position=i,
            kind=line.kind.value,
            code=line.code,
            description=line.description,
            description_zh=_line_zh(snapshot, line),
            quantity=line.quantity,
            unit=line.unit,
            unit_price=line.unit_price,
            periods=line.periods,
            period_unit=line.period_unit,
            list_amount=line.list_amount,
            discount_amount=line.discount_total,
            net=line.net,
            vat=line.vat,
            gross=line.gross,
            note=line.note,
            tax_category=line.tax_category,
            vat_rate=line.vat_rate,
            note_zh=(
                snapshot.names_zh.get(f"addon_note:{line.code}", "")
                if line.kind == pricing.LineKind.ADDON
                else ""
            ),
            adjustments=[
                {
                    "code": a.code,
                    "label": a.label,
                    "label_zh": snapshot.names_zh.get(f"rule:{a.code}", ""),
                    "amount": str(a.amount),
                    "kind": a.kind.value,
                    "params": a.param_dict,
                }
                for a in line.adjustments
            ],
        )
        for i, line in enumerate(priced.lines)
    ]


def store_pricing(
    quote: Quote, snapshot: selectors.BookSnapshot, priced: pricing.PricedQuote
) -> None:
    quote.lines.all().delete()
    QuoteLine.objects.bulk_create(priced_lines_as_rows(snapshot, priced, quote=quote))
    quote.price_book = snapshot.book
    quote.currency = priced.currency
    quote.vat_rate = priced.vat_rate
    quote.list_total = priced.list_total
    quote.discount_total = priced.discount_total
    quote.net_total = priced.net_total
    quote.vat_total = priced.vat_total
    quote.gross_total = priced.gross_total


def validate_terms(
    *, site: Site, term: str, duration: int, start_date: date, extra_discount: Decimal
) -> None:
    if term not in pricing.TERM_DURATION:
        raise DomainError(_("Choose a term: daily, monthly, quarterly or annual."))
    lo, hi = pricing.TERM_DURATION[pricing.Term(term)]
    if not (lo <= duration <= hi):
        units = {
            "day": _("days"),
            "month": _("months"),
            "quarter": _("quarters"),
            "year": _("years"),
        }[term]
        raise DomainError(
            _("A %(term)s rental runs from %(lo)s to %(hi)s %(units)s; %(n)s is outside that.")
            % {"term": Term(term).label, "lo": lo, "hi": hi, "units": units, "n": duration}
        )
    if start_date < site_today(site):
        raise DomainError(_("The start date is in the past."))
    if not (Decimal("0") <= extra_discount < Decimal("1")):
        raise DomainError(_("The extra discount must be at least 0% and below 100%."))


def save_items(quote: Quote, items: list[ItemSpec]) -> None:
    quote.items.all().delete()
    QuoteItem.objects.bulk_create(
        [
            QuoteItem(
                quote=quote,
                position=i,
                kind=item.kind,
                node_type_id=item.node_type_id,
                quantity=item.quantity,
                card_gpu_model_id=item.card_gpu_model_id,
                cards_per_node=item.cards_per_node,
                addon_code=item.addon_code,
                description=item.description,
                unit_price=item.unit_price,
                discountable=item.discountable,
            )
            for i, item in enumerate(items)
        ]
    )


def quote_items(quote: Quote) -> list[ItemSpec]:
    return [
        ItemSpec(
            kind=i.kind,
            quantity=i.quantity,
            node_type_id=i.node_type_id,
            card_gpu_model_id=i.card_gpu_model_id,
            cards_per_node=i.cards_per_node,
            addon_code=i.addon_code,
            description=i.description,
            unit_price=i.unit_price,
            discountable=i.discountable,
        )
        for i in quote.items.order_by("position", "pk")
    ]


def reprice(quote: Quote, items: list[ItemSpec]) -> None:
    snapshot, priced = quote_price_preview(
        site=quote.site,
        term=quote.term,
        duration=quote.duration,
        start_date=quote.start_date,
        items=items,
        extra_discount=quote.extra_discount,
    )
    store_pricing(quote, snapshot, priced)
