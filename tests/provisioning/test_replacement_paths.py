"""Day two's paths without a worker (the outbox's tasks run in-process): a node staff mark
faulty while it serves an order is replaced like a replace-class fault; the order page
shows the policy form and the incident; the policy is validated; another organisation's
customer cannot approve."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from accounts import webhooks
from accounts.models import Organisation, WebhookDelivery, WebhookEvent
from billing.models import Order
from billing.orders.selectors import order_nodes
from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from inventory.models import Node, Reservation
from provisioning.health import selectors as health_selectors
from provisioning.health import services as health
from provisioning.models import (
    HealthIncident,
    IncidentStatus,
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunStatus,
    SparePool,
)
from tests import factories
from tests.billing.test_payments import make_order
from tests.provisioning.test_runs import fast  # noqa: F401 - fixture (autouse there)

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


def test_the_customer_s_endpoint_hears_degraded_cordoned_and_replaced(rented, demo):
    """node.degraded for a notify rule, node.cordoned then node.replaced for a
    replace-class fault, each once per incident, with the evidence; another
    organisation's endpoint hears nothing."""
    order, _run, nodes = rented
    mine = webhooks.endpoint_create(
        organisation=order.organisation,
        url="https://hooks.example.com/gpu",
        event_types=["node.degraded", "node.cordoned", "node.replaced"],
        actor=None,
    )
    rival = Organisation.objects.create(name="Rival Lab")
    webhooks.endpoint_create(
        organisation=rival,
        url="https://hooks.example.com/rival",
        event_types=["node.degraded", "node.cordoned", "node.replaced"],
        actor=None,
    )
    seen = timezone.now()
    notify = health.incident_open(
        node=nodes[1], rule="thermal_throttle", action="notify",
        metric="DCGM_FI_DEV_CLOCK_EVENT_REASONS", value=64.0, observed_at=seen, gpu="2",
    )  # fmt: skip
    health.incident_act(incident=notify)
    degraded = WebhookEvent.objects.get(organisation=order.organisation, type="node.degraded")
    assert degraded.data["node"] == nodes[1].hostname and degraded.data["gpu"] == "2"
    assert degraded.data["order"] == order.number and degraded.data["action"] == "notify"
    assert "DCGM_FI_DEV_CLOCK_EVENT_REASONS = 64" in degraded.data["evidence"]
    assert WebhookDelivery.objects.filter(event=degraded, endpoint=mine).count() == 1

    victim = nodes[0]
    inventory_services.node_mark_faulty(node=victim, actor=demo["admin"], reason="PSU smoke")
    factories.run_outbox("provisioning.tasks.health_node_marked_faulty")
    cordoned = WebhookEvent.objects.get(organisation=order.organisation, type="node.cordoned")
    assert cordoned.data["node"] == victim.hostname
    assert cordoned.data["replacement"] == "automatic" and cordoned.data["decide_by"] is None
    assert not WebhookEvent.objects.filter(type="node.replaced").exists()
    # The replacement run delivered: the spare is handed over and the endpoint told.
    replacement = ProvisioningRun.objects.get(order=order, kind=RunKind.REPLACE)
    ProvisioningRun.objects.filter(pk=replacement.pk).update(status=RunStatus.DELIVERED)
    health.replacement_handover(run_id=replacement.pk)
    health.replacement_handover(run_id=replacement.pk)
    replaced = WebhookEvent.objects.get(organisation=order.organisation, type="node.replaced")
    spare = NodeSwap.objects.get(order=order).spare_node
    assert replaced.data["node"] == victim.hostname and replaced.data["spare"] == spare.hostname
    assert replaced.data["status"] == "replaced" and replaced.data["handed_over_at"]
    assert not WebhookEvent.objects.filter(organisation=rival).exists()


def test_ask_me_first_cordons_with_the_deadline_in_the_event(rented, demo):
    order, _run, nodes = rented
    webhooks.endpoint_create(
        organisation=order.organisation,
        url="https://hooks.example.com/gpu",
        event_types=["node.cordoned"],
        actor=None,
    )
    health.policy_set(order=order, mode="ask", ask_minutes=30, actor=None)
    incident = health.incident_open(
        node=nodes[0], rule="xid_79", action="replace", metric="DCGM_FI_DEV_XID_ERRORS",
        value=79.0, observed_at=timezone.now(), gpu="3",
    )  # fmt: skip
    incident = health.incident_act(incident=incident)
    assert incident.status == IncidentStatus.AWAITING
    event = WebhookEvent.objects.get(type="node.cordoned")
    assert event.data["replacement"] == "ask"
    assert event.data["decide_by"] == incident.decide_by.isoformat()
    assert not ProvisioningRun.objects.filter(order=order, kind=RunKind.REPLACE).exists()


