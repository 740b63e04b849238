"""Outgoing webhooks: events emitted by any layer, signed deliveries through the outbox.

``emit_event(organisation, "order.paid", {...})`` writes the event and one delivery per
subscribed endpoint in the caller's transaction and enqueues each delivery through
``core.jobs`` (published after the commit, never lost). The task
``accounts.tasks.webhook_deliver`` POSTs the JSON body with::

    Portal-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>

(a second ``v1=`` with the previous secret while a rotation's overlap lasts), retries
with exponential backoff on a network error or any non-2xx answer, and logs every
attempt (status, response time). Receivers deduplicate by the body's ``id`` (the event
id): a retry and a replay carry the same one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import (
    MemberRole,
    Membership,
    Organisation,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryStatus,
    WebhookEndpoint,
    WebhookEvent,
)
from core import jobs
from core.errors import DomainError

DELIVER_TASK = "accounts.tasks.webhook_deliver"
SIGNATURE_HEADER = "Portal-Signature"
SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret

# The event types an endpoint may subscribe to (one source: the form, the API, the docs).
EVENT_TYPES: dict[str, object] = {
    "quote.sent": gettext_lazy("a quote was sent to you"),
    "quote.accepted": gettext_lazy("a quote was accepted"),
    "quote.expiring": gettext_lazy("a sent quote expires soon"),
    "order.paid": gettext_lazy("an order was paid"),
    "provisioning.started": gettext_lazy("provisioning of an order started"),
    "order.ready": gettext_lazy("an order's cluster was delivered"),
    "node.degraded": gettext_lazy("a delivered node is degraded"),
    "node.cordoned": gettext_lazy("a delivered node was cordoned"),
    "node.replaced": gettext_lazy("a delivered node was replaced"),
    "invoice.issued": gettext_lazy("an invoice or payment request was issued"),
    "invoice.overdue": gettext_lazy("an invoice is overdue"),
    "contract.signed": gettext_lazy("a contract was signed"),
    "maintenance.announced": gettext_lazy("maintenance affecting an order was announced"),
}

WEBHOOK_MANAGERS = (MemberRole.OWNER,)


def _check_manager(organisation: Organisation, actor: User | None) -> None:
    if actor is None:
        return
    if not Membership.objects.filter(
        organisation=organisation, user=actor, role__in=WEBHOOK_MANAGERS
    ).exists():
        raise DomainError(_("Only an owner of the organisation manages webhook endpoints."))


def _event_types_check(event_types: list[str]) -> list[str]:
    unknown = [t for t in event_types if t not in EVENT_TYPES]
    if unknown:
        raise DomainError(
            _("Unknown event type(s): %(types)s.") % {"types": ", ".join(sorted(unknown))}
        )
    if not event_types:
        raise DomainError(_("Choose at least one event type."))
    return sorted(set(event_types))


def _url_check(url: str) -> str:
    url = (url or "").strip()
    try:
        URLValidator(schemes=["http", "https"])(url)
    except Exception:
        raise DomainError(_("Enter the endpoint's full http(s) URL.")) from None
    return url


def _new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def endpoint_create(
    *,
    organisation: Organisation,
    url: str,
    event_types: list[str],
    description: str = "",
    actor: User | None,
) -> WebhookEndpoint:
    """A new endpoint with a fresh secret (``endpoint.secret``, shown once)."""
    _check_manager(organisation, actor)
    return WebhookEndpoint.objects.create(
        organisation=organisation,
        url=_url_check(url),
        event_types=_event_types_check(list(event_types)),
        description=(description or "")[:200],
        secret=_new_secret(),
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )


def endpoint_update(
    *,
    endpoint: WebhookEndpoint,
    actor: User | None,
    url: str | None = None,
    event_types: list[str] | None = None,
    active: bool | None = None,
) -> WebhookEndpoint:
    _check_manager(endpoint.organisation, actor)
    if url is not None:
        endpoint.url = _url_check(url)
    if event_types is not None:
        endpoint.event_types = _event_types_check(list(event_types))
    if active is not None:
        endpoint.active = active
    endpoint.save(update_fields=["url", "event_types", "active"])
    return endpoint


def endpoint_rotate_secret(
    *, endpoint: WebhookEndpoint, actor: User | None, overlap_hours: int = 24
) -> WebhookEndpoint:
    """A new secret at once; deliveries are signed with both until the overlap ends."""
    _check_manager(endpoint.organisation, actor)
    if not 0 <= overlap_hours <= 7 * 24:
        raise DomainError(_("The overlap is between 0 and 168 hours."))
    with transaction.atomic():
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        locked.previous_secret = locked.secret
        locked.previous_secret_until = timezone.now() + timedelta(hours=overlap_hours)
        locked.secret = _new_secret()
        locked.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
    return locked


def endpoint_delete(*, endpoint: WebhookEndpoint, actor: User | None) -> None:
    _check_manager(endpoint.organisation, actor)
    endpoint.delete()


# --- Emitting -------------------------------------------------------------------------------


def emit_event(
    organisation: Organisation | int,
    event_type: str,
    data: dict[str, Any],
    *,
    dedupe: str = "",
) -> WebhookEvent | None:
    """Tell the organisation's endpoints subscribed to ``event_type`` about ``data``.

    Call it inside the transaction that made the change: the deliveries are enqueued
    after its commit (a rollback drops them). ``dedupe`` (e.g. ``"order.paid:ORD-1"``)
    makes a second emission of the same fact a no-op. With no subscribed endpoint it
    writes nothing (one query). Returns the event, or ``None`` when nothing was sent.
    """
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event type {event_type!r}")
    org_id = organisation if isinstance(organisation, int) else organisation.pk
    endpoints = [
        e
        for e in WebhookEndpoint.objects.filter(organisation_id=org_id, active=True)
        if event_type in e.event_types
    ]
    if not endpoints:
        return None
    with transaction.atomic():
        if dedupe and WebhookEvent.objects.filter(organisation_id=org_id, dedupe=dedupe).exists():
            return None
        payload = json.loads(json.dumps(data, cls=DjangoJSONEncoder))
        event = WebhookEvent.objects.create(
            organisation_id=org_id,
            event_id=f"evt_{uuid.uuid4().hex}",
            type=event_type,
            data=payload,
            dedupe=dedupe[:200],
        )
        for endpoint in endpoints:
            delivery = WebhookDelivery.objects.create(endpoint=endpoint, event=event)
            jobs.enqueue(DELIVER_TASK, delivery.pk)
    return event


def delivery_replay(*, delivery: WebhookDelivery, actor: User | None) -> WebhookDelivery:
    """Send the delivery's event again to its endpoint (same event id: receivers that
    deduplicate by it process it once)."""
    _check_manager(delivery.endpoint.organisation, actor)
    with transaction.atomic():
        again = WebhookDelivery.objects.create(
            endpoint=delivery.endpoint, event=delivery.event, replay_of=delivery
        )
        jobs.enqueue(DELIVER_TASK, again.pk)
    return again


# --- Signing and delivering ----------------------------------------------------------------


def body_for(event: WebhookEvent) -> bytes:
    """The exact bytes sent (and signed) for an event."""
    return json.dumps(
        {
            "id": event.event_id,
            "type": event.type,
            "created": event.created_at.isoformat(),
            "organisation": event.organisation_id,
            "data": event.data,
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(endpoint: WebhookEndpoint, body: bytes, *, timestamp: int) -> str:
    parts = [f"t={timestamp}", f"v1={sign(endpoint.secret, timestamp, body)}"]
    until = endpoint.previous_secret_until
    if endpoint.previous_secret and until is not None and timezone.now() < until:
        parts.append(f"v1={sign(endpoint.previous_secret, timestamp, body)}")
    return ",".join(parts)


def verify(secret: str, header: str, body: bytes, *, tolerance: int = 300) -> bool:
    """What a receiver does (the docs' example in Python): any ``v1`` matches, and the
    timestamp is within ``tolerance`` seconds of now."""
    items = [p.split("=", 1) for p in header.split(",") if "=" in p]
    stamps = [v for k, v in items if k == "t"]
    if not stamps or not stamps[0].isdigit():
        return False
    timestamp = int(stamps[0])
    if abs(time.time() - timestamp) > tolerance:
        return False
    expected = sign(secret, timestamp, body)
    return any(hmac.compare_digest(expected, v) for k, v in items if k == "v1")


class DeliveryFailed(Exception):
    """The endpoint did not answer 2xx (or not at all): the task retries with backoff."""


def delivery_attempt(*, delivery_id: int, final: bool) -> str:
    """POST the delivery once and log it. Raises ``DeliveryFailed`` for a retry unless
    ``final`` (then the delivery is marked failed). A delivery already succeeded is done."""
    delivery = (
        WebhookDelivery.objects.select_related("endpoint", "event").filter(pk=delivery_id).first()
    )
    if delivery is None or delivery.status in (
        WebhookDeliveryStatus.SUCCEEDED,
        WebhookDeliveryStatus.FAILED,
    ):
        return "done"
    endpoint, body = delivery.endpoint, body_for(delivery.event)
    timestamp = int(time.time())
    request = urllib.request.Request(  # noqa: S310 - the customer's http(s) URL, checked on save
        endpoint.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "gpu-portal-webhooks/1",
            SIGNATURE_HEADER: signature_header(endpoint, body, timestamp=timestamp),
            "Portal-Event-Id": delivery.event.event_id,
            "Portal-Event-Type": delivery.event.type,
            "Portal-Delivery-Id": str(delivery.pk),
        },
    )
    started = time.monotonic()
    status_code: int | None = None
    error = ""
    try:
        with urllib.request.urlopen(  # noqa: S310
            request, timeout=settings.PORTAL_WEBHOOK_TIMEOUT
        ) as response:
            status_code = response.status
    except urllib.error.HTTPError as exc:
        status_code = exc.code
        error = f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    elapsed = int((time.monotonic() - started) * 1000)
    ok = status_code is not None and 200 <= status_code < 300
    WebhookAttempt.objects.create(
        delivery=delivery, status_code=status_code, response_ms=elapsed, error=error
    )
    delivery.attempts += 1
    delivery.last_status_code = status_code
    delivery.last_response_ms = elapsed
    delivery.last_error = error
    if ok:
        delivery.status = WebhookDeliveryStatus.SUCCEEDED
        delivery.delivered_at = timezone.now()
    else:
        delivery.status = WebhookDeliveryStatus.FAILED if final else WebhookDeliveryStatus.RETRYING
    delivery.save(
        update_fields=[
            "attempts",
            "last_status_code",
            "last_response_ms",
            "last_error",
            "status",
            "delivered_at",
        ]
    )
    if not ok and not final:
        raise DeliveryFailed(error or f"HTTP {status_code}")
    return delivery.status
