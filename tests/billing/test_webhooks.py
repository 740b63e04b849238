"""The Stripe webhook, offline: payloads signed with the test secret exactly as Stripe
signs them, never with verification skipped."""

import json
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from billing import stripe_api
from billing.models import (
    InvoiceStatus,
    Order,
    OrderEvent,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    StripeEvent,
    StripeEventStatus,
)
from billing.orders.services import order_expire_unpaid
from billing.payments import services as payments
from billing.payments import webhooks
from inventory.models import ReservationStatus
from tests.billing.stripe_helpers import webhook_signature_header
from tests.billing.test_payments import make_order, reservations

pytestmark = pytest.mark.django_db

SECRET = "whsec_test_offline"
URL = "/stripe/webhook"


def sign(body: bytes, secret: str = SECRET, timestamp: int | None = None) -> str:
    """The ``Stripe-Signature`` header as Stripe builds it."""
    return webhook_signature_header(body, secret, timestamp)


def post(client, event: dict, **headers):
    body = json.dumps(event).encode()
    if "HTTP_STRIPE_SIGNATURE" not in headers:
        headers["HTTP_STRIPE_SIGNATURE"] = sign(body)
    # Stripe sends no Accept-Language; English here so that the notes read as asserted.
    headers.setdefault("HTTP_ACCEPT_LANGUAGE", "en")
    return client.post(URL, data=body, content_type="application/json", **headers)


counter = iter(range(1, 1_000_000))


def event(type_: str, obj: dict, event_id: str | None = None) -> dict:
    return {
        "id": event_id or f"evt_test_{next(counter)}",
        "object": "event",
        "api_version": stripe_api.API_VERSION,
        "created": int(time.time()),
        "livemode": False,
        "type": type_,
        "data": {"object": obj},
    }


def intent(payment: Payment, *, amount: int | None = None, currency: str | None = None, **kw):
    invoice = payment.invoice
    minor = stripe_api.to_minor_units(invoice.gross_total, invoice.currency)
    return {
        "id": payment.stripe_payment_intent,
        "object": "payment_intent",
        "amount": minor if amount is None else amount,
        "amount_received": minor if amount is None else amount,
        "currency": (currency or invoice.currency).lower(),
        "metadata": {"invoice_number": invoice.number, "order_number": invoice.order.number},
        "payment_method_types": ["card", "alipay", "wechat_pay"],
        "status": "succeeded",
        **kw,
    }


@pytest.fixture(autouse=True)
def webhook_secret(settings):
    settings.STRIPE_WEBHOOK_SECRET = SECRET


@pytest.fixture
def card_order(demo, fake_stripe, eager_celery):
    order = make_order(demo)
    payment, _secret = payments.payment_card_start(order=order, actor=demo["customer"])
    return order, payment


# --- Verification -----------------------------------------------------------------------


def test_a_bad_signature_is_refused_and_nothing_is_stored(client, card_order):
    order, payment = card_order
    body = json.dumps(event("payment_intent.succeeded", intent(payment))).encode()
    for header in (
        sign(body, secret="whsec_someone_else"),
        sign(body + b" "),  # signed, then tampered with
        sign(body, timestamp=int(time.time()) - 3600),  # a replay of an old delivery
        "t=abc,v1=nothing",
        "garbage",
    ):
        response = client.post(
            URL, data=body, content_type="application/json", HTTP_STRIPE_SIGNATURE=header
        )
        assert response.status_code == 400, header
    assert StripeEvent.objects.count() == 0
    order.refresh_from_db()
    assert order.status == OrderStatus.AWAITING_PAYMENT


def test_a_missing_header_or_secret_is_refused(client, card_order, settings):
    _order, payment = card_order
    body = json.dumps(event("payment_intent.succeeded", intent(payment))).encode()
    assert client.post(URL, data=body, content_type="application/json").status_code == 400
    settings.STRIPE_WEBHOOK_SECRET = ""
    response = client.post(
        URL, data=body, content_type="application/json", HTTP_STRIPE_SIGNATURE=sign(body)
    )
    assert response.status_code == 400
    assert StripeEvent.objects.count() == 0