def test_a_second_fault_while_the_first_is_replaced_starts_its_own_replacement(rented, demo):
    """The evaluation finds node B failing while node A's replacement runs: B's spare and
    run start at once (each incident its own run), not after A's hand-over."""
    order, _run, nodes = rented
    seen = timezone.now()
    first, second = (
        health.incident_open(
            node=node,
            rule="xid_79",
            action="replace",
            metric="DCGM_FI_DEV_XID_ERRORS",
            value=79.0,
            observed_at=seen,
            gpu="0",
        )
        for node in nodes
    )
    first = health.incident_act(incident=first)
    second = health.incident_act(incident=second)
    assert second.status == IncidentStatus.REPLACING
    assert second.replacement_run is not None and second.replacement_run != first.replacement_run
    statuses = ProvisioningRun.objects.filter(order=order, kind=RunKind.REPLACE).values_list(
        "status", flat=True
    )
    assert list(statuses) == [RunStatus.RUNNING, RunStatus.RUNNING]
    assert first.swap.spare_node != second.swap.spare_node
    assert [e.to_status for e in second.events.order_by("created_at", "pk")] == [
        "open",
        "replacing",
    ]


REPAIRED = "provisioning.tasks.health_node_repaired"
FAULTY = "provisioning.tasks.health_node_marked_faulty"


def _bookable(node, order) -> bool:
    """Whether anyone could book the node for the rest of the order's period."""
    return (
        inventory_selectors.free_nodes(
            site=node.site_id,
            node_type=node.node_type_id,
            start_at=timezone.now() + timedelta(minutes=1),
            end_at=order.end_at,
        )
        .filter(pk=node.pk)
        .exists()
    )


def _no_spare_free(node) -> None:
    Node.objects.filter(
        site_id=node.site_id, node_type_id=node.node_type_id, status="available"
    ).update(status="maintenance")


def _repair(node, demo) -> None:
    node.refresh_from_db()
    inventory_services.node_transition(
        node=node, to_status="available", actor=demo["admin"], reason="PSU replaced"
    )


def _deliver(run) -> ProvisioningRun:
    """The replacement run's canvas in this process (simulated hardware, no wait)."""
    from tests.provisioning.test_replacement_runs import HANDOVER, drive

    run = drive(run)
    assert run.status == RunStatus.DELIVERED, run.message
    assert factories.run_outbox(HANDOVER) == 1
    return run


def test_a_node_staff_mark_faulty_with_no_spare_returns_to_its_customer_after_repair(rented, demo):
    """No spare free: the node keeps its customer's booking, out of everyone else's
    reach; repaired, it goes back to its customer (provisioned and validated again), it
    never stays free in the pool while the firm booking runs."""
    order, run, nodes = rented
    victim = nodes[0]
    _no_spare_free(victim)
    victim.refresh_from_db()
    inventory_services.node_mark_faulty(node=victim, actor=demo["admin"], reason="PSU smoke")
    assert factories.run_outbox(FAULTY) == 1
    incident = HealthIncident.objects.get(node=victim)
    assert incident.status == IncidentStatus.NO_SPARE and incident.replacement_run is None
    assert Reservation.objects.filter(node=victim, group=order.reservation_group).exists()
    assert not _bookable(victim, order)
    _repair(victim, demo)
    assert not _bookable(victim, order)  # available, and still its customer's
    assert factories.run_outbox(REPAIRED) == 1
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.REPLACING
    assert list(incident.replacement_run.run_nodes.values_list("node", flat=True)) == [victim.pk]
    _deliver(incident.replacement_run)
    incident.refresh_from_db()
    victim.refresh_from_db()
    assert incident.status == IncidentStatus.REPLACED
    assert victim.status == "in_service" and not _bookable(victim, order)
    slot = RunNode.objects.get(run=run, node=victim)
    assert slot.state == "active" and slot.slot == 0 and slot.ssh_user
    assert not NodeSwap.objects.filter(order=order).exists()
    # The customer was told (in the quote's language) it is theirs again, not of a spare.
    mail.outbox.clear()
    assert factories.run_outbox("provisioning.tasks.health_incident_email") >= 1
    assert any(f"{victim.hostname} 已修复并通过快速验证" in m.body for m in mail.outbox)
    assert not any("备用节点  已通过" in m.body for m in mail.outbox)


