"""``seed_demo``'s running order (billing/demo/running.py): the demo customer's order that
``make run``'s worker provisions at once. Seeded twice it is one order; it is paid, its
rental started today, and the beat job that starts due runs (``provisioning-start-due``)
picks it. The delivery itself is the real pipeline's, proven end to end by
``tests/integration/test_provisioning_worker.py`` (a paid order delivered by a worker on
simulated hardware, validated, and cleaned at its end)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from billing.demo import running
from billing.models import Invoice, Order, OrderStatus, ProvisioningRelease
from billing.orders.selectors import order_nodes
from billing.pricing import periods
from billing.pricing.periods import site_today
from inventory.models import Node, NodeStatus, Reservation, ReservationStatus
from portal.management.commands.seed_demo import DEMO_BOOKING
from provisioning.models import ProvisioningRun, RunKind
from provisioning.runs import provisioning_start_due

pytestmark = pytest.mark.django_db


def seed(**streams: io.StringIO) -> str:
    out = io.StringIO()
    call_command("seed_demo", stdout=out, **streams)
    return out.getvalue()


def demo_orders(org):
    return Order.objects.filter(organisation=org, idempotency_key__startswith=running.KEY_PREFIX)


def test_seed_demo_makes_one_running_order_that_the_start_due_job_starts(demo, settings):
    settings.PORTAL_SEED_DEMO_RUNNING_ORDER = True
    first = seed()
    second = seed()

    orders = list(demo_orders(demo["org"]))
    assert len(orders) == 1, orders
    order = orders[0]
    assert f"running demo order: {order.number}" in first
    assert f"running demo order: {order.number}" in second
    assert order.status == OrderStatus.PAID
    # Its rental began today (site time) and runs a month; two Shenzhen H100 nodes,
    # booked firm, none of them the demo's other booking's.
    now = timezone.now()
    sz = demo["sz"]
    assert order.site == sz and order.quote.start_date == site_today(sz)
    assert order.start_at <= now < order.end_at
    nodes = order_nodes(order)
    assert len(nodes) == running.NODES
    assert {n.node_type.code for n in nodes} == {running.NODE_TYPE}
    held = Reservation.objects.filter(group=order.reservation_group)
    assert {r.status for r in held} == {ReservationStatus.FIRM}
    other = set(
        Reservation.objects.filter(owner_ref=DEMO_BOOKING).values_list("node_id", flat=True)
    )
    assert other and not other & {n.pk for n in nodes}
    assert order.ssh_keys.filter(public_key=running.DEMO_SSH_KEY).exists()

    # One history, made by the services at the times they would have run: ordered three
    # days ago, paid by bank transfer the next day, released with the provisioning time
    # (the start minus the lead time) already past.
    invoice = Invoice.objects.get(order=order)
    release = ProvisioningRelease.objects.get(order=order)
    assert order.quote.created_at <= order.created_at <= invoice.issued_at < order.paid_at
    assert now - order.created_at > timedelta(days=2)
    assert order.paid_at <= release.released_at
    assert invoice.paid_at is not None and invoice.amount_paid == invoice.gross_total
    assert release.provision_at <= now
    assert order.payment_due_at >= order.paid_at
    # The clocks are the real ones again.
    assert abs(timezone.now() - datetime.now(tz=UTC)) < timedelta(seconds=5)
    assert periods.datetime is datetime

    # The beat job starts it (and only once); the worker then runs it.
    assert provisioning_start_due() == 1
    run = ProvisioningRun.objects.get(order=order, kind=RunKind.PROVISION)
    order.refresh_from_db()
    assert order.status == OrderStatus.PROVISIONING
    assert run.run_nodes.count() == running.NODES
    assert provisioning_start_due() == 0


def test_a_demo_order_that_ended_is_followed_by_a_new_one(demo, settings):
    settings.PORTAL_SEED_DEMO_RUNNING_ORDER = True
    old = running.demo_running_order()
    Order.objects.filter(pk=old.pk).update(status=OrderStatus.ENDED)
    Reservation.objects.filter(group=old.reservation_group).update(
        status=ReservationStatus.RELEASED
    )
    new = running.demo_running_order()
    assert new.pk != old.pk and new.status == OrderStatus.PAID
    assert running.demo_running_order().pk == new.pk


def test_seed_demo_goes_on_without_the_order_when_no_h100_node_is_free(demo, settings):
    settings.PORTAL_SEED_DEMO_RUNNING_ORDER = True
    Node.objects.filter(site=demo["sz"], node_type=demo["h100"]).update(
        status=NodeStatus.MAINTENANCE
    )
    err = io.StringIO()
    out = seed(stderr=err)
    assert "no running demo order" in err.getvalue()
    assert "Demo data ready" in out
    assert not demo_orders(demo["org"]).exists()
