"""One fixed-window rate-limit counter in the cache, for every limit the portal keeps
(failed logins, new estimate PDFs per visitor).

A window starts at the first hit and lasts ``window`` seconds; the count is kept with
``cache.add`` + ``cache.incr`` (atomic on Redis), so concurrent hits are all counted.
Callers build the key (a digest, never an address or an e-mail in clear).
"""

from __future__ import annotations

from django.core.cache import cache


def hit(key: str, *, window: int) -> int:
    """Count one hit under ``key`` in its current window; the hits so far, this one
    included (1 for the first hit of a window)."""
    cache.add(key, 0, timeout=window)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr: this hit opens a new window
        cache.set(key, 1, timeout=window)
        return 1
    # None: the cache is down (django-redis ignores its errors). The limits are kept by
    # the cache, so while it is away they are not kept: logins go on rather than every
    # customer being locked out (the outage is logged and /readyz reports it).
    return 0 if count is None else int(count)


def over_limit(key: str, *, limit: int, window: int) -> bool:
    """Count one hit and say whether the window now holds more than ``limit`` hits."""
    return hit(key, window=window) > limit
