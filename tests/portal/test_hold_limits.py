"""Issue 9, point 8: no free capacity hoarding (hold limits per organisation, lower
without verified legal details) and an idempotent Back-and-Accept."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils.translation import override

from billing.models import Order, Quote
from billing.pricing.periods import site_today
from inventory.models import Reservation, ReservationStatus, Site

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("online_payments")]


@pytest.fixture
def customer(demo):
    return get_user_model().objects.get(username="customer")


def url(name: str) -> str:
    with override("en"):
        return reverse(name)


def params(**kw: str) -> dict[str, str]:
    start = site_today(Site.objects.get(code="SZ")) + timedelta(days=7)
    data = {
        "site": "SZ",
        "node_type": "h100-8x-nvlink",
        "node_count": "1",
        "term": "month",
        "duration": "1",
        "start_date": start.isoformat(),
        "payment_method": "card",
    }
    data.update(kw)
    return data


def test_back_and_accept_again_shows_the_existing_order(client, customer):
    client.force_login(customer)
    page = client.get(url("configure"), params())
    key = page.context["idempotency_key"]
    assert f'name="idempotency_key" value="{key}"' in page.content.decode()
    first = client.post(url("configure_accept"), {**params(), "idempotency_key": key})
    again = client.post(url("configure_accept"), {**params(), "idempotency_key": key})
    order = Order.objects.get()
    assert first["Location"] == again["Location"] == reverse("order_pay", args=[order.number])
    assert Quote.objects.count() == 1
    assert Reservation.objects.filter(group=order.reservation_group).count() == 1
    # A fresh form (a new key) is a new order.
    fresh = client.get(url("configure"), params()).context["idempotency_key"]
    assert fresh != key
    client.post(url("configure_accept"), {**params(), "idempotency_key": fresh})
    assert Order.objects.count() == 2


def test_unpaid_orders_and_held_nodes_are_limited(client, customer, settings):
    settings.SELF_SERVICE_HOLD_LIMITS = {
        "verified": {"unpaid_orders": 2, "held_nodes": 3},
        "unverified": {"unpaid_orders": 1, "held_nodes": 1},
    }
    client.force_login(customer)
    client.post(url("configure_accept"), params(node_count="2"))
    too_many_nodes = client.post(url("configure_accept"), params(node_count="2"))
    assert Order.objects.count() == 1
    html = too_many_nodes.content.decode()
    assert "may hold at most 3 nodes" in html and "2 are held now" in html
    client.post(url("configure_accept"), params(node_count="1"))
    assert Order.objects.count() == 2
    third = client.post(url("configure_accept"), params(node_count="1"))
    assert Order.objects.count() == 2
    assert "already has 2 unpaid orders" in third.content.decode()
    held = Reservation.objects.filter(status=ReservationStatus.HOLD).exclude(
        owner_ref="order:demo-seed"
    )
    assert held.count() == 3


def test_organisations_without_legal_details_may_hold_less(client, customer, settings):
    settings.SELF_SERVICE_HOLD_LIMITS = {
        "verified": {"unpaid_orders": 3, "held_nodes": 64},
        "unverified": {"unpaid_orders": 1, "held_nodes": 8},
    }
    org = customer.memberships.get().organisation
    org.tax_id = ""
    org.save(update_fields=["tax_id"])
    client.force_login(customer)
    client.post(url("configure_accept"), params())
    refused = client.post(url("configure_accept"), params())
    assert Order.objects.count() == 1
    html = refused.content.decode()
    assert "already has 1 unpaid order" in html
    assert "legal name and tax ID on file may hold more" in html
