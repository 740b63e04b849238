"""What every shop page reads and rarely changes: the sites, the node types and each
site's price book in force (as the pricing engine's snapshot), kept in the process.

The configure page (the instant quote) would otherwise load them on every request: ten
queries before any availability is looked at. Here they are loaded once per process and
reused while three things hold:

- the **generation** in the shared cache is the one they were loaded under. Saving or
  deleting a site, GPU model, node type, price book or price book entry (admin, CSV,
  services: any ``save()``/``delete()``) sets a new generation, at once and again when
  the transaction commits (so a process that reloaded in between, still seeing the old
  rows, reloads again); every process then reloads on its next request;
- no price book has come into force since (``valid_until``: the next book's start);
- they are at most ``MEMO_SECONDS`` old: a backstop for writes that send no signal
  (``QuerySet.update``, ``bulk_create`` outside a saved book, raw SQL, a rolled-back
  change read inside its own transaction): such a change shows within that time.

Reads cost one cache ``GET`` (the generation) when nothing changed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Min
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.utils import timezone

from billing.models import (
    AddonPrice,
    CardOptionPrice,
    DiscountRule,
    FreeService,
    NodePrice,
    PriceBook,
    Promotion,
)
from billing.pricing.catalog import _books_in_force, configure_node_types
from billing.pricing.selectors import BookSnapshot, price_book_snapshot
from core.generations import Generation
from inventory.models import GPUModel, NodeType, Site

MEMO_SECONDS = 60.0
# Saving or deleting any of these changes what the shop pages show.
WATCHED_MODELS: tuple[type, ...] = (
    Site,
    GPUModel,
    NodeType,
    PriceBook,
    NodePrice,
    CardOptionPrice,
    AddonPrice,
    FreeService,
    DiscountRule,
    Promotion,
)


@dataclass(frozen=True)
class ShopData:
    sites: tuple[Site, ...]  # by code
    node_types: tuple[NodeType, ...]  # by code, with their GPU model
    snapshots: dict[int, BookSnapshot]  # site id -> its price book in force (if any)
    valid_until: datetime | None  # when the next price book comes into force
    loaded_at: float = field(default_factory=time.monotonic)

    def snapshot(self, site: Site) -> BookSnapshot | None:
        return self.snapshots.get(site.pk)


_memo: dict[str, tuple[str, ShopData]] = {}  # database name -> (generation, data)
_lock = threading.Lock()


_generation = Generation("shop-data")


def shop_data_load() -> ShopData:
    """Read everything from the database: sites, node types, the books in force and one
    snapshot per book (seven queries each), and the next book's start."""
    now = timezone.now()
    sites = tuple(Site.objects.order_by("code"))
    node_types = tuple(configure_node_types())
    books = _books_in_force(sites, now) if sites else {}
    snapshots = {site_id: price_book_snapshot(book=book) for site_id, book in books.items()}
    valid_until = PriceBook.objects.filter(effective_from__gt=now).aggregate(
        first=Min("effective_from")
    )["first"]
    return ShopData(
        sites=sites, node_types=node_types, snapshots=snapshots, valid_until=valid_until
    )


def shop_data() -> ShopData:
    """The shop's sites, node types and price book snapshots: from this process's memo
    while it is current (see the module's docstring), else loaded again."""
    return shop_data_with_generation()[1]


def shop_data_with_generation() -> tuple[str | None, ShopData]:
    """``shop_data()`` and the generation it is current for (for cache keys of what is
    derived from it)."""
    db = connection.settings_dict.get("NAME", "")
    generation = _generation.current()
    memo = _memo.get(db)
    if memo is not None:
        memo_generation, data = memo
        fresh = time.monotonic() - data.loaded_at < MEMO_SECONDS
        in_force = data.valid_until is None or timezone.now() < data.valid_until
        if memo_generation == generation and fresh and in_force:
            return generation, data
    data = shop_data_load()
    with _lock:
        _memo[db] = (generation, data)
    return generation, data


def shop_data_changed() -> None:
    """Every process reloads on its next read: now, and once the transaction commits."""
    with _lock:
        _memo.clear()
    _generation.changed()


def forget() -> None:
    """Drop this process's memo (tests start each from the database)."""
    with _lock:
        _memo.clear()


def _on_change(sender: type, **kwargs: Any) -> None:
    shop_data_changed()


def connect_signals() -> None:
    """Called once from ``BillingConfig.ready``."""
    for model in WATCHED_MODELS:
        uid = f"shop-data-{model._meta.label_lower}"
        post_save.connect(_on_change, sender=model, dispatch_uid=f"{uid}-save")
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"{uid}-delete")
    m2m_changed.connect(
        _on_change,
        sender=NodeType.optional_gpu_models.through,
        dispatch_uid="shop-data-nodetype-cards",
    )
