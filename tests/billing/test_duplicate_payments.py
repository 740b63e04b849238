"""Several PaymentIntents succeeding for one invoice: the first to succeed by Stripe's
clock (ties by PaymentIntent id) pays it, every other one is flagged "duplicate, refund",
whatever order the signed webhooks arrive, are replayed or retried in; staff refund a
flagged duplicate from the admin through the Stripe wrapper (only Stripe's servers are
faked: the SDK, the wrapper and the service run for real)."""

import importlib
import itertools
import json
import time
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import stripe
from django.contrib.messages import get_messages
from django.urls import reverse

from billing import stripe_api
from billing.models import (
    InvoiceEvent,
    InvoiceStatus,
    OrderEvent,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    StripeEvent,
    StripeEventStatus,
)
from billing.payments import services as payments
from billing.payments import webhooks
from core.errors import DomainError
from tests.billing.test_payments import make_order
from tests.billing.test_webhooks import SECRET, event, post

pytestmark = pytest.mark.django_db

# Success times in the events' bodies (Unix seconds); the signatures carry the real now.
T0 = int(time.time()) - 3600


@pytest.fixture(autouse=True)
def stripe_settings(settings):
    settings.STRIPE_SECRET_KEY = "sk_test_offline"
    settings.STRIPE_PUBLISHABLE_KEY = "pk_test_offline"
    settings.STRIPE_WEBHOOK_SECRET = SECRET
    settings.STRIPE_API_BASE = ""


def card_payments(order, ids: list[str]) -> dict[str, Payment]:
    """One pending card payment (a PaymentIntent) per id for the order's invoice."""
    invoice = order.invoices.get()
    return {
        pi: Payment.objects.create(
            invoice=invoice,
            method=PaymentMethod.CARD,
            currency=invoice.currency,
            amount=invoice.gross_total,
            stripe_payment_intent=pi,
        )
        for pi in ids
    }


def succeeded(payment: Payment, created: int, *, charge_created: int | None = None) -> dict:
    """``payment_intent.succeeded`` as Stripe sends it: the event's ``created`` is when
    the intent succeeded; ``latest_charge`` is an id unless expanded."""
    invoice = payment.invoice
    minor = stripe_api.to_minor_units(invoice.gross_total, invoice.currency)
    charge: object = f"ch_{payment.stripe_payment_intent}"
    if charge_created is not None:
        charge = {"id": charge, "object": "charge", "created": charge_created}
    obj = {
        "id": payment.stripe_payment_intent,
        "object": "payment_intent",
        "amount": minor,
        "amount_received": minor,
        "currency": invoice.currency.lower(),
        "created": created - 600,  # when the intent was made: not what ranks
        "latest_charge": charge,
        "metadata": {"invoice_number": invoice.number, "order_number": invoice.order.number},
        "payment_method_types": ["card"],
        "status": "succeeded",
    }
    body = event("payment_intent.succeeded", obj, event_id=f"evt_{payment.stripe_payment_intent}")
    body["created"] = created
    return body


def deliver(client, body: dict, capture) -> None:
    with capture(execute=True):
        assert post(client, body).status_code == 200


def outcome(order) -> dict:
    """Everything that must not depend on the arrival order."""
    invoice = order.invoices.get()
    order.refresh_from_db()
    invoice.refresh_from_db()
    paid = Payment.objects.filter(invoice=invoice).order_by("stripe_payment_intent")
    return {
        "order": order.status,
        "invoice": invoice.status,
        "paid events": (
            OrderEvent.objects.filter(order=order, to_status=OrderStatus.PAID)
            .exclude(from_status=OrderStatus.PAID)
            .count(),
            InvoiceEvent.objects.filter(invoice=invoice, to_status=InvoiceStatus.PAID)
            .exclude(from_status=InvoiceStatus.PAID)
            .count(),
        ),
        "payments": {
            p.stripe_payment_intent: (
                p.status,
                p.duplicate_of.stripe_payment_intent if p.duplicate_of else None,
                p.provider_succeeded_at,
            )
            for p in paid
        },
        "events": {
            e.stripe_id: (e.status, e.error)
            for e in StripeEvent.objects.filter(
                type="payment_intent.succeeded",
                payload__data__object__metadata__order_number=order.number,
            )
        },
        "duplicate notes": sorted(
            OrderEvent.objects.filter(
                order=order, reason__startswith="Duplicate, refund"
            ).values_list("reason", flat=True)
        ),
    }


