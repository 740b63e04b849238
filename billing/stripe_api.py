"""The one module that talks to Stripe (the official ``stripe`` SDK), with a pinned API
version.

Everything else in the portal works in ``Decimal`` amounts with a currency; amounts
become integer minor units (fen, cents) here, at the boundary, and nowhere else.
Settings: ``STRIPE_SECRET_KEY``, ``STRIPE_PUBLISHABLE_KEY``, ``STRIPE_WEBHOOK_SECRET``,
``STRIPE_API_BASE`` (a local stand-in such as localstripe in tests) and
``STRIPE_PAYMENT_METHODS``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import time
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import stripe
from django.conf import settings

# The Stripe API version every request (and so every object and webhook payload we read)
# is made with: the version the installed SDK (stripe 16.x) was generated for. Change it
# together with the SDK, after reading Stripe's upgrade notes.
API_VERSION = "2026-10-28.endive"

# Decimal places of each currency's minor unit (Stripe's "zero-decimal" currencies have 0).
MINOR_UNIT_EXPONENT: dict[str, int] = {"CNY": 2, "HKD": 2, "USD": 2}

# Payment method types offered in the Payment Element unless settings say otherwise.
DEFAULT_METHODS: tuple[str, ...] = ("card", "alipay", "wechat_pay")

# Re-exported so callers never import ``stripe`` themselves.
StripeError = stripe.StripeError
SignatureVerificationError = stripe.SignatureVerificationError


class InvalidPayload(ValueError):
    """A webhook body that is signed correctly but is not a Stripe event."""


# --- Configuration ----------------------------------------------------------------------


def is_configured() -> bool:
    """Whether card payments can be offered: both API keys are set."""
    return bool(settings.STRIPE_SECRET_KEY and settings.STRIPE_PUBLISHABLE_KEY)


def publishable_key() -> str:
    return settings.STRIPE_PUBLISHABLE_KEY


def payment_methods() -> list[str]:
    """The payment method types offered (``STRIPE_PAYMENT_METHODS``)."""
    return list(settings.STRIPE_PAYMENT_METHODS or DEFAULT_METHODS)


def client() -> stripe.StripeClient:
    """A client for the configured account, API version and (optionally) API base."""
    if not settings.STRIPE_SECRET_KEY:
        raise RuntimeError("STRIPE_SECRET_KEY is not set")
    base_addresses: dict[str, str] = {}
    if settings.STRIPE_API_BASE:
        base_addresses["api"] = settings.STRIPE_API_BASE.rstrip("/")
    return stripe.StripeClient(
        settings.STRIPE_SECRET_KEY,
        stripe_version=API_VERSION,
        base_addresses=base_addresses,  # type: ignore[arg-type]
        max_network_retries=2,  # safe: every write carries an idempotency key
    )


# --- Money at the boundary --------------------------------------------------------------


def _exponent(currency: str) -> int:
    try:
        return MINOR_UNIT_EXPONENT[currency.upper()]
    except KeyError:
        raise ValueError(f"Unsupported currency {currency!r}") from None


def to_minor_units(amount: Decimal, currency: str) -> int:
    """``Decimal("16472400.00")`` CNY → ``1647240000`` fen. Exact: a fraction of a minor
    unit (``0.001``) is refused, never rounded."""
    if not isinstance(amount, Decimal):
        raise TypeError("amount must be a Decimal")
    if not amount.is_finite():
        raise ValueError(f"Not an amount: {amount}")
    scaled = amount.scaleb(_exponent(currency))
    try:
        minor = scaled.to_integral_exact()
    except InvalidOperation:  # pragma: no cover - only with a trapping context
        raise ValueError(f"{amount} {currency} has a fraction of a minor unit") from None
    if minor != scaled:
        raise ValueError(f"{amount} {currency} has a fraction of a minor unit")
    return int(minor)


def from_minor_units(minor: int, currency: str) -> Decimal:
    """``1647240000`` fen → ``Decimal("16472400.00")`` CNY."""
    if isinstance(minor, bool) or not isinstance(minor, int):
        raise TypeError("minor units must be an int")
    exponent = _exponent(currency)
    return Decimal(minor).scaleb(-exponent).quantize(Decimal(1).scaleb(-exponent))


# --- API calls --------------------------------------------------------------------------


def _method_options(methods: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if "wechat_pay" in methods:
        options["wechat_pay"] = {"client": "web"}
    return options


def payment_intent_create(
    *,
    amount: Decimal,
    currency: str,
    invoice_number: str,
    order_number: str,
    idempotency_key: str,
    methods: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A PaymentIntent for an invoice; returns ``id``, ``client_secret``, ``status``,
    ``amount`` (minor units) and ``currency``."""
    methods = list(methods) if methods is not None else payment_methods()
    params: dict[str, Any] = {
        "amount": to_minor_units(amount, currency),
        "currency": currency.lower(),
        "payment_method_types": methods,
        "metadata": {"invoice_number": invoice_number, "order_number": order_number},
    }
    options = _method_options(methods)
    if options:
        params["payment_method_options"] = options
    intent = client().v1.payment_intents.create(
        params=params,  # type: ignore[arg-type]
        options={"idempotency_key": idempotency_key},
    )
    return _intent_dict(intent)


