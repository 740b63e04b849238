"""A generation: a token in the shared cache that changes whenever some data changes, so
that whatever is derived from that data and kept (in a process's memory or in the cache)
puts the token in its key or beside its copy and is computed again once it differs.

Used by ``billing.pricing.shop_data`` (sites, node types, price books) and
``inventory.availability_generation`` (bookings, nodes, maintenance). A cache that cannot
be reached never fails a write: the change is logged and readers get ``None`` (keep
nothing, compute afresh).
"""

from __future__ import annotations

import logging
import uuid

from django.core.cache import cache
from django.db import connection, transaction

logger = logging.getLogger(__name__)


class Generation:
    def __init__(self, name: str) -> None:
        self.name = name
        # One callback object per generation: a transaction registers it once, however
        # many rows it writes.
        self._at_commit = self.renew

    def key(self) -> str:
        return f"portal:{self.name}:v1:{connection.settings_dict.get('NAME', '')}:generation"

    def current(self) -> str | None:
        """The current token (one cache ``GET``); ``None`` when the cache is away."""
        key = self.key()
        try:
            token = cache.get(key)
            if token is None:
                cache.add(key, uuid.uuid4().hex, None)
                token = cache.get(key)
        except Exception:
            logger.warning("%s generation: cache unreachable", self.name, exc_info=True)
            return None
        return token

    def renew(self) -> None:
        """A new token now (tests start each from their own data this way)."""
        try:
            cache.set(self.key(), uuid.uuid4().hex, None)
        except Exception:
            logger.warning("%s generation: cache unreachable", self.name, exc_info=True)

    def changed(self) -> None:
        """A new token now, and again when the current transaction commits (so what was
        computed in between, still from the old rows, is kept under a token no one reads
        any more); registered once per transaction."""
        self.renew()
        if not any(entry[1] is self._at_commit for entry in connection.run_on_commit):
            transaction.on_commit(self._at_commit)
