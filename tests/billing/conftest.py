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


@pytest.fixture(scope="session")
def local_tsa(tmp_path_factory):
    """An RFC 3161 timestamping authority on 127.0.0.1 (tests/billing/tsa.py)."""
    from tests.billing.tsa import LocalTSA

    tsa = LocalTSA(tmp_path_factory.mktemp("tsa"))
    yield tsa
    tsa.close()


@pytest.fixture
def signing(settings, tmp_path_factory, local_tsa):
    """Contract signing with this process's demo CAs and seals (made on first use) and
    timestamps from the local TSA, whose root is trusted."""
    settings.PORTAL_SIGNING_DIR = str(tmp_path_factory.getbasetemp() / "signing")
    settings.PORTAL_SIGNING_TSA_URL = local_tsa.url
    settings.PORTAL_SIGNING_TRUST_ROOTS = [str(local_tsa.root_pem)]
    return local_tsa


@pytest.fixture
def signatory(demo):
    """The demo manager as the provider's authorised signatory (all seller entities)."""
    from django.contrib.auth.models import Permission

    from billing.models import ContractSignatory

    manager = demo["manager"]
    manager.user_permissions.add(Permission.objects.get(codename="countersign_contract"))
    ContractSignatory.objects.update_or_create(
        user=manager, defaults={"name": "Wang Fang", "title": "Chief Financial Officer"}
    )
    return type(manager).objects.get(pk=manager.pk)  # a fresh permission cache


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
