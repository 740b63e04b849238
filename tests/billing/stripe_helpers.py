"""Stripe stand-ins for tests: what Stripe (or a customer's browser) does on its side.

Not in the product: customers confirm a PaymentIntent in the browser through Stripe.js,
and only Stripe signs webhook bodies.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any

from billing import stripe_api


def payment_intent_confirm(payment_intent_id: str, *, payment_method: str) -> dict[str, Any]:
    """Attach a payment method and confirm, server side (as the browser would)."""
    intents = stripe_api.client().v1.payment_intents
    intents.update(payment_intent_id, params={"payment_method": payment_method})
    return stripe_api._intent_dict(intents.confirm(payment_intent_id))


def webhook_signature_header(
    payload: bytes | str, secret: str, timestamp: int | None = None
) -> str:
    """The ``Stripe-Signature`` header Stripe would send."""
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    t = int(time.time()) if timestamp is None else timestamp
    signed = str(t).encode("ascii") + b"." + payload
    mac = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return f"t={t},{stripe_api.SIGNATURE_SCHEME}={mac}"