def test_a_signed_body_that_is_not_an_event_is_refused(client, card_order):
    for body in (b"not json", b"[]", b"\xff\xfe", json.dumps({"id": "evt_1"}).encode()):
        response = client.post(
            URL, data=body, content_type="application/json", HTTP_STRIPE_SIGNATURE=sign(body)
        )
        assert response.status_code == 400
    assert StripeEvent.objects.count() == 0


def test_only_post_is_allowed(client, db):
    assert client.get(URL).status_code == 405
    assert reverse("stripe_webhook") == URL


# --- Paid -------------------------------------------------------------------------------


def test_succeeded_pays_the_order_makes_the_booking_firm_and_starts_provisioning(
    client, card_order, provisioning_calls, django_capture_on_commit_callbacks
):
    order, payment = card_order
    assert {r.status for r in reservations(order)} == {ReservationStatus.HOLD}
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, event("payment_intent.succeeded", intent(payment)))
    assert response.status_code == 200
    order.refresh_from_db()
    payment.refresh_from_db()
    assert order.status == OrderStatus.PAID and order.paid_at is not None
    assert order.invoices.get().status == InvoiceStatus.PAID
    assert payment.status == PaymentStatus.SUCCEEDED and payment.succeeded_at is not None
    assert {r.status for r in reservations(order)} == {ReservationStatus.FIRM}
    assert provisioning_calls == [(order.pk, "queued")]
    stored = StripeEvent.objects.get()
    assert (stored.type, stored.status, stored.error) == (
        "payment_intent.succeeded",
        StripeEventStatus.PROCESSED,
        "",
    )
    assert stored.processed_at is not None


def test_nothing_is_enqueued_before_commit(client, card_order, provisioning_calls):
    order, payment = card_order
    with pytest.MonkeyPatch.context() as mp:
        enqueued = []
        from billing.tasks import payments as tasks

        mp.setattr(
            tasks.stripe_event_process_task, "apply_async", lambda *a, **kw: enqueued.append(a)
        )
        # Inside the test's transaction the commit never comes: nothing runs.
        assert post(client, event("payment_intent.succeeded", intent(payment))).status_code == 200
        assert enqueued == []
    assert StripeEvent.objects.get().status == StripeEventStatus.RECEIVED
    order.refresh_from_db()
    assert order.status == OrderStatus.AWAITING_PAYMENT


def test_a_replayed_event_records_one_payment(
    client, card_order, provisioning_calls, django_capture_on_commit_callbacks
):
    order, payment = card_order
    succeeded = event("payment_intent.succeeded", intent(payment))
    for _ in range(20):
        with django_capture_on_commit_callbacks(execute=True):
            assert post(client, succeeded).status_code == 200
    assert StripeEvent.objects.count() == 1
    assert Payment.objects.filter(status=PaymentStatus.SUCCEEDED).count() == 1
    assert Payment.objects.count() == 1
    paid_moves = OrderEvent.objects.filter(
        order=order, from_status=OrderStatus.AWAITING_PAYMENT, to_status=OrderStatus.PAID
    )
    assert paid_moves.count() == 1
    assert provisioning_calls == [(order.pk, "queued")]
    # A second event about the same intent (Stripe may send one) changes nothing either.
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", intent(payment)))
    assert Payment.objects.filter(status=PaymentStatus.SUCCEEDED).count() == 1
    assert provisioning_calls == [(order.pk, "queued")]


def test_processing_an_event_twice_changes_nothing(card_order, provisioning_calls):
    _order, payment = card_order
    stored, created = webhooks.stripe_event_record(
        event=event("payment_intent.succeeded", intent(payment))
    )
    again, created_again = webhooks.stripe_event_record(event=stored.payload)
    assert (created, created_again, again.pk) == (True, False, stored.pk)
    assert webhooks.stripe_event_process(event_id=stored.stripe_id) == "processed"
    assert webhooks.stripe_event_process(event_id=stored.stripe_id) == "processed"
    assert webhooks.stripe_event_process(event_id="evt_never_stored") == "missing"
    paid_moves = OrderEvent.objects.filter(
        from_status=OrderStatus.AWAITING_PAYMENT, to_status=OrderStatus.PAID
    )
    assert paid_moves.count() == 1


