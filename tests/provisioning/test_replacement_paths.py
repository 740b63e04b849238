"""Day two's paths without a worker (the outbox's tasks run in-process): a node staff mark
faulty while it serves an order is replaced like a replace-class fault; the order page
shows the policy form and the incident; the policy is validated; another organisation's
customer cannot approve."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from billing.models import Order
from billing.orders.selectors import order_nodes
from inventory import services as inventory_services
from inventory.models import Reservation
from provisioning.health import services as health
from provisioning.models import (
    HealthIncident,
    IncidentStatus,
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunStatus,
)
from tests import factories
from tests.billing.test_payments import make_order

pytestmark = pytest.mark.django_db


@pytest.fixture
def rented(demo):
    """An order of two nodes as delivered: ready, its nodes in service, rental running."""
    order = make_order(demo, nodes=2)
    start = timezone.now() - timedelta(hours=1)
    Order.objects.filter(pk=order.pk).update(start_at=start, status="ready")
    Reservation.objects.filter(group=order.reservation_group).update(
        start_at=start, held_from=start, status="firm"
    )
    run = ProvisioningRun.objects.create(
        order=order, kind=RunKind.PROVISION, status=RunStatus.DELIVERED
    )
    nodes = order_nodes(order)
    for i, node in enumerate(nodes):
        RunNode.objects.create(run=run, node=node, slot=i, delivered_at=start, ssh_user="ubuntu")
    type(nodes[0]).objects.filter(pk__in=[n.pk for n in nodes]).update(status="in_service")
    order.refresh_from_db()
    return order, run, nodes


def test_a_node_staff_mark_faulty_during_a_rental_is_replaced(rented, demo):
    order, _run, nodes = rented
    victim = nodes[0]
    victim.refresh_from_db()
    inventory_services.node_mark_faulty(node=victim, actor=demo["admin"], reason="PSU smoke")
    assert factories.run_outbox("provisioning.tasks.health_node_marked_faulty") >= 1
    incident = HealthIncident.objects.get(node=victim)
    assert incident.rule == health.STAFF_FAULT_RULE and incident.order == order
    assert incident.status == IncidentStatus.REPLACING
    swap = NodeSwap.objects.get(order=order)
    assert swap.failed_node == victim and swap.spare_node.node_type_id == victim.node_type_id
    # The spare holds the rest of the booking; the failed node holds nothing any more, so
    # after repair it does not keep the customer's booking and shows free honestly.
    assert Reservation.objects.filter(node=swap.spare_node, group=order.reservation_group).exists()
    assert not Reservation.objects.filter(
        node=victim, group=order.reservation_group, status__in=("hold", "firm"),
        end_at__gt=timezone.now(),
    ).exists()  # fmt: skip
    replacement = ProvisioningRun.objects.get(order=order, kind=RunKind.REPLACE)
    assert replacement.status == RunStatus.RUNNING
    assert incident.replacement_run == replacement
    # Marking the same node again opens nothing new.
    assert health.incident_from_staff_fault(node_id=victim.pk) is None


def test_the_order_page_has_the_policy_and_the_kit_and_checks_the_policy(
    rented, demo, client, django_assert_max_num_queries
):
    order, _run, nodes = rented
    client.force_login(demo["customer"])
    with django_assert_max_num_queries(80):
        page = client.get(f"/en/account/orders/{order.number}/").content.decode()
    assert 'name="mode" value="automatic" checked' in page
    assert 'id="kit-hostfile"' in page and all(n.hostname in page for n in nodes)
    zh = client.get(f"/zh-hans/account/orders/{order.number}/").content.decode()
    assert "节点故障时" in zh and "交付资料包" in zh
    url = f"/en/account/orders/{order.number}/replacement-policy"
    client.post(url, {"mode": "ask", "ask_minutes": "2"})
    assert not hasattr(order, "replacement_policy") or order.replacement_policy is None
    client.post(url, {"mode": "ask", "ask_minutes": "45"})
    order.refresh_from_db()
    assert order.replacement_policy.mode == "ask" and order.replacement_policy.ask_minutes == 45
