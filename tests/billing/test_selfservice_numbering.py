"""Gapless numbers do not serialise self-service ordering: an order takes its quote, order
and invoice numbers (row locks held to the commit) only after its nodes are placed and
held, and a refused order never takes them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Organisation
from billing.models import NumberSequence
from billing.pricing.periods import rental_period, site_today
from billing.shop.selfservice import CapacityTaken, order_self_service
from inventory.models import Node, NodeType, Reservation, Site
from inventory.services import reservation_hold

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("online_payments")]


def _start(site: Site):
    return site_today(site) + timedelta(days=10)


def _order(node_count: int):
    customer = get_user_model().objects.get(username="customer")
    site = Site.objects.get(code="HK")
    return order_self_service(
        user=customer,
        organisation=Organisation.objects.get(memberships__user=customer),
        site=site,
        node_type=NodeType.objects.get(code="h100-8x-nvlink"),
        node_count=node_count,
        card_gpu_model_id=None,
        cards_per_node=0,
        term="day",
        duration=3,
        start_date=_start(site),
        addons={},
        payment_method="card",
        ip="198.51.100.7",
    )


def _first(queries: list[str], needle: str) -> int:
    return next(i for i, sql in enumerate(queries) if needle in sql)


def test_an_order_locks_its_numbers_only_after_its_nodes_are_held(demo):
    with CaptureQueriesContext(connection) as ctx:
        order = _order(2)
    queries = [q["sql"] for q in ctx.captured_queries]
    held = _first(queries, 'INSERT INTO "inventory_reservation"')
    searched = _first(queries, '"inventory_node"')
    numbered = _first(queries, '"billing_numbersequence"')
    assert searched < held < numbered
    assert order.number.startswith("O-HK-")
    assert order.quote.number.startswith("Q-HK-")
    held_for = Reservation.objects.filter(group=order.reservation_group)
    assert {r.owner_ref for r in held_for} == {f"order:{order.number}"}


def test_a_refused_order_takes_no_number(demo):
    hk = Site.objects.get(code="HK")
    start_at, end_at = rental_period(site=hk, start_date=_start(hk), term="day", duration=3)
    reservation_hold(  # every Hong Kong H100 node over the period
        nodes=list(Node.objects.filter(site=hk, node_type__code="h100-8x-nvlink")),
        start_at=start_at,
        end_at=end_at,
        owner_ref="order:taken",
        firm=True,
    )
    with CaptureQueriesContext(connection) as ctx, pytest.raises(CapacityTaken):
        _order(2)
    assert not any("billing_numbersequence" in q["sql"] for q in ctx.captured_queries)
    assert not NumberSequence.objects.filter(kind="Q").exists()