def test_an_intent_made_elsewhere_for_one_of_our_invoices_is_recorded(
    client, demo, eager_celery, django_capture_on_commit_callbacks
):
    order = make_order(demo)
    invoice = order.invoices.get()
    obj = {
        "id": "pi_dashboard_1",
        "amount": stripe_api.to_minor_units(invoice.gross_total, invoice.currency),
        "amount_received": stripe_api.to_minor_units(invoice.gross_total, invoice.currency),
        "currency": invoice.currency.lower(),
        "metadata": {"invoice_number": invoice.number},
        "payment_method_types": ["alipay"],
    }
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, event("payment_intent.succeeded", obj)).status_code == 200
    payment = Payment.objects.get()
    assert (payment.stripe_payment_intent, payment.method, payment.status) == (
        "pi_dashboard_1",
        PaymentMethod.ALIPAY,
        PaymentStatus.SUCCEEDED,
    )
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID


# --- Flagged, ignored -------------------------------------------------------------------


def test_an_event_for_an_unknown_order_is_stored_and_flagged(
    client, demo, eager_celery, django_capture_on_commit_callbacks
):
    obj = {
        "id": "pi_unknown",
        "amount": 100,
        "currency": "cny",
        "metadata": {"invoice_number": "I-SZ-1999-000001", "order_number": "O-SZ-1999-000001"},
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, event("payment_intent.succeeded", obj))
        assert post(client, event("payment_intent.payment_failed", obj)).status_code == 200
        assert post(client, event("charge.refunded", {"id": "ch_x"})).status_code == 200
    assert response.status_code == 200
    stored = StripeEvent.objects.get(type="payment_intent.succeeded")
    assert stored.status == StripeEventStatus.FLAGGED
    assert "pi_unknown" in stored.error and "O-SZ-1999-000001" in stored.error
    assert set(StripeEvent.objects.values_list("status", flat=True)) == {"flagged"}
    assert Payment.objects.count() == 0


def test_an_amount_mismatch_is_flagged_and_the_order_not_paid(
    client, card_order, django_capture_on_commit_callbacks
):
    order, payment = card_order
    expected = stripe_api.to_minor_units(payment.invoice.gross_total, payment.invoice.currency)
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", intent(payment, amount=expected - 1)))
        post(client, event("payment_intent.succeeded", intent(payment, currency="usd")))
    assert list(StripeEvent.objects.values_list("status", flat=True)) == ["flagged", "flagged"]
    assert "not recorded as paid" in StripeEvent.objects.first().error
    order.refresh_from_db()
    payment.refresh_from_db()
    assert order.status == OrderStatus.AWAITING_PAYMENT
    assert payment.status == PaymentStatus.PENDING
    assert {r.status for r in reservations(order)} == {ReservationStatus.HOLD}


def test_unhandled_event_types_are_stored_and_ignored(
    client, eager_celery, db, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, event("customer.created", {"id": "cus_1"})).status_code == 200
    assert StripeEvent.objects.get().status == StripeEventStatus.IGNORED


def test_payment_after_the_order_expired_is_recorded_and_flagged(
    client, card_order, django_capture_on_commit_callbacks
):
    order, payment = card_order
    Order.objects.filter(pk=order.pk).update(payment_due_at=order.created_at - timedelta(hours=1))
    assert order_expire_unpaid() == 1
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", intent(payment)))
    stored = StripeEvent.objects.get()
    assert stored.status == StripeEventStatus.FLAGGED and "refund or re-quote" in stored.error
    payment.refresh_from_db()
    order.refresh_from_db()
    assert payment.status == PaymentStatus.SUCCEEDED  # the money did arrive
    assert order.status == OrderStatus.EXPIRED


def test_a_handler_error_marks_the_event_failed_and_a_redelivery_retries(
    client, card_order, monkeypatch, django_capture_on_commit_callbacks
):
    order, payment = card_order
    succeeded = event("payment_intent.succeeded", intent(payment))

    def broken(payload):
        raise RuntimeError("bug")

    monkeypatch.setitem(webhooks.HANDLERS, "payment_intent.succeeded", broken)
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, succeeded).status_code == 200
    stored = StripeEvent.objects.get()
    assert stored.status == StripeEventStatus.FAILED and "RuntimeError: bug" in stored.error
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, succeeded).status_code == 200
    stored.refresh_from_db()
    order.refresh_from_db()
    assert stored.status == StripeEventStatus.PROCESSED and stored.error == ""
    assert order.status == OrderStatus.PAID


