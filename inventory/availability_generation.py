"""The availability generation: a token in the shared cache that changes whenever what
the availability search reads may have changed (a booking, a node, a maintenance window,
a rack or leaf: any write to the inventory's tables).

Pages that cache what they derive from availability (the instant quote, ``portal``) put
the token in their cache keys: a change sets a new token, at once and again when the
transaction commits (so a page computed in between, still seeing the old rows, is stored
under a token no one reads any more), and every later read computes afresh.

Writes reach it through ``post_save``/``post_delete`` of every inventory model and through
``core.lifecycle.written`` (status moves are ``QuerySet.update`` calls, which send no
``post_save``; creations and notes after ``bulk_create`` come through there too). Writes
that send neither (raw SQL, ``QuerySet.update`` outside the lifecycle, ``bulk_create``
without its creation events) are not seen: whoever caches must also bound the age of
what it keeps.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models.signals import post_delete, post_save

from core import lifecycle
from core.generations import Generation

_generation = Generation("availability")


def availability_generation() -> str | None:
    """The current token (one cache ``GET``); ``None`` when the cache cannot be reached
    (then nothing derived from availability may be cached or read from the cache)."""
    return _generation.current()


def availability_changed() -> None:
    """A new token now, and again when the current transaction commits (once per
    transaction, however many rows it writes). A cache that cannot be reached never
    fails the write (bookings go on; pages compute afresh)."""
    _generation.changed()


def forget() -> None:
    """A new token at once, outside any transaction (tests start each from their own
    data: what was kept under the token of the test before must not be read)."""
    _generation.renew()


def _on_write(sender: type, **kwargs: Any) -> None:
    if sender._meta.app_label == "inventory":
        availability_changed()


def connect_signals() -> None:
    """Called once from ``InventoryConfig.ready``."""
    for model in apps.get_app_config("inventory").get_models():
        uid = f"availability-{model._meta.label_lower}"
        post_save.connect(_on_write, sender=model, dispatch_uid=f"{uid}-save")
        post_delete.connect(_on_write, sender=model, dispatch_uid=f"{uid}-delete")
    lifecycle.written.connect(_on_write, dispatch_uid="availability-lifecycle")