def expected_for(stamps: dict[str, int], payer: str) -> dict:
    when = {pi: datetime.fromtimestamp(t, tz=UTC) for pi, t in stamps.items()}
    return {
        pi: (PaymentStatus.SUCCEEDED, None if pi == payer else payer, when[pi]) for pi in stamps
    }


# Success times (Unix seconds). The ids sort differently from the times on purpose.
CASES = {
    "two": ({"pi_b": T0, "pi_a": T0 + 7}, "pi_b"),
    "three": ({"pi_c": T0 + 1, "pi_a": T0 + 30, "pi_b": T0}, "pi_b"),
    "three, a tie by time": ({"pi_z": T0, "pi_m": T0, "pi_a": T0 + 1}, "pi_m"),
}
ARRIVALS = [
    pytest.param(name, order, id=f"{name}: {' then '.join(order)}")
    for name, (stamps, _payer) in CASES.items()
    for order in itertools.permutations(stamps)
]


@pytest.mark.parametrize(("case", "arrival"), ARRIVALS)
def test_every_arrival_order_names_the_same_payer_and_duplicates(
    client,
    demo,
    eager_celery,
    provisioning_calls,
    django_capture_on_commit_callbacks,
    case,
    arrival,
):
    stamps, payer = CASES[case]
    order = make_order(demo)
    by_id = card_payments(order, list(stamps))
    bodies = {pi: succeeded(by_id[pi], stamps[pi]) for pi in stamps}
    for pi in arrival:
        deliver(client, bodies[pi], django_capture_on_commit_callbacks)
    first = outcome(order)
    # Stripe redelivers each event (same id), in the reverse order: nothing changes.
    for pi in reversed(arrival):
        deliver(client, bodies[pi], django_capture_on_commit_callbacks)
        assert webhooks.stripe_event_process(event_id=bodies[pi]["id"]) in (
            StripeEventStatus.PROCESSED,
            StripeEventStatus.FLAGGED,
        )
    # A second, later event about an intent (a new id) changes nothing either: the
    # earliest time Stripe gave stands.
    for pi in arrival:
        again = succeeded(by_id[pi], stamps[pi] + 3600)
        again["id"] = f"evt_again_{pi}"
        deliver(client, again, django_capture_on_commit_callbacks)
    StripeEvent.objects.filter(stripe_id__startswith="evt_again_").delete()
    assert outcome(order) == first

    duplicates = sorted(pi for pi in stamps if pi != payer)
    assert first["order"] == OrderStatus.PAID and first["invoice"] == InvoiceStatus.PAID
    assert first["paid events"] == (1, 1)  # paid once, whoever arrived first
    assert provisioning_calls == [(order.pk, "queued")]
    assert first["payments"] == expected_for(stamps, payer)
    assert first["events"][f"evt_{payer}"] == (StripeEventStatus.PROCESSED, "")
    for pi in duplicates:
        status, error = first["events"][f"evt_{pi}"]
        assert status == StripeEventStatus.FLAGGED
        assert error.startswith("Duplicate, refund") and pi in error
    assert len(first["duplicate notes"]) == len(duplicates)
    assert all(any(pi in note for note in first["duplicate notes"]) for pi in duplicates)
    # The same as when the events arrive in the order the payments happened.
    baseline, prefix = outcome_in_time_order(
        client, demo, stamps, django_capture_on_commit_callbacks
    )
    assert normalized(first, order) == normalized(baseline, None, prefix)


def outcome_in_time_order(client, demo, stamps: dict[str, int], capture) -> tuple[dict, str]:
    """The outcome on a second order whose events arrive in the order they happened;
    its PaymentIntent ids carry a prefix."""
    order = make_order(demo, nodes=1)
    prefix = f"x{order.pk}_"
    by_id = card_payments(order, [prefix + pi for pi in stamps])
    for pi in sorted(stamps, key=lambda p: (stamps[p], p)):
        deliver(client, succeeded(by_id[prefix + pi], stamps[pi]), capture)
    return {**outcome(order), "invoice number": order.invoices.get().number}, prefix


