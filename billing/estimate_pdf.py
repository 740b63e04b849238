"""The estimate PDF: a non-binding quote of a configuration (``templates/pdf/estimate.html``).

The same lines, add-ons, free services and placement preview as the configure page, in
the page's language, with its validity, the hold and payment rules (``hold_terms``) and
the link that reopens the configuration. No quote number: it is not an offer.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _

from billing import selectors
from billing.models import PriceBook, Term
from billing.numerals import rmb_upper
from billing.periods import rental_period
from billing.pricing import LineKind, gpu_equivalent
from billing.quote_pdf import (
    basis_text,
    duration_label,
    line_note,
    node_specs,
    periods_text,
    placement_texts,
    provider,
    quantity_text,
)
from billing.services.orders import (
    hold_rows,
    payment_methods_offered,
    payment_methods_text,
)
from billing.services.quotes import priced_lines_as_rows
from billing.services.selfservice import Configuration, configuration_price
from core.pdf import css_content, render_pdf
from inventory.placement import leaf_summary, unit_summary
from inventory.selectors import availability_search, leaf_units


def estimate_holds(config: Configuration, *, now: datetime) -> list[dict[str, Any]]:
    """The hold and payment deadline per method offered, as an order placed now gets it."""
    return hold_rows(site=config.site, start_date=config.start_date, now=now)


def estimate_context(
    *,
    config: Configuration,
    book: PriceBook,
    language: str,
    reopen_url: str,
    issued: datetime,
) -> dict[str, Any]:
    snapshot = selectors.price_book_snapshot(book=book)
    site = config.site
    with translation.override(language):
        priced = configuration_price(snapshot=snapshot, config=config)
        rows = priced_lines_as_rows(snapshot, priced)
        names_notes = {(a.code, a.note): a.note_zh for a in snapshot.book.addons.all() if a.note_zh}
        lines = []
        for line in rows:
            if line.kind == "free":
                continue
            line.note_text = line_note(line, names_notes, language)
            line.quantity_text = quantity_text(line.quantity, line.unit)
            line.basis_text = basis_text(line.unit, line.period_unit)
            line.periods_text = periods_text(line.periods, line.period_unit)
            lines.append(line)
        start_at, end_at = rental_period(
            site=site, start_date=config.start_date, term=config.term, duration=config.duration
        )
        found = availability_search(
            site=site,
            node_type=config.node_type,
            count=config.node_count,
            start_at=start_at,
            end_at=end_at,
        )
        placement = ""
        if found.placement is not None:
            leaves = leaf_summary(found.placement)
            unit_count, rails = unit_summary(
                leaves, leaf_units(site=site, leaves=[name for name, _n in leaves])
            )
            placement = placement_texts(
                {
                    "groups": [
                        {
                            "node_type": config.node_type.code,
                            "count": config.node_count,
                            "fabric_code": config.node_type.fabric,
                            "leaves": leaves,
                            "units": unit_count,
                            "rails": rails,
                            "racks": len(found.placement.racks),
                        }
                    ]
                }
            ).get(config.node_type.code, "")
        tz = site.tzinfo
        issued_local = issued.astimezone(tz)
        valid_until = min(
            issued_local.date() + timedelta(days=settings.ESTIMATE_VALID_DAYS), config.start_date
        )
        the_provider = provider(language, site)
        in_words = ""
        if language.lower().startswith("zh") and priced.currency == "CNY":
            in_words = rmb_upper(priced.gross_total)
        return {
            "provider": the_provider,
            "running_left_css": css_content(f"{the_provider.brand} · {_('Estimate')}"),
            "running_right_css": css_content(issued_local.strftime("%Y-%m-%d")),
            "footer_left_css": css_content(f"{the_provider.name} · {the_provider.website}"),
            "issued": issued_local,
            "valid_until": valid_until,
            "site": site,
            "config": config,
            "term_label": Term(config.term).label,
            "duration_label": duration_label(config.term, config.duration),
            "end_date": (end_at - timedelta(days=1)).astimezone(tz).date(),
            "specs": node_specs(config.node_type),
            "placement": placement,
            "free_count": found.free_count,
            "lines": lines,
            "free_lines": [line for line in rows if line.kind == "free"],
            "priced": priced,
            "currency": priced.currency,
            "vat_applies": priced.vat_rate > Decimal("0"),
            "amount_in_words": in_words,
            "book": book,
            "holds": estimate_holds(config, now=issued),
            "payment_methods_text": payment_methods_text(payment_methods_offered()),
            "reopen_url": reopen_url,
            "gpu_equivalent": gpu_equivalent(
                amount=sum(
                    (ln.net for ln in priced.lines if ln.kind in (LineKind.NODE, LineKind.CARD)),
                    Decimal("0"),
                ),
                gpus=config.node_count * (config.node_type.gpu_count or config.cards_per_node),
                months=priced.months,
            ),
        }


def render_estimate_pdf(
    *,
    config: Configuration,
    book: PriceBook,
    language: str,
    reopen_url: str,
    issued: datetime,
) -> bytes:
    context = estimate_context(
        config=config, book=book, language=language, reopen_url=reopen_url, issued=issued
    )
    return render_pdf("pdf/estimate.html", context, language=language)
