"""Signed links: email verification (signed, expiring, no table) and invitation tokens."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.core import signing

EMAIL_VERIFICATION_MAX_AGE = timedelta(days=3)
_VERIFY_SALT = "accounts.email-verification"


class VerificationLinkInvalid(Exception):
    """The link was altered, cut short, or signed with another key."""


class VerificationLinkExpired(Exception):
    """The link is genuine but older than ``EMAIL_VERIFICATION_MAX_AGE``."""


@dataclass(frozen=True)
class VerificationClaim:
    user_id: int
    email: str


def email_verification_token(*, user_id: int, email: str) -> str:
    """A URL-safe token naming the user and the address it was sent to, with its time.

    The address is inside so that a link sent to an old address verifies nothing once the
    address has changed.
    """
    return signing.dumps({"u": user_id, "e": email.lower()}, salt=_VERIFY_SALT, compress=True)


def email_verification_read(token: str) -> VerificationClaim:
    try:
        data = signing.loads(
            token, salt=_VERIFY_SALT, max_age=EMAIL_VERIFICATION_MAX_AGE.total_seconds()
        )
    except signing.SignatureExpired as exc:
        raise VerificationLinkExpired from exc
    except signing.BadSignature as exc:
        raise VerificationLinkInvalid from exc
    try:
        return VerificationClaim(user_id=int(data["u"]), email=str(data["e"]))
    except (KeyError, TypeError, ValueError) as exc:  # pragma: no cover - we signed it
        raise VerificationLinkInvalid from exc


def invitation_token() -> str:
    """An unguessable token for an invitation link (256 bits)."""
    return secrets.token_urlsafe(32)