def normalized(result: dict, order, prefix: str = "") -> str:
    """A result as text with the order's own names (invoice number, id prefix) removed."""
    number = result.pop("invoice number", None) or order.invoices.get().number
    text = json.dumps(result, default=str, sort_keys=True)
    return text.replace(number, "INVOICE").replace(prefix or "\0", "")


def test_a_late_earlier_payment_takes_over_as_payer_and_the_order_stays_paid_once(
    client, demo, eager_celery, provisioning_calls, django_capture_on_commit_callbacks
):
    order = make_order(demo)
    by_id = card_payments(order, ["pi_early", "pi_late"])
    deliver(client, succeeded(by_id["pi_late"], T0 + 60), django_capture_on_commit_callbacks)
    late = Payment.objects.get(stripe_payment_intent="pi_late")
    assert late.duplicate_of is None
    assert StripeEvent.objects.get(stripe_id="evt_pi_late").status == StripeEventStatus.PROCESSED
    # The charge's own time, when the payload carries it, is what ranks.
    deliver(
        client,
        succeeded(by_id["pi_early"], T0 + 120, charge_created=T0),
        django_capture_on_commit_callbacks,
    )
    early = Payment.objects.get(stripe_payment_intent="pi_early")
    late.refresh_from_db()
    assert early.provider_succeeded_at == datetime.fromtimestamp(T0, tz=UTC)
    assert (early.duplicate_of, late.duplicate_of) == (None, early)
    assert early.status == late.status == PaymentStatus.SUCCEEDED
    flagged = StripeEvent.objects.get(stripe_id="evt_pi_late")
    assert flagged.status == StripeEventStatus.FLAGGED and "pi_late" in flagged.error
    assert StripeEvent.objects.get(stripe_id="evt_pi_early").status == "processed"
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID
    paid = OrderEvent.objects.filter(order=order, to_status=OrderStatus.PAID)
    assert paid.exclude(from_status=OrderStatus.PAID).count() == 1
    assert provisioning_calls == [(order.pk, "queued")]


def test_a_card_payment_after_a_bank_transfer_is_the_duplicate(
    client, demo, eager_celery, django_capture_on_commit_callbacks
):
    from billing.orders.services import invoice_mark_paid_by_transfer

    order = make_order(demo)
    invoice = order.invoices.get()
    by_id = card_payments(order, ["pi_card"])
    invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-1", actor=demo["admin"])
    deliver(client, succeeded(by_id["pi_card"], T0 - 3600), django_capture_on_commit_callbacks)
    card = Payment.objects.get(stripe_payment_intent="pi_card")
    transfer = Payment.objects.get(method=PaymentMethod.BANK_TRANSFER)
    assert (card.duplicate_of, transfer.duplicate_of) == (transfer, None)
    assert StripeEvent.objects.get().status == StripeEventStatus.FLAGGED


def test_a_failed_processing_retried_later_still_names_the_first_to_succeed(
    client, demo, eager_celery, monkeypatch, django_capture_on_commit_callbacks
):
    order = make_order(demo)
    by_id = card_payments(order, ["pi_1", "pi_2"])
    real = webhooks.HANDLERS["payment_intent.succeeded"]

    def broken(payload):
        raise RuntimeError("bug")

    monkeypatch.setitem(webhooks.HANDLERS, "payment_intent.succeeded", broken)
    deliver(client, succeeded(by_id["pi_1"], T0), django_capture_on_commit_callbacks)
    monkeypatch.setitem(webhooks.HANDLERS, "payment_intent.succeeded", real)
    assert StripeEvent.objects.get().status == StripeEventStatus.FAILED
    deliver(client, succeeded(by_id["pi_2"], T0 + 5), django_capture_on_commit_callbacks)
    assert Payment.objects.get(stripe_payment_intent="pi_2").duplicate_of is None
    StripeEvent.objects.update(received_at=datetime.now(tz=UTC) - timedelta(minutes=10))
    assert webhooks.stripe_events_retry() == 1
    first, second = (Payment.objects.get(stripe_payment_intent=pi) for pi in ("pi_1", "pi_2"))
    assert (first.duplicate_of, second.duplicate_of) == (None, first)


# --- Refunding a flagged duplicate from the admin ---------------------------------------