# --- Failed, and out of order -----------------------------------------------------------


def test_failed_after_succeeded_does_not_unpay_the_order(
    client, card_order, django_capture_on_commit_callbacks
):
    order, payment = card_order
    failure = {"message": "Your card was declined.", "code": "card_declined"}
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", intent(payment)))
        post(
            client,
            event(
                "payment_intent.payment_failed",
                intent(payment, status="requires_payment_method", last_payment_error=failure),
            ),
        )
    order.refresh_from_db()
    payment.refresh_from_db()
    assert order.status == OrderStatus.PAID
    assert payment.status == PaymentStatus.SUCCEEDED and payment.failure_message == ""
    late = StripeEvent.objects.get(type="payment_intent.payment_failed")
    assert late.status == StripeEventStatus.IGNORED
    assert {r.status for r in reservations(order)} == {ReservationStatus.FIRM}


def test_a_failure_then_a_retry_that_succeeds(
    client, card_order, django_capture_on_commit_callbacks
):
    order, payment = card_order
    failure = {"message": "Your card was declined.", "code": "card_declined"}
    with django_capture_on_commit_callbacks(execute=True):
        post(
            client,
            event(
                "payment_intent.payment_failed",
                intent(payment, status="requires_payment_method", last_payment_error=failure),
            ),
        )
    payment.refresh_from_db()
    order.refresh_from_db()
    assert (payment.status, payment.failure_message) == (
        PaymentStatus.FAILED,
        "Your card was declined.",
    )
    assert order.status == OrderStatus.AWAITING_PAYMENT
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", intent(payment)))
    payment.refresh_from_db()
    order.refresh_from_db()
    assert payment.status == PaymentStatus.SUCCEEDED and order.status == OrderStatus.PAID
    # Each move of the payment has its event row, in order, with why.
    moves = list(payment.events.values_list("from_status", "to_status", "reason"))
    assert [(f, t) for f, t, _why in moves] == [
        ("", PaymentStatus.PENDING),
        (PaymentStatus.PENDING, PaymentStatus.FAILED),
        (PaymentStatus.FAILED, PaymentStatus.SUCCEEDED),
    ]
    assert moves[1][2] == "Your card was declined."


# --- Refunds ----------------------------------------------------------------------------


def charge(payment: Payment, refunded: int) -> dict:
    return {
        "id": "ch_test_1",
        "object": "charge",
        "payment_intent": payment.stripe_payment_intent,
        "amount": stripe_api.to_minor_units(payment.amount, payment.currency),
        "amount_refunded": refunded,
        "currency": payment.currency.lower(),
        "refunded": refunded == stripe_api.to_minor_units(payment.amount, payment.currency),
    }


def test_refunds_are_recorded_idempotently_and_never_shrink(
    client, card_order, provisioning_calls, django_capture_on_commit_callbacks
):
    order, payment = card_order
    full = stripe_api.to_minor_units(payment.amount, payment.currency)
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", intent(payment)))
        partial = event("charge.refunded", charge(payment, 10_000))
        for _ in range(3):
            post(client, partial)
    payment.refresh_from_db()
    assert payment.amount_refunded == Decimal("100.00")
    assert payment.status == PaymentStatus.SUCCEEDED
    notes = OrderEvent.objects.filter(order=order, reason__startswith="Refund recorded")
    assert notes.count() == 1
    assert "not reversed automatically" in notes.get().reason
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("charge.refunded", charge(payment, full)))
        post(client, event("charge.refunded", charge(payment, 5_000)))  # late, out of order
    payment.refresh_from_db()
    order.refresh_from_db()
    assert payment.amount_refunded == payment.amount
    assert payment.status == PaymentStatus.REFUNDED
    assert notes.count() == 2
    refunded = payment.events.get(to_status=PaymentStatus.REFUNDED)
    assert refunded.from_status == PaymentStatus.SUCCEEDED
    assert refunded.reason.startswith("Refund recorded")
    # Provisioning is not reversed automatically: the order stays paid for staff to decide.
    assert order.status == OrderStatus.PAID
    assert provisioning_calls == [(order.pk, "queued")]
    # A failure arriving now changes nothing.
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.payment_failed", intent(payment)))
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.REFUNDED