def test_a_node_repaired_while_its_customer_has_not_answered_returns_to_them(rented, demo):
    """ "Ask me first" and a node staff marked faulty: repaired before the customer
    answered, it returns to them instead of being swapped for a spare at the deadline."""
    order, run, nodes = rented
    health.policy_set(order=order, mode="ask", ask_minutes=30, actor=None)
    victim = nodes[0]
    victim.refresh_from_db()
    inventory_services.node_mark_faulty(node=victim, actor=demo["admin"], reason="PSU smoke")
    assert factories.run_outbox(FAULTY) == 1
    incident = HealthIncident.objects.get(node=victim)
    assert incident.status == IncidentStatus.AWAITING
    _repair(victim, demo)
    assert not _bookable(victim, order)
    assert factories.run_outbox(REPAIRED) == 1
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.REPLACING
    _deliver(incident.replacement_run)
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.REPLACED
    assert RunNode.objects.get(run=run, node=victim).state == "active"
    assert not NodeSwap.objects.filter(order=order).exists()
    # The deadline passes: nothing more happens.
    assert health.health_sweep(now=timezone.now() + timedelta(hours=1))["deadline"] == 0


def test_a_node_repaired_after_its_spare_took_over_is_free_and_the_customer_keeps_the_spare(
    rented, demo
):
    order, run, nodes = rented
    victim = nodes[0]
    victim.refresh_from_db()
    inventory_services.node_mark_faulty(node=victim, actor=demo["admin"], reason="PSU smoke")
    factories.run_outbox(FAULTY)
    spare = NodeSwap.objects.get(order=order).spare_node
    _repair(victim, demo)
    assert factories.run_outbox(REPAIRED) == 0  # nothing to return: the spare serves
    assert _bookable(victim, order)
    assert not _bookable(spare, order)
    assert RunNode.objects.get(run=run, node=spare).state == "active"
    assert ProvisioningRun.objects.filter(order=order, kind=RunKind.REPLACE).count() == 1


def test_ask_me_first_proceeds_by_itself_once_the_deadline_passes(rented):
    order, _run, nodes = rented
    health.policy_set(order=order, mode="ask", ask_minutes=30, actor=None)
    incident = health.incident_open(
        node=nodes[0], rule="xid_79", action="replace", metric="DCGM_FI_DEV_XID_ERRORS",
        value=79.0, observed_at=timezone.now(), gpu="3",
    )  # fmt: skip
    incident = health.incident_act(incident=incident)
    assert health.health_sweep(now=timezone.now() + timedelta(minutes=29))["deadline"] == 0
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.AWAITING and incident.replacement_run is None
    assert health.health_sweep(now=timezone.now() + timedelta(minutes=31))["deadline"] == 1
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.REPLACING and incident.approved_by is None
    assert incident.replacement_run.status == RunStatus.RUNNING
    assert NodeSwap.objects.get(order=order).failed_node == nodes[0]


def test_ops_see_each_spare_pool_s_target_and_the_nodes_bookable_now(rented, demo, client):
    order, _run, nodes = rented
    node = nodes[0]
    SparePool.objects.create(site_id=node.site_id, node_type_id=node.node_type_id, target=3)
    free = inventory_selectors.free_counts_now()[(node.site_id, node.node_type_id)]
    # A node that shows available under a running booking (as a repaired node going back
    # to its customer) is no spare: one free node takes the booking of nodes[1], which is
    # free instead, so the count of spares stays the same.
    spare = inventory_selectors.free_nodes(
        site=node.site_id, node_type=node.node_type_id,
        start_at=timezone.now(), end_at=order.end_at,
    ).first()  # fmt: skip
    Reservation.objects.filter(node=nodes[1], group=order.reservation_group).update(node=spare)
    Node.objects.filter(pk=nodes[1].pk).update(status="available")
    pools = health_selectors.spare_pools()
    assert [(p["pool"].target, p["free"]) for p in pools] == [(3, free)]
    client.force_login(demo["admin"])
    page = client.get("/en/admin/provisioning/sparepool/").content.decode()
    assert f'<td class="field-free_now">{free}</td>' in page