class StripeServer(stripe.HTTPClient):
    """Stands in for Stripe's servers behind the real SDK: refunds (idempotent by key, as
    Stripe is) and PaymentIntents with their charge's refunded total."""

    name = "fake-stripe-server"

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str, dict]] = []
        self.by_key: dict[str, dict] = {}
        self.refunded: dict[str, int] = {}
        self.fail_with: str = ""

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | None,
        post_data: Any = None,
        *,
        _usage: list[str] | None = None,
    ) -> tuple[str, int, Mapping[str, str]]:
        headers = headers or {}
        path = urllib.parse.urlsplit(url).path
        data = {k: v[0] for k, v in urllib.parse.parse_qs(post_data or "").items()}
        self.requests.append(
            (method.upper(), path, {**data, "_key": headers.get("Idempotency-Key")})
        )
        if self.fail_with:
            error = {"error": {"type": "invalid_request_error", "message": self.fail_with}}
            return json.dumps(error), 400, {"request-id": "req_fail"}
        if method.upper() == "POST" and path == "/v1/refunds":
            key = headers.get("Idempotency-Key") or ""
            if key not in self.by_key:
                pi = data["payment_intent"]
                self.refunded[pi] = self.refunded.get(pi, 0) + int(data["amount"])
                self.by_key[key] = {
                    "id": f"re_fake_{len(self.by_key) + 1}",
                    "object": "refund",
                    "amount": int(data["amount"]),
                    "currency": "cny",
                    "payment_intent": pi,
                    "status": "succeeded",
                }
            return json.dumps(self.by_key[key]), 200, {"request-id": "req_1"}
        if method.upper() == "GET" and path.startswith("/v1/payment_intents/"):
            pi = path.rsplit("/", 1)[1]
            body = {
                "id": pi,
                "object": "payment_intent",
                "currency": "cny",
                "latest_charge": {
                    "id": f"ch_{pi}",
                    "object": "charge",
                    "amount_refunded": self.refunded.get(pi, 0),
                    "currency": "cny",
                },
            }
            return json.dumps(body), 200, {"request-id": "req_2"}
        return json.dumps({"error": {"message": "not faked"}}), 404, {}

    def close(self) -> None:
        pass

    def refund_posts(self) -> list[dict]:
        return [data for method, path, data in self.requests if path == "/v1/refunds"]


@pytest.fixture
def stripe_server(monkeypatch):
    server = StripeServer()
    # The SDK builds its HTTP client here for every ``StripeClient``: the wrapper's runs.
    sdk_client = importlib.import_module("stripe._stripe_client")
    monkeypatch.setattr(sdk_client, "new_default_http_client", lambda **kw: server)
    return server