def payment_intent_retrieve(payment_intent_id: str) -> dict[str, Any]:
    return _intent_dict(client().v1.payment_intents.retrieve(payment_intent_id))


def payment_intent_cancel(payment_intent_id: str) -> dict[str, Any]:
    """Cancel a PaymentIntent that has not succeeded (an expired order's)."""
    return _intent_dict(client().v1.payment_intents.cancel(payment_intent_id))


def payment_intent_amount_refunded(payment_intent_id: str) -> tuple[int, str]:
    """How much of a PaymentIntent's charge has been refunded, in minor units, and the
    currency (``0`` when it has no charge)."""
    intent = _plain(
        client().v1.payment_intents.retrieve(
            payment_intent_id, params={"expand": ["latest_charge"]}
        )
    )
    charge = intent.get("latest_charge")
    if not charge or isinstance(charge, str):
        return 0, str(intent.get("currency") or "")
    return int(charge.get("amount_refunded") or 0), str(charge.get("currency") or "")


def refund_create(
    *, payment_intent_id: str, amount: Decimal, currency: str, idempotency_key: str
) -> dict[str, Any]:
    """Refund part or all of a PaymentIntent; returns ``id``, ``amount``, ``status``."""
    refund = _plain(
        client().v1.refunds.create(
            params={
                "payment_intent": payment_intent_id,
                "amount": to_minor_units(amount, currency),
            },
            options={"idempotency_key": idempotency_key},
        )
    )
    return {
        "id": refund.get("id"),
        "amount": int(refund.get("amount") or 0),
        "currency": str(refund.get("currency") or ""),
        "status": str(refund.get("status") or ""),
    }


def _plain(obj: Any) -> dict[str, Any]:
    """An SDK object as plain JSON data."""
    return obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)


def _intent_dict(obj: Any) -> dict[str, Any]:
    intent = _plain(obj)
    return {
        "id": intent.get("id"),
        "client_secret": intent.get("client_secret"),
        "status": intent.get("status"),
        "amount": int(intent.get("amount") or 0),
        "currency": str(intent.get("currency") or ""),
    }


# --- Webhooks ---------------------------------------------------------------------------

# How far a signature's timestamp may lie from our clock, either way (Stripe's default).
WEBHOOK_TOLERANCE_S: int = stripe.Webhook.DEFAULT_TOLERANCE
# The deepest nesting of objects and arrays accepted in a webhook body. Stripe's events
# nest a handful of levels; anything far deeper is not an event we could store or read.
WEBHOOK_MAX_DEPTH = 32
SIGNATURE_SCHEME = "v1"

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")


def _signature_header_parse(sig_header: str | None) -> tuple[int, list[str]]:
    """``t=…,v1=…[,v1=…]`` → the timestamp and the ``v1`` signatures."""
    if not sig_header:
        raise SignatureVerificationError("No Stripe-Signature header.", sig_header)
    timestamp: int | None = None
    signatures: list[str] = []
    for item in sig_header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise SignatureVerificationError(
                    "Unable to read the signature's timestamp.", sig_header
                ) from None
        elif key == SIGNATURE_SCHEME:
            signatures.append(value)
    if timestamp is None:
        raise SignatureVerificationError("The signature has no timestamp.", sig_header)
    if not signatures:
        raise SignatureVerificationError(
            f"No signatures found with expected scheme {SIGNATURE_SCHEME}.", sig_header
        )
    return timestamp, signatures