def test_refund_objects_are_summed_once_per_refund(
    client, card_order, django_capture_on_commit_callbacks
):
    _order, payment = card_order

    def refund(refund_id, amount, status="succeeded"):
        return {
            "id": refund_id,
            "object": "refund",
            "amount": amount,
            "currency": payment.currency.lower(),
            "payment_intent": payment.stripe_payment_intent,
            "status": status,
        }

    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", intent(payment)))
        post(client, event("refund.created", refund("re_1", 5_000, "pending")))
        post(client, event("refund.updated", refund("re_1", 5_000)))
        post(client, event("refund.updated", refund("re_1", 5_000)))  # another event, same refund
        post(client, event("refund.created", refund("re_2", 2_500)))
    payment.refresh_from_db()
    assert payment.amount_refunded == Decimal("75.00")
    statuses = list(
        StripeEvent.objects.order_by("received_at", "pk").values_list("status", flat=True)
    )
    assert statuses == ["processed", "ignored", "processed", "processed", "processed"]


def test_a_refund_that_exceeds_the_payment_is_flagged(
    client, card_order, django_capture_on_commit_callbacks
):
    _order, payment = card_order
    full = stripe_api.to_minor_units(payment.amount, payment.currency)
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", intent(payment)))
        post(client, event("charge.refunded", charge(payment, full + 1)))
    stored = StripeEvent.objects.get(type="charge.refunded")
    assert stored.status == StripeEventStatus.FLAGGED
    payment.refresh_from_db()
    assert payment.amount_refunded == 0


def test_an_event_whose_processing_failed_is_retried_by_beat(
    client, card_order, monkeypatch, django_capture_on_commit_callbacks
):
    from django.utils import timezone

    from billing.tasks import payments as tasks

    order, payment = card_order
    real = webhooks.HANDLERS["payment_intent.succeeded"]

    def broken(payload):
        raise RuntimeError("database hiccup")

    monkeypatch.setitem(webhooks.HANDLERS, "payment_intent.succeeded", broken)
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, event("payment_intent.succeeded", intent(payment))).status_code == 200
    assert StripeEvent.objects.get().status == StripeEventStatus.FAILED
    monkeypatch.setitem(webhooks.HANDLERS, "payment_intent.succeeded", real)
    StripeEvent.objects.update(received_at=timezone.now() - timedelta(minutes=10))
    assert tasks.stripe_events_retry_task() == 1
    assert StripeEvent.objects.get().status == StripeEventStatus.PROCESSED
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID


# --- Undecodable bodies and clock skew --------------------------------------------------


def signed_post(client, body: bytes, header: str | None = None):
    return client.post(
        URL,
        data=body,
        content_type="application/json",
        HTTP_STRIPE_SIGNATURE=sign(body) if header is None else header,
    )


def nested(depth: int) -> dict:
    """An event whose ``data.object`` nests objects ``depth`` levels deep in all."""
    inner: dict = {"leaf": 1}
    for _ in range(depth - 3):  # the event and ``data`` are two levels, the leaf one
        inner = {"n": inner}
    return {"id": "evt_nested", "type": "customer.updated", "data": {"object": inner}}


def deep_body(data: bytes) -> bytes:
    return b'{"id": "evt_deep", "type": "x.y", "data": ' + data + b"}"