@pytest.fixture
def flagged(client, demo, eager_celery, django_capture_on_commit_callbacks):
    """An order paid by pi_first, with pi_second flagged a duplicate."""
    order = make_order(demo)
    by_id = card_payments(order, ["pi_first", "pi_second"])
    deliver(client, succeeded(by_id["pi_second"], T0 + 9), django_capture_on_commit_callbacks)
    deliver(client, succeeded(by_id["pi_first"], T0), django_capture_on_commit_callbacks)
    first, second = (Payment.objects.get(stripe_payment_intent=p) for p in by_id)
    assert (first.duplicate_of, second.duplicate_of) == (None, first)
    return order, first, second


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_staff_refund_a_flagged_duplicate_once_after_confirming(
    client, demo, flagged, stripe_server, django_capture_on_commit_callbacks
):
    order, payer, duplicate = flagged
    changelist = reverse("admin:billing_payment_changelist")
    client.force_login(demo["admin"])
    page = client.get(changelist)
    assert "refund_duplicates" in page.content.decode()
    assert "duplicate of pi_first, refund" in page.content.decode()
    action = {"action": "refund_duplicates", "_selected_action": [payer.pk, duplicate.pk]}
    # First a confirmation page: the duplicate, what goes back, who paid; Stripe untouched.
    page = client.post(changelist, action)
    html = page.content.decode()
    assert page.status_code == 200
    assert "pi_second" in html and "pi_first" in html and 'name="apply"' in html
    assert "1 selected payment is not a duplicate" in html
    assert stripe_server.requests == []
    response = client.post(changelist, {**action, "apply": "1"})
    assert response.status_code == 302
    (refund_post,) = stripe_server.refund_posts()
    minor = stripe_api.to_minor_units(duplicate.amount, duplicate.currency)
    assert refund_post["payment_intent"] == "pi_second"
    assert int(refund_post["amount"]) == minor
    assert refund_post["_key"] == f"duplicate-refund-pi_second-{minor}"
    [message] = messages_of(response)
    assert message.startswith("Refunded duplicate payment pi_second of invoice")
    assert "re_fake_1" in message
    duplicate.refresh_from_db()
    payer.refresh_from_db()
    assert (duplicate.duplicate_refund, duplicate.status) == ("re_fake_1", PaymentStatus.REFUNDED)
    assert duplicate.amount_refunded == duplicate.amount and duplicate.duplicate_of == payer
    assert (payer.status, payer.amount_refunded, payer.duplicate_refund) == (
        PaymentStatus.SUCCEEDED,
        0,
        "",
    )
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID
    invoice_page = client.get(reverse("admin:billing_invoice_change", args=[payer.invoice_id]))
    assert "duplicate of pi_first, refunded re_fake_1" in invoice_page.content.decode()
    notes = OrderEvent.objects.filter(order=order, reason__startswith="Refund recorded")
    assert notes.count() == 1 and "re_fake_1" in notes.get().reason

    # Again, from the admin or the service: recorded once, Stripe not called again.
    response = client.post(changelist, {**action, "apply": "1"})
    assert messages_of(response)[-1] == (
        "None of the selected payments is a duplicate waiting for a refund."
    )
    again, refunded_now = payments.payment_duplicate_refund(payment=duplicate, actor=demo["admin"])
    assert (refunded_now, again.duplicate_refund) == (False, "re_fake_1")
    assert len(stripe_server.refund_posts()) == 1
    # Stripe's charge.refunded webhook for the same refund changes nothing.
    charge = {
        "id": "ch_pi_second",
        "object": "charge",
        "payment_intent": "pi_second",
        "amount": minor,
        "amount_refunded": minor,
        "currency": "cny",
    }
    deliver(client, event("charge.refunded", charge), django_capture_on_commit_callbacks)
    assert notes.count() == 1
    # A replay of the duplicate's success leaves it flagged, and the payer the payer.
    deliver(client, succeeded(duplicate, T0 + 9), django_capture_on_commit_callbacks)
    duplicate.refresh_from_db()
    assert (duplicate.status, duplicate.duplicate_of) == (PaymentStatus.REFUNDED, payer)


def test_the_payer_is_never_refunded_by_the_action(client, demo, flagged, stripe_server):
    _order, payer, _duplicate = flagged
    client.force_login(demo["admin"])
    response = client.post(
        reverse("admin:billing_payment_changelist"),
        {"action": "refund_duplicates", "_selected_action": [payer.pk], "apply": "1"},
    )
    assert response.status_code == 302
    assert messages_of(response) == [
        "None of the selected payments is a duplicate waiting for a refund."
    ]
    with pytest.raises(DomainError, match="not flagged as a duplicate"):
        payments.payment_duplicate_refund(payment=payer, actor=demo["admin"])
    assert stripe_server.requests == []


def test_a_refund_stripe_refuses_is_a_clear_message_and_nothing_is_recorded(
    client, demo, flagged, stripe_server
):
    _order, _payer, duplicate = flagged
    stripe_server.fail_with = "Charge ch_x has already been refunded."
    client.force_login(demo["admin"])
    response = client.post(
        reverse("admin:billing_payment_changelist"),
        {"action": "refund_duplicates", "_selected_action": [duplicate.pk], "apply": "1"},
    )
    [message] = messages_of(response)
    assert message.startswith("Stripe refused the refund") and "already been refunded" in message
    duplicate.refresh_from_db()
    assert (duplicate.duplicate_refund, duplicate.status) == ("", PaymentStatus.SUCCEEDED)


def test_staff_without_the_permission_do_not_get_the_action(client, demo, flagged):
    from django.contrib.auth.models import Permission

    staff = demo["sales"]
    staff.user_permissions.add(Permission.objects.get(codename="view_payment"))
    client.force_login(staff)
    page = client.get(reverse("admin:billing_payment_changelist"))
    assert page.status_code == 200
    assert "refund_duplicates" not in page.content.decode()