def webhook_signature_verify(
    payload: bytes,
    sig_header: str | None,
    secret: str,
    *,
    tolerance: int = WEBHOOK_TOLERANCE_S,
    now: float | None = None,
) -> None:
    """Check Stripe's HMAC-SHA256 signature over the raw bytes of the body, and that its
    timestamp lies within ``tolerance`` seconds of now, in the past (a replay) or in the
    future (a forged or badly skewed clock). Raises ``SignatureVerificationError``.

    Done here rather than with ``stripe.WebhookSignature.verify_header``: the SDK decodes
    the body as UTF-8 before it checks anything (so a body that is not UTF-8 would be
    refused before its signature is known) and accepts any timestamp in the future.
    """
    if not secret or not secret.strip():
        raise SignatureVerificationError("No webhook secret is configured.", sig_header)
    timestamp, signatures = _signature_header_parse(sig_header)
    signed = str(timestamp).encode("ascii") + b"." + bytes(payload)
    expected = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, s) for s in signatures):
        raise SignatureVerificationError(
            "No signatures found matching the expected signature for payload.", sig_header
        )
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise SignatureVerificationError(
            f"Timestamp outside the tolerance zone ({timestamp}).", sig_header
        )


def _json_depth(payload: bytes) -> int:
    """How deeply objects and arrays nest in a JSON text (brackets inside strings do not
    count); measured before parsing, so a deep body never reaches the recursive parser."""
    depth = deepest = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub(b'""', payload)):
        if bracket in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _refuse_constant(name: str) -> Any:
    raise InvalidPayload(f"{name} is not JSON.")


def _storable(value: Any, depth: int = 0) -> bool:
    """Whether a decoded value can be stored as JSON: strings without NUL characters or
    unpaired surrogates (PostgreSQL's ``jsonb`` refuses both), finite numbers (``1e400``
    parses as infinity, which JSON cannot hold), nesting within the limit."""
    if depth > WEBHOOK_MAX_DEPTH:
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        if "\x00" in value:
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_storable(k, depth) and _storable(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_storable(v, depth + 1) for v in value)
    return True


def webhook_payload_decode(payload: bytes) -> dict[str, Any]:
    """A (verified) webhook body as a Stripe event: strict UTF-8 JSON, nesting at most
    ``WEBHOOK_MAX_DEPTH`` deep, an object with a string ``id`` and ``type``. Raises
    ``InvalidPayload`` for anything else (never ``RecursionError`` or ``UnicodeError``)."""
    if not payload or not payload.strip():
        raise InvalidPayload("Empty body.")
    if _json_depth(payload) > WEBHOOK_MAX_DEPTH:
        raise InvalidPayload(f"JSON nested deeper than {WEBHOOK_MAX_DEPTH} levels.")
    try:
        text = payload.decode("utf-8")  # strict: no BOM sniffing, no UTF-16
        event = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, huge numbers
        raise InvalidPayload(f"Undecodable body: {type(exc).__name__}") from None
    if not isinstance(event, dict):
        raise InvalidPayload("The body is not a JSON object.")
    if not _storable(event):
        raise InvalidPayload("The body holds text that cannot be stored.")
    event_id, event_type = event.get("id"), event.get("type")
    if not isinstance(event_id, str) or not event_id or len(event_id) > 255:
        raise InvalidPayload("Not a Stripe event: no id.")
    if not isinstance(event_type, str) or not event_type or len(event_type) > 100:
        raise InvalidPayload("Not a Stripe event: no type.")
    if event.get("data") is not None and not isinstance(event.get("data"), dict):
        raise InvalidPayload("Not a Stripe event: data is not an object.")
    return event


def webhook_event_construct(payload: bytes, sig_header: str | None) -> dict[str, Any]:
    """Verify the ``Stripe-Signature`` header on the raw body with
    ``STRIPE_WEBHOOK_SECRET``, then decode the body, and return the event as plain JSON
    data.

    Raises ``SignatureVerificationError`` (bad or missing signature, no secret configured,
    a timestamp too old or too far in the future) or ``InvalidPayload`` (signed, but not
    a Stripe event we can read and store).
    """
    webhook_signature_verify(payload, sig_header, settings.STRIPE_WEBHOOK_SECRET)
    return webhook_payload_decode(payload)
