"""Login throttling in the cache: failed attempts counted per email and per client IP.

After ``LOGIN_THROTTLE_MAX_FAILURES`` failures for the same email or the same IP within
``LOGIN_THROTTLE_WINDOW`` seconds, that email (or IP) is locked for
``LOGIN_THROTTLE_LOCKOUT`` seconds: every attempt is refused, the right password too.
A successful login clears the email's counter (not the IP's: one good account must not
reset the count for an address guessing at others).

Counters use ``cache.add`` + ``cache.incr`` (atomic on Redis). Each lock stores the time it
ends, so the message can say how long is left and a test can move the clock.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

KEY_PREFIX = "portal:login-throttle:"


def now() -> float:
    """The clock the throttle reads (tests move it)."""
    return time.time()


def _max_failures() -> int:
    return int(getattr(settings, "LOGIN_THROTTLE_MAX_FAILURES", 5))


def _window() -> int:
    return int(getattr(settings, "LOGIN_THROTTLE_WINDOW", 15 * 60))


def _lockout() -> int:
    return int(getattr(settings, "LOGIN_THROTTLE_LOCKOUT", 15 * 60))


def client_ip(request: HttpRequest) -> str:
    """The client's address: ``REMOTE_ADDR``, or behind ``PORTAL_TRUSTED_PROXIES`` reverse
    proxies the address the outermost trusted proxy saw (from ``X-Forwarded-For``)."""
    proxies = int(getattr(settings, "PORTAL_TRUSTED_PROXIES", 0))
    if proxies > 0:
        forwarded = [
            part.strip()
            for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if part.strip()
        ]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _subjects(email: str, ip: str) -> list[str]:
    digest = hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
    return [f"email:{digest}", f"ip:{ip}"]


def _count_key(subject: str) -> str:
    return f"{KEY_PREFIX}count:{subject}"


def _lock_key(subject: str) -> str:
    return f"{KEY_PREFIX}lock:{subject}"


@dataclass(frozen=True)
class Lockout:
    seconds_left: float

    @property
    def minutes_left(self) -> int:
        return max(1, math.ceil(self.seconds_left / 60))


def lockout(*, email: str, ip: str) -> Lockout | None:
    """The lock in force for this email or this IP (the longer one), or ``None``."""
    moment = now()
    left = 0.0
    for subject in _subjects(email, ip):
        until = cache.get(_lock_key(subject))
        if until is not None and float(until) > moment:
            left = max(left, float(until) - moment)
    return Lockout(seconds_left=left) if left > 0 else None


def failure_record(*, email: str, ip: str) -> Lockout | None:
    """Count a failed attempt; lock the email and/or the IP that reached the limit."""
    for subject in _subjects(email, ip):
        key = _count_key(subject)
        cache.add(key, 0, timeout=_window())
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=_window())
            count = 1
        if count >= _max_failures():
            cache.set(_lock_key(subject), now() + _lockout(), timeout=_lockout())
            cache.delete(key)
    return lockout(email=email, ip=ip)


def success_record(*, email: str) -> None:
    """A successful login forgets the failures counted against this email."""
    subject = _subjects(email, "-")[0]
    cache.delete_many([_count_key(subject), _lock_key(subject)])


def send_allowed(*, kind: str, subject: str, every: int = 60) -> bool:
    """At most one email of ``kind`` per ``subject`` every ``every`` seconds."""
    digest = hashlib.sha256(subject.encode()).hexdigest()[:32]
    return bool(cache.add(f"{KEY_PREFIX}send:{kind}:{digest}", 1, timeout=every))
