"""The instant quote's rendered parts, kept per configuration.

The configure page is asked again and again for the same configurations (the landing
page's links, a shared or bookmarked quote, htmx asking again as a field changes back, a
reload). What it shows for one configuration depends only on the configuration, the
language, the shop's data (sites, node types, price books) and the inventory (bookings,
nodes, maintenance); so the parts that depend on nothing else (the form, the bill, the
placement; ``_configure_quote.html`` and ``_configure_end.html``) are rendered once and
kept under a key made of all of these:

- the request's language and its configuration (every query parameter, sorted);
- ``billing.pricing.shop_data``'s generation and the price book in force at each site;
- ``inventory.availability_generation``: any write to the inventory sets a new one;
- the hour (the earliest start a site can deliver moves with time);

and for at most ``KEEP_SECONDS`` (writes that send no signal: raw SQL, a bulk write
outside the services). What is drawn for each request stays out: the CSRF token, the
idempotency key, the hold deadlines (they move with the clock) and whether a customer is
logged in (the accept card). Accepting prices and places the order afresh under row
locks, as before: nothing booked depends on this cache. When the cache cannot be
reached, every page is computed and nothing is kept.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.http import QueryDict
from django.utils import timezone
from django.utils.translation import get_language

from billing.pricing.shop_data import shop_data_with_generation
from inventory.availability_generation import availability_generation

logger = logging.getLogger(__name__)

KEEP_SECONDS = 60


def parts_key(raw: QueryDict) -> str | None:
    """The cache key of the configuration's parts now, or ``None`` (nothing is cached)."""
    availability = availability_generation()
    if availability is None:
        return None
    shop_generation, data = shop_data_with_generation()
    books = sorted((site_id, snap.book.pk) for site_id, snap in data.snapshots.items() if snap)
    query = sorted((name, tuple(raw.getlist(name))) for name in raw)
    hour = timezone.now().strftime("%Y%m%d%H")
    material = repr((get_language(), query, shop_generation, books, availability, hour))
    digest = hashlib.sha256(material.encode()).hexdigest()
    return f"portal:instant-quote:v1:{connection.settings_dict.get('NAME', '')}:{digest}"


def parts_get(key: str | None) -> dict[str, Any] | None:
    if key is None:
        return None
    try:
        return cache.get(key)
    except Exception:
        logger.warning("instant quote: cache unreachable", exc_info=True)
        return None


def parts_keep(key: str | None, parts: dict[str, Any]) -> None:
    if key is None:
        return
    try:
        cache.set(key, parts, KEEP_SECONDS)
    except Exception:
        logger.warning("instant quote: cache unreachable", exc_info=True)