UNDECODABLE = {
    "empty": b"",
    "blank": b"  \n",
    "array": b"[]",
    "string": b'"x"',
    "number": b"1",
    "null": b"null",
    "true": b"true",
    "not json": b"not json",
    "truncated": b'{"id": "evt_1", "type": "x"',
    "bad utf-8": b"\xff\xfe",
    "bad utf-8 inside": b'{"id": "evt_\xff", "type": "customer.created", "data": {}}',
    "latin-1": '{"id": "evt_é", "type": "customer.created"}'.encode("latin-1"),
    "utf-16": json.dumps({"id": "evt_16", "type": "customer.created"}).encode("utf-16"),
    "utf-8 BOM": b"\xef\xbb\xbf" + json.dumps({"id": "evt_b", "type": "x.y"}).encode(),
    "deep arrays": deep_body(b"[" * 100_000 + b"]" * 100_000),
    "deep objects": deep_body(b'{"a":' * 5_000 + b"1" + b"}" * 5_000),
    "one level too deep": json.dumps(nested(stripe_api.WEBHOOK_MAX_DEPTH + 1)).encode(),
    "NaN": b'{"id": "evt_n", "type": "x.y", "data": {"object": {"amount": NaN}}}',
    "Infinity": b'{"id": "evt_i", "type": "x.y", "data": {"object": {"amount": -Infinity}}}',
    "NUL": b'{"id": "evt_z", "type": "x.y", "data": {"object": {"name": "a\\u0000b"}}}',
    "lone surrogate": b'{"id": "evt_s", "type": "x.y", "data": {"object": {"\\ud800": 1}}}',
    "overflowing float": b'{"id": "evt_f", "type": "x.y", "data": {"n": -1e400}}',
    "huge number": b'{"id": "evt_h", "type": "x.y", "data": {"n": ' + b"9" * 10_000 + b"}}",
    "no id": json.dumps({"type": "x.y"}).encode(),
    "id not text": json.dumps({"id": 17, "type": "x.y"}).encode(),
    "type not text": json.dumps({"id": "evt_t", "type": ["x"]}).encode(),
    "data not an object": json.dumps({"id": "evt_a", "type": "x.y", "data": [1]}).encode(),
}


@pytest.mark.parametrize("body", UNDECODABLE.values(), ids=UNDECODABLE.keys())
def test_a_correctly_signed_body_that_cannot_be_decoded_is_400_and_nothing_is_stored(
    client, eager_celery, db, body
):
    response = signed_post(client, body)
    assert response.status_code == 400
    assert StripeEvent.objects.count() == 0
    # The same body signed wrongly is refused as well.
    assert signed_post(client, body, sign(body, secret="whsec_other")).status_code == 400
    assert StripeEvent.objects.count() == 0


def test_the_signature_is_checked_on_the_raw_bytes_before_decoding(settings):
    body = b'{"id": "evt_\xff", "type": "x.y"}'  # signed, but not UTF-8
    with pytest.raises(stripe_api.InvalidPayload):
        stripe_api.webhook_event_construct(body, sign(body))
    # Bytes signed differently never get as far as decoding.
    with pytest.raises(stripe_api.SignatureVerificationError):
        stripe_api.webhook_event_construct(body, sign(body.replace(b"\xff", b"\xfe")))
    header = webhook_signature_header(body, SECRET)
    with pytest.raises(stripe_api.InvalidPayload):
        stripe_api.webhook_event_construct(body, header)


def test_nesting_up_to_the_limit_and_brackets_inside_strings_are_accepted(
    client, eager_celery, db, django_capture_on_commit_callbacks
):
    deepest = nested(stripe_api.WEBHOOK_MAX_DEPTH)
    text = {
        "id": "evt_text",
        "type": "customer.updated",
        "data": {"object": {"description": "[" * 10_000 + '{\\"' + "]"}},
    }
    with django_capture_on_commit_callbacks(execute=True):
        assert signed_post(client, json.dumps(deepest).encode()).status_code == 200
        assert signed_post(client, json.dumps(text).encode()).status_code == 200
        # Not ASCII, as UTF-8: fine.
        chinese = {"id": "evt_zh", "type": "customer.updated", "data": {"object": {"n": "深圳"}}}
        body = json.dumps(chinese, ensure_ascii=False).encode()
        assert signed_post(client, body).status_code == 200
    stored = StripeEvent.objects.get(stripe_id="evt_zh")
    assert stored.payload["data"]["object"]["n"] == "深圳"
    assert set(StripeEvent.objects.values_list("stripe_id", flat=True)) == {
        "evt_nested",
        "evt_text",
        "evt_zh",
    }


def test_a_signature_from_the_future_is_refused_like_a_stale_one(client, card_order):
    _order, payment = card_order
    body = json.dumps(event("payment_intent.succeeded", intent(payment))).encode()
    tolerance = stripe_api.WEBHOOK_TOLERANCE_S
    now = int(time.time())
    for timestamp in (now + tolerance + 60, now + 86_400, now - tolerance - 60):
        assert signed_post(client, body, sign(body, timestamp=timestamp)).status_code == 400
    assert StripeEvent.objects.count() == 0
    # Within the tolerance, either way, it is accepted (clocks drift a little).
    assert signed_post(client, body, sign(body, timestamp=now + tolerance - 30)).status_code == 200
    assert StripeEvent.objects.count() == 1


