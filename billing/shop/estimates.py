"""Estimates: a non-binding quote PDF of exactly what the configure page shows, for anyone.

No account, no nodes held and no number from the gapless quote sequence. The request is
answered at once ("being prepared"); the documents queue renders the PDF through
``core.pdf`` (``estimate_render``), and identical configurations (same configuration,
language, price book and day) are served from the stored file. Renders are rate-limited
per client (``ESTIMATE_RENDERS_PER_HOUR``), cached hits are not counted.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing.documents.common import (
    basis_text,
    duration_label,
    line_note,
    node_specs,
    periods_text,
    provider,
    quantity_text,
)
from billing.documents.numerals import rmb_upper
from billing.models import Estimate, PriceBook, Term
from billing.pricing import selectors
from billing.pricing.engine import LineKind, gpu_equivalent
from billing.pricing.periods import rental_period, site_today
from billing.pricing.terms import hold_rows, payment_methods_offered, payment_methods_text
from billing.quotes.documents import placement_texts
from billing.quotes.services import priced_lines_as_rows
from billing.shop.selfservice import Configuration, configuration_price
from core import ratelimit
from core.documents import DocumentKind, register
from core.errors import DomainError
from core.pdf import css_content, normalise_language, sha256_of
from inventory.models import NodeType, Site
from inventory.placement import leaf_summary, unit_summary
from inventory.selectors import availability_search, leaf_units

logger = logging.getLogger(__name__)

RENDER_TASK = "billing.tasks.document_render_estimate"
RATE_WINDOW_S = 3600


class EstimateRateLimited(DomainError):
    """Too many new estimates from one client in the window."""


@dataclass(frozen=True)
class EstimateTicket:
    estimate: Estimate
    created: bool


def configuration_as_data(config: Configuration) -> dict[str, Any]:
    """A configuration as JSON data (codes and strings), stored with the estimate."""
    return {
        "site": config.site.code,
        "node_type": config.node_type.code,
        "node_count": config.node_count,
        "term": config.term,
        "duration": config.duration,
        "start_date": config.start_date.isoformat(),
        "card_gpu_model_id": config.card_gpu_model_id,
        "cards_per_node": config.cards_per_node,
        "addons": [[code, str(quantity)] for code, quantity in sorted(config.addons)],
    }


def configuration_from_data(data: dict[str, Any]) -> Configuration:
    return Configuration(
        site=Site.objects.get(code=data["site"]),
        node_type=NodeType.objects.select_related("gpu_model").get(code=data["node_type"]),
        node_count=int(data["node_count"]),
        term=data["term"],
        duration=int(data["duration"]),
        start_date=date.fromisoformat(data["start_date"]),
        card_gpu_model_id=data.get("card_gpu_model_id"),
        cards_per_node=int(data.get("cards_per_node") or 0),
        addons=tuple((code, Decimal(q)) for code, q in data.get("addons", [])),
    )


def estimate_key(*, data: dict[str, Any], language: str, book: PriceBook, day: date) -> str:
    """Identical configurations priced from the same book on the same day share a key."""
    payload = json.dumps(
        {"c": data, "l": language, "b": book.pk, "d": day.isoformat()}, sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _rate_check(client: str) -> None:
    """At most ``ESTIMATE_RENDERS_PER_HOUR`` new renders per client and hour."""
    limit = settings.ESTIMATE_RENDERS_PER_HOUR
    key = f"estimate-renders:{hashlib.sha256(client.encode()).hexdigest()[:32]}"
    if ratelimit.over_limit(key, limit=limit, window=RATE_WINDOW_S):
        raise EstimateRateLimited(
            ngettext(
                "You have asked for %(n)s new quote PDF in the last hour, the most we "
                "prepare for one visitor. Try again later, or ask our sales team.",
                "You have asked for %(n)s new quote PDFs in the last hour, the most we "
                "prepare for one visitor. Try again later, or ask our sales team.",
                limit,
            )
            % {"n": limit}
        )


def estimate_request(
    *, config: Configuration, book: PriceBook, language: str, reopen_path: str, client: str
) -> EstimateTicket:
    """The estimate of ``config`` in ``language``: the stored one when the same
    configuration was asked for today, else a new row whose PDF the documents queue
    renders after commit. Raises ``EstimateRateLimited`` past the client's allowance."""
    language = normalise_language(language)
    data = configuration_as_data(config)
    key = estimate_key(data=data, language=language, book=book, day=site_today(config.site))
    found = Estimate.objects.filter(key=key).first()
    if found is not None:
        return EstimateTicket(estimate=found, created=False)
    _rate_check(client)
    try:
        with transaction.atomic():
            estimate = Estimate.objects.create(
                key=key,
                language=language,
                configuration=data,
                reopen_path=reopen_path,
                price_book=book,
            )
            ESTIMATE.ask(estimate)
    except IntegrityError:  # the same configuration asked for at the same moment
        return EstimateTicket(estimate=Estimate.objects.get(key=key), created=False)
    return EstimateTicket(estimate=estimate, created=True)


class EstimateKind(DocumentKind[Estimate, Estimate]):
    """The estimate row is its own document: file, SHA-256 and ``rendered_at`` on it,
    rendered once in the estimate's language and never replaced."""

    name = "estimate"
    template = "pdf/estimate.html"
    render_task = RENDER_TASK
    model = Estimate

    def context(self, owner: Estimate, *, language: str) -> dict[str, Any]:
        return estimate_context(
            config=configuration_from_data(owner.configuration),
            book=owner.price_book,
            language=language,
            reopen_url=settings.PORTAL_BASE_URL + owner.reopen_path,
            issued=owner.created_at,
        )

    def filename(self, owner: Estimate, *, language: str) -> str:
        return f"estimate-{owner.key[:16]}.pdf"

    def language(self, owner: Estimate, language: str | None) -> str:
        return owner.language

    def stored(
        self, owner: Estimate, *, language: str | None = None, since: datetime | None = None
    ) -> Estimate | None:
        return owner if owner.is_ready else None

    def store(self, owner: Estimate, *, language: str, data: bytes) -> Estimate:
        with transaction.atomic():
            estimate = Estimate.objects.select_for_update().get(pk=owner.pk)
            if estimate.is_ready:
                return estimate
            estimate.file.save(
                self.filename(estimate, language=language), ContentFile(data), save=False
            )
            estimate.sha256 = sha256_of(data)
            estimate.size = len(data)
            estimate.rendered_at = timezone.now()
            estimate.save(update_fields=["file", "sha256", "size", "rendered_at"])
        return estimate

    def task_args(self, owner: Estimate, *, language: str) -> tuple[Any, ...]:
        return (owner.pk,)


ESTIMATE = register(EstimateKind())


def estimate_render(*, estimate_id: int) -> str:
    """Render and store an estimate's PDF; return its SHA-256. Idempotent."""
    estimate = Estimate.objects.select_related("price_book").get(pk=estimate_id)
    return ESTIMATE.document(estimate).sha256


def estimate_refused_message() -> str:
    return _("This configuration cannot be quoted: correct it on the configure page.")


# --- The estimate's PDF -----------------------------------------------------------------
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
            "period_start": start_at,
            "period_end": end_at,
            "site_timezone": site.timezone,
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
