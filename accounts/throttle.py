"""Login throttling in the cache, built so that an attacker cannot lock users out.

Two limits, neither of which one attacker can turn against someone else's account:

- **The (account, client) pair.** ``LOGIN_THROTTLE_MAX_FAILURES`` failures for one account
  from one client IP within ``LOGIN_THROTTLE_WINDOW`` seconds lock that pair for
  ``LOGIN_THROTTLE_LOCKOUT`` seconds: from that client every attempt for that account is
  refused, the right password too. The same account from any other client is not
  affected, so guessing at someone's password from one address never locks its owner out
  of their own address.
- **A client guessing across many accounts** (credential stuffing). When one IP fails
  against more than ``LOGIN_THROTTLE_IP_MAX_ACCOUNTS`` *distinct* accounts within the
  window, that IP is locked for ``LOGIN_THROTTLE_LOCKOUT`` seconds for every account that
  has not logged in successfully from it within ``LOGIN_THROTTLE_KNOWN_CLIENT`` seconds.
  Any number of failures against one account counts as one account here: attacking one
  user never locks a whole address (an office or a carrier NAT) out.

A successful login clears the pair's count and remembers the pair as known. The client is
:func:`client_ip` (proxy-aware through ``PORTAL_TRUSTED_PROXIES``).

Counters are ``core.ratelimit``'s (``cache.add`` + ``cache.incr``, atomic on Redis); windows
are fixed, starting at the first failure. Each lock stores the time it ends, so the message
can say how long is left and a test can move the clock. Keys hold digests, never addresses.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from core import ratelimit

KEY_PREFIX = "portal:login-throttle:"


def now() -> float:
    """The clock the throttle reads (tests move it)."""
    return time.time()


def _max_failures() -> int:
    return int(settings.LOGIN_THROTTLE_MAX_FAILURES)


def _window() -> int:
    return int(settings.LOGIN_THROTTLE_WINDOW)


def _lockout() -> int:
    return int(settings.LOGIN_THROTTLE_LOCKOUT)


def _ip_max_accounts() -> int:
    return int(settings.LOGIN_THROTTLE_IP_MAX_ACCOUNTS)


def _known_client() -> int:
    return int(settings.LOGIN_THROTTLE_KNOWN_CLIENT)


def client_ip(request: HttpRequest) -> str:
    """The client's address: ``REMOTE_ADDR``, or behind ``PORTAL_TRUSTED_PROXIES`` reverse
    proxies the address the outermost trusted proxy saw (from ``X-Forwarded-For``)."""
    proxies = int(settings.PORTAL_TRUSTED_PROXIES)
    if proxies > 0:
        forwarded = [
            part.strip()
            for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if part.strip()
        ]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


# --- Keys -------------------------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _account_digest(account: str) -> str:
    return _digest(account.strip().lower())


def _pair(account: str, ip: str) -> str:
    return f"pair:{_digest(account.strip().lower() + chr(0) + ip)}"


def _client(ip: str) -> str:
    return f"ip:{_digest(ip)}"


def _count_key(subject: str) -> str:
    return f"{KEY_PREFIX}count:{subject}"


def _lock_key(subject: str) -> str:
    return f"{KEY_PREFIX}lock:{subject}"


def _known_key(pair: str) -> str:
    return f"{KEY_PREFIX}known:{pair}"


def _generation_key(client: str) -> str:
    return f"{KEY_PREFIX}generation:{client}"


def _lock(subject: str) -> None:
    cache.set(_lock_key(subject), now() + _lockout(), timeout=_lockout())


def _seconds_left(subject: str) -> float:
    until = cache.get(_lock_key(subject))
    return max(0.0, float(until) - now()) if until is not None else 0.0


# --- The throttle -----------------------------------------------------------------------


@dataclass(frozen=True)
class Lockout:
    seconds_left: float
    # True: the client is locked for guessing across many accounts (not this pair).
    network: bool = False

    @property
    def minutes_left(self) -> int:
        return max(1, math.ceil(self.seconds_left / 60))


def lockout(*, account: str, ip: str) -> Lockout | None:
    """The lock in force for this account from this client, or ``None``: the pair's own
    lock, or the client's lock unless the account has logged in from it before."""
    pair = _pair(account, ip)
    pair_left = _seconds_left(pair)
    if pair_left > 0:
        return Lockout(seconds_left=pair_left)
    client_left = _seconds_left(_client(ip))
    if client_left > 0 and cache.get(_known_key(pair)) is None:
        return Lockout(seconds_left=client_left, network=True)
    return None


def _distinct_accounts_record(*, account: str, ip: str) -> int:
    """Count ``account`` once among the accounts this client failed against in the current
    window; the number of distinct accounts so far."""
    client = _client(ip)
    generation_key = _generation_key(client)
    cache.add(generation_key, secrets.token_hex(8), timeout=_window())
    generation = cache.get(generation_key) or "expired"
    seen = f"{KEY_PREFIX}seen:{client}:{generation}:{_account_digest(account)}"
    counter = f"{KEY_PREFIX}accounts:{client}:{generation}"
    if cache.add(seen, 1, timeout=_window()):
        return ratelimit.hit(counter, window=_window())
    return int(cache.get(counter) or 0)


def failure_record(*, account: str, ip: str) -> Lockout | None:
    """Count a failed attempt for the pair and, once per account, for the client; lock the
    pair, or the client, that went over its limit."""
    pair = _pair(account, ip)
    if ratelimit.hit(_count_key(pair), window=_window()) >= _max_failures():
        _lock(pair)
        cache.delete(_count_key(pair))
    if _distinct_accounts_record(account=account, ip=ip) > _ip_max_accounts():
        _lock(_client(ip))
    return lockout(account=account, ip=ip)


def success_record(*, account: str, ip: str) -> None:
    """A successful login (or a completed password reset) from this client: forget the
    pair's failures and lock, and remember the pair as known, so a lock on the client for
    guessing at other accounts does not keep this account's owner out."""
    pair = _pair(account, ip)
    cache.delete_many([_count_key(pair), _lock_key(pair)])
    cache.set(_known_key(pair), 1, timeout=_known_client())


def send_allowed(*, kind: str, subject: str, every: int = 60) -> bool:
    """At most one email of ``kind`` per ``subject`` every ``every`` seconds."""
    digest = _digest(subject)
    added = cache.add(f"{KEY_PREFIX}send:{kind}:{digest}", 1, timeout=every)
    # None: the cache is down (its errors are ignored). The email is sent: while the cache
    # is away its limits are not kept, as for every limit (core.ratelimit).
    return added is not False