def test_the_tolerance_is_checked_both_ways_in_the_wrapper():
    body = b'{"id": "evt_1", "type": "x.y"}'
    now = 1_800_000_000
    verify = stripe_api.webhook_signature_verify
    for skew in (-300, 0, 300):
        verify(body, sign(body, timestamp=now + skew), SECRET, tolerance=300, now=now)
    for skew in (-301, 301):
        with pytest.raises(stripe_api.SignatureVerificationError, match="tolerance"):
            verify(body, sign(body, timestamp=now + skew), SECRET, tolerance=300, now=now)
    # Several v1 signatures (a secret being rolled): one matching is enough.
    mixed = sign(body, timestamp=now) + ",v1=" + "0" * 64
    verify(body, mixed, SECRET, tolerance=300, now=now)
    for header in ("", "t=,v1=abc", f"t={now}", f"v1={'0' * 64}", f"t={now},v0=abc"):
        with pytest.raises(stripe_api.SignatureVerificationError):
            verify(body, header, SECRET, tolerance=300, now=now)
    with pytest.raises(stripe_api.SignatureVerificationError):
        verify(body, sign(body, timestamp=now), "  ", tolerance=300, now=now)


def test_content_the_database_refuses_is_400_and_nothing_is_stored(
    client, eager_celery, db, monkeypatch
):
    from django.db import DataError

    real = webhooks.stripe_event_record

    def refused(*, event):
        real(event=event)  # stored, then the database refuses: all of it rolls back
        raise DataError("unsupported Unicode escape sequence")

    monkeypatch.setattr(webhooks, "stripe_event_record", refused)
    body = json.dumps(event("customer.created", {"id": "cus_1"})).encode()
    assert signed_post(client, body).status_code == 400
    assert StripeEvent.objects.count() == 0


# --- Issue 25, point 5: PaymentIntents the portal did not create --------------------------


def _foreign_intent(pi: str, invoice, minor: int) -> dict:
    return {
        "id": pi,
        "amount": minor,
        "amount_received": minor,
        "currency": invoice.currency.lower(),
        "metadata": {"invoice_number": invoice.number},
        "payment_method_types": ["card"],
    }


def test_a_foreign_intent_for_a_paid_invoice_keeps_its_real_amount_and_is_refundable(
    client, demo, eager_celery, django_capture_on_commit_callbacks
):
    order = make_order(demo)
    invoice = order.invoices.get()
    full = stripe_api.to_minor_units(invoice.gross_total, invoice.currency)
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", _foreign_intent("pi_first", invoice, full)))
        # The same invoice paid again from the Stripe dashboard.
        post(client, event("payment_intent.succeeded", _foreign_intent("pi_again", invoice, full)))
    # Both received the full amount (not the 0 still due once the first paid); Stripe's
    # clock names the payer, the other is its duplicate, which the refund action offers.
    payments = list(Payment.objects.order_by("pk"))
    assert [p.amount for p in payments] == [invoice.gross_total] * 2
    assert {p.status for p in payments} == {PaymentStatus.SUCCEEDED}
    duplicate = next(p for p in payments if p.duplicate_of_id is not None)
    payer = next(p for p in payments if p.duplicate_of_id is None)
    assert duplicate.duplicate_of == payer and not duplicate.duplicate_refund
    stored = StripeEvent.objects.get(payload__data__object__id=duplicate.stripe_payment_intent)
    assert stored.status == StripeEventStatus.FLAGGED


def test_a_foreign_intent_of_another_amount_is_flagged_not_ours_refund(
    client, demo, eager_celery, django_capture_on_commit_callbacks
):
    order = make_order(demo)
    invoice = order.invoices.get()
    with django_capture_on_commit_callbacks(execute=True):
        post(client, event("payment_intent.succeeded", _foreign_intent("pi_odd", invoice, 12345)))
    payment = Payment.objects.get()
    assert payment.amount == stripe_api.from_minor_units(12345, invoice.currency)
    assert payment.status == PaymentStatus.PENDING
    stored = StripeEvent.objects.get()
    assert stored.status == StripeEventStatus.FLAGGED
    assert stored.error.startswith("Not ours, refund: PaymentIntent pi_odd")
    order.refresh_from_db()
    assert order.status != OrderStatus.PAID
