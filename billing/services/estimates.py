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
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing import estimate_pdf
from billing.models import Estimate, PriceBook
from billing.periods import site_today
from billing.services.selfservice import Configuration
from core import jobs
from core.errors import DomainError
from core.pdf import normalise_language, sha256_of
from inventory.models import NodeType, Site

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
    cache.add(key, 0, RATE_WINDOW_S)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, RATE_WINDOW_S)
        count = 1
    if count > limit:
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
            jobs.enqueue(RENDER_TASK, estimate.pk)
    except IntegrityError:  # the same configuration asked for at the same moment
        return EstimateTicket(estimate=Estimate.objects.get(key=key), created=False)
    return EstimateTicket(estimate=estimate, created=True)


def estimate_render(*, estimate_id: int) -> str:
    """Render and store an estimate's PDF; return its SHA-256. Idempotent."""
    estimate = Estimate.objects.select_related("price_book").get(pk=estimate_id)
    if estimate.is_ready:
        return estimate.sha256
    config = configuration_from_data(estimate.configuration)
    data = estimate_pdf.render_estimate_pdf(
        config=config,
        book=estimate.price_book,
        language=estimate.language,
        reopen_url=settings.PORTAL_BASE_URL + estimate.reopen_path,
        issued=estimate.created_at,
    )
    digest = sha256_of(data)
    with transaction.atomic():
        estimate = Estimate.objects.select_for_update().get(pk=estimate_id)
        if estimate.is_ready:
            return estimate.sha256
        estimate.file.save(f"estimate-{estimate.key[:16]}.pdf", ContentFile(data), save=False)
        estimate.sha256 = digest
        estimate.size = len(data)
        estimate.rendered_at = timezone.now()
        estimate.save(update_fields=["file", "sha256", "size", "rendered_at"])
    return digest


def estimate_refused_message() -> str:
    return _("This configuration cannot be quoted: correct it on the configure page.")
