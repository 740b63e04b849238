"""The provisioning layer gathers each node's facts from its records (late delivery, the
event history, swaps) and billing turns them into credits once, nobody claiming them."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import ROUND_DOWN, Decimal

import pytest

from billing.invoicing import services as invoicing
from billing.models import Order, OrderStatus, SlaCredit
from billing.orders import services as orders
from inventory.models import NodeEvent
from provisioning import runs, sla
from provisioning.models import (
    NodeSwap,
    ProvisioningRun,
    RunStatus,
    ValidationNodeResult,
    ValidationRun,
)
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db


def test_facts_from_the_records_give_the_hand_computed_credit(demo):
    # From the 1st: the first billing period is the calendar month measured (744 h).
    order = make_order(demo, term="month", duration=2, start=date(2027, 1, 1))
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-1", actor=demo["admin"]
    )
    run = runs.run_create(order=order)
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
    facts = dict((f.node_ref, f) for _code, f in sla.order_sla_facts(order))
    assert {o.kind for o in facts[first.hostname].outages} == {"late_delivery", "faulty"}
    assert {o.kind for o in facts[second.hostname].outages} == {"late_delivery", "swap"}
    assert sla.sla_credits_gather_and_record(order_id=order.pk, now=p1.end) == 2
    assert sla.sla_credits_gather_and_record(order_id=order.pk, now=p1.end) == 0
    hours = Decimal((p1.end - p1.start).total_seconds()) / 3600
    credits = {c.node_ref: c for c in SlaCredit.objects.filter(order=order)}
    # Node 1: 5 h late + 3 h faulty = 8 h; node 2: 5 h late + 2 h swap = 7 h. Over a
    # 720 or 744 h month 8 h is more than 1 % (7.2 / 7.44 h): below 99 %, the 25 % tier;
    # 7 h is less: below 99.9 %, the 10 % tier.
    for hostname, down_hours, percent in ((first.hostname, 8, 25), (second.hostname, 7, 10)):
        credit = credits[hostname]
        # Shown truncated to three places (the tier uses the exact value).
        expected = (100 * (1 - down_hours / hours)).quantize(Decimal("0.001"), ROUND_DOWN)
        assert credit.availability == expected
        assert credit.credit_percent == percent
        assert credit.amount == (credit.node_charge * percent / 100).quantize(Decimal("0.01"))


def _validation(node, order, at, *, accepted, measured, acceptance=False):
    """A finished validation run of ``node`` at ``at`` measuring GEMM at ``measured``."""
    run = ValidationRun.objects.create(
        profile="acceptance" if acceptance else "quick",
        order=order if acceptance else None,
        status="passed" if accepted else "failed",
        finished_at=at,
    )
    ValidationNodeResult.objects.create(
        run=run,
        node=node,
        hostname=node.hostname,
        gpu_model="A100-40G",
        accepted=accepted,
        rule_results=[{"metric": "gemm_tflops_bf16", "measured": str(measured)}],
    )
    return run


def test_failed_and_degraded_revalidations_are_downtime_against_the_acceptance_baseline(demo):
    # From the 1st: the first billing period is the calendar month measured (744 h).
    order = make_order(demo, term="month", duration=2, start=date(2027, 1, 1))
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-1", actor=demo["admin"]
    )
    run = runs.run_create(order=order)
    p1, _p2 = invoicing.order_schedule(order)
    ProvisioningRun.objects.filter(pk=run.pk).update(
        status=RunStatus.DELIVERED, finished_at=order.start_at
    )  # on time: no late delivery
    first, second = [rn.node for rn in run.run_nodes.order_by("slot")]
    start = order.start_at
    _validation(
        first, order, start - timedelta(hours=1), accepted=True, measured=300, acceptance=True
    )
    _validation(
        second, order, start - timedelta(hours=1), accepted=True, measured=300, acceptance=True
    )
    # Node 1: a re-check on day 5 passes its rules but measures 240 (20 % below the
    # acceptance run's 300, beyond the 10 % margin) until a re-check 6 h later at 295.
    _validation(first, order, start + timedelta(days=5), accepted=True, measured=240)
    _validation(first, order, start + timedelta(days=5, hours=6), accepted=True, measured=295)
    # Node 1: a failed re-check on day 8, back 4 h later.
    _validation(first, order, start + timedelta(days=8), accepted=False, measured=0)
    _validation(first, order, start + timedelta(days=8, hours=4), accepted=True, measured=298)
    # Node 2: 280 is within 10 % of 300: not degraded, no credit.
    _validation(second, order, start + timedelta(days=5), accepted=True, measured=280)
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.READY)

    facts = dict((f.node_ref, f) for _code, f in sla.order_sla_facts(order))
    assert sorted(o.kind for o in facts[first.hostname].outages) == [
        "degraded",
        "validation_failed",
    ]
    assert list(facts[second.hostname].outages) == []
    assert sla.sla_credits_gather_and_record(order_id=order.pk, now=p1.end) == 1
    credit = SlaCredit.objects.get(order=order)
    assert credit.node_ref == first.hostname
    hours = Decimal((p1.end - p1.start).total_seconds()) / 3600
    # 6 h degraded + 4 h failed = 10 h of a 720 or 744 h month: more than 1 % (7.2 /
    # 7.44 h), less than 5 %: below 99 %, the 25 % tier.
    assert credit.availability == (100 * (1 - 10 / hours)).quantize(Decimal("0.001"), ROUND_DOWN)
    assert credit.credit_percent == 25
