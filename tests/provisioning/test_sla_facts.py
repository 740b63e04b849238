"""The provisioning layer gathers each node's facts from its records (late delivery, the
event history, swaps) and billing turns them into credits once, nobody claiming them."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from billing.models import Order, OrderStatus, SlaCredit
from billing.services import invoicing, orders
from inventory.models import NodeEvent
from provisioning import services, sla_facts
from provisioning.models import NodeSwap, ProvisioningRun, RunStatus
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db


def test_facts_from_the_records_give_the_hand_computed_credit(demo):
    order = make_order(demo, term="month", duration=2)
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-1", actor=demo["admin"]
    )
    run = services.run_create(order=order)
    p1, _p2 = invoicing.order_schedule(order)
    # Delivered 5 hours after the start.
    ProvisioningRun.objects.filter(pk=run.pk).update(
        status=RunStatus.DELIVERED, finished_at=order.start_at + timedelta(hours=5)
    )
    first, second = [rn.node for rn in run.run_nodes.order_by("slot")]
    # Node 1 faulty for 3 hours on day 4, then back in service.
    down = order.start_at + timedelta(days=4)
    for at, to in ((down, "faulty"), (down + timedelta(hours=3), "in_service")):
        event = NodeEvent.objects.create(node=first, from_status="", to_status=to, reason="t")
        NodeEvent.objects.filter(pk=event.pk).update(created_at=at)
    # Node 2 swapped on day 10 with 2 hours lost.
    NodeSwap.objects.create(
        order=order,
        run=run,
        failed_node=second,
        spare_node=None,
        reason="t",
        failed_at=order.start_at + timedelta(days=10),
        restored_at=order.start_at + timedelta(days=10, hours=2),
        hours_lost=Decimal("2.00"),
    )
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.READY)
    facts = dict((f.node_ref, f) for _code, f in sla_facts.order_sla_facts(order))
    assert {o.kind for o in facts[first.hostname].outages} == {"late_delivery", "faulty"}
    assert {o.kind for o in facts[second.hostname].outages} == {"late_delivery", "swap"}
    assert sla_facts.sla_credits_gather_and_record(order_id=order.pk, now=p1.end) == 2
    assert sla_facts.sla_credits_gather_and_record(order_id=order.pk, now=p1.end) == 0
    hours = Decimal((p1.end - p1.start).total_seconds()) / 3600
    credits = {c.node_ref: c for c in SlaCredit.objects.filter(order=order)}
    # Node 1: 5 h late + 3 h faulty = 8 h; node 2: 5 h late + 2 h swap = 7 h. Over a
    # 720 or 744 h month 8 h is more than 1 % (7.2 / 7.44 h): below 99 %, the 25 % tier;
    # 7 h is less: below 99.9 %, the 10 % tier.
    for hostname, down_hours, percent in ((first.hostname, 8, 25), (second.hostname, 7, 10)):
        credit = credits[hostname]
        expected = (100 * (1 - down_hours / hours)).quantize(Decimal("0.001"))
        assert credit.availability == expected
        assert credit.credit_percent == percent
        assert credit.amount == (credit.node_charge * percent / 100).quantize(Decimal("0.01"))
