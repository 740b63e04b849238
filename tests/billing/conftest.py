"""Fixtures the billing tests share: Stripe stand-ins and the provisioning tasks' results."""

from __future__ import annotations

import pytest

from billing import stripe_api
from provisioning import tasks as provisioning_tasks


class FakeStripe:
    """Stands in for the PaymentIntents and Refunds API in the wrapper (no network)."""

    def __init__(self):
        self.created = []
        self.intents = {}
        self.refunds = []  # minor units, in order

    def create(self, **kwargs):
        self.created.append(kwargs)
        pi_id = f"pi_test_{len(self.created)}"
        intent = {
            "id": pi_id,
            "client_secret": f"{pi_id}_secret_abc",
            "status": "requires_payment_method",
            "amount": stripe_api.to_minor_units(kwargs["amount"], kwargs["currency"]),
            "currency": kwargs["currency"].lower(),
        }
        self.intents[pi_id] = intent
        return dict(intent)

    def retrieve(self, pi_id):
        return dict(self.intents[pi_id])

    def refund_create(self, *, payment_intent_id, amount, currency, idempotency_key):
        self.refunds.append(stripe_api.to_minor_units(amount, currency))
        return {
            "id": f"re_test_{len(self.refunds)}",
            "amount": self.refunds[-1],
            "status": "succeeded",
        }

    def amount_refunded(self, pi_id):
        return sum(self.refunds), "cny"


@pytest.fixture
def fake_stripe(settings, monkeypatch) -> FakeStripe:
    """Stripe keys set (offline values) and the Stripe wrapper's calls answered in memory."""
    settings.STRIPE_SECRET_KEY = "sk_test_offline"
    settings.STRIPE_PUBLISHABLE_KEY = "pk_test_offline"
    settings.STRIPE_WEBHOOK_SECRET = "whsec_test_offline"
    fake = FakeStripe()
    monkeypatch.setattr(stripe_api, "payment_intent_create", fake.create)
    monkeypatch.setattr(stripe_api, "payment_intent_retrieve", fake.retrieve)
    monkeypatch.setattr(stripe_api, "refund_create", fake.refund_create)
    monkeypatch.setattr(stripe_api, "payment_intent_amount_refunded", fake.amount_refunded)
    return fake


@pytest.fixture
def no_stripe(settings):
    """No Stripe keys: card payments are not offered."""
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_PUBLISHABLE_KEY = ""
    settings.STRIPE_WEBHOOK_SECRET = ""


@pytest.fixture
def provisioning_calls(monkeypatch):
    """Results of the provisioning tasks enqueued (run eagerly)."""
    results = []
    original = provisioning_tasks.provisioning_start.apply_async

    def apply_async(args=None, kwargs=None, **options):
        result = original(args, kwargs, **options)
        results.append((args[0], result.get()))
        return result

    monkeypatch.setattr(provisioning_tasks.provisioning_start, "apply_async", apply_async)
    return results


@pytest.fixture
def paid_order(demo):
    """A three-month order whose first invoice is paid (by bank transfer)."""
    from billing.orders import services as orders
    from tests.billing.test_contracts import make_order

    order = make_order(demo, term="month", duration=3)
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-1", actor=demo["admin"]
    )
    return order
