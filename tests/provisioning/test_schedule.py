"""A paid order whose rental starts days later is provisioned at its start minus the
site's lead time, not at payment: the gate records when, ``provisioning_start`` waits,
the beat job ``provisioning_start_due`` starts the run once its time has come (once), and
the order page says when provisioning begins."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from billing.models import Order, OrderStatus, ProvisioningRelease
from billing.orders.selectors import order_nodes
from billing.orders.services import order_mark_paid, order_transition
from core.timezones import tz_label
from inventory.models import Node, NodeStatus, Site
from provisioning import runs, tasks
from provisioning.models import NodeStep, ProvisioningRun, RunStatus
from tests.billing.test_payments import make_order

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def autostart(settings):
    settings.PORTAL_PROVISIONING_AUTOSTART = True
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0


def paid(demo, nodes: int = 2) -> Order:
    order = make_order(demo, nodes=nodes)  # starts in a week
    order, _ = order_mark_paid(order=order)
    return order


def test_a_rental_starting_next_week_is_not_provisioned_at_payment(demo):
    order = make_order(demo, nodes=2)
    nodes = list(order_nodes(order))
    # The first node still serves another customer's rental until this one starts.
    Node.objects.filter(pk=nodes[0].pk).update(status=NodeStatus.IN_SERVICE)
    before = {n.pk: n.status for n in Node.objects.filter(pk__in=[n.pk for n in nodes])}
    order, _ = order_mark_paid(order=order)

    release = ProvisioningRelease.objects.get(order=order)
    assert release.provision_at == order.start_at - timedelta(hours=24)
    # The task billing enqueued at payment (run here in-process) waits.
    assert tasks.provisioning_start(order.pk) == f"scheduled for {release.provision_at.isoformat()}"
    assert not ProvisioningRun.objects.filter(order=order).exists()
    assert not NodeStep.objects.exists()
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID
    after = {n.pk: n.status for n in Node.objects.filter(pk__in=before)}
    assert after == before and after[nodes[0].pk] == NodeStatus.IN_SERVICE
    # The beat job finds nothing due yet.
    assert runs.provisioning_start_due(now=release.provision_at - timedelta(minutes=1)) == 0
    assert not ProvisioningRun.objects.filter(order=order).exists()


def test_the_beat_job_starts_the_run_when_its_time_comes_and_only_once(demo):
    order = paid(demo, nodes=2)
    other = paid(demo, nodes=1)
    cancelled = paid(demo, nodes=1)
    order_transition(order=cancelled, to_status=OrderStatus.CANCELLED, actor=None, reason="test")
    due = ProvisioningRelease.objects.get(order=order).provision_at
    later = due + timedelta(seconds=1)

    assert runs.provisioning_start_due(now=later) == 2  # not the cancelled one
    run = ProvisioningRun.objects.get(order=order)
    assert run.status == RunStatus.RUNNING
    order.refresh_from_db()
    assert order.status == OrderStatus.PROVISIONING
    assert ProvisioningRun.objects.filter(order=other).count() == 1
    assert not ProvisioningRun.objects.filter(order=cancelled).exists()
    # Again (the next minute, or two beats at once): nothing new.
    assert runs.provisioning_start_due(now=later + timedelta(minutes=1)) == 0
    assert ProvisioningRun.objects.filter(order=order).count() == 1


def test_a_rental_starting_within_the_lead_time_starts_at_once(demo):
    order = make_order(demo, nodes=1)
    # A site needing 8 days: the start (in a week) is already within the lead time.
    Site.objects.filter(pk=order.site_id).update(lead_time_hours=8 * 24)
    paid_at = timezone.now()
    order, _ = order_mark_paid(order=order)
    release = ProvisioningRelease.objects.get(order=order)
    assert paid_at <= release.provision_at <= timezone.now()
    assert tasks.provisioning_start(order.pk).startswith("run ")
    order.refresh_from_db()
    assert order.status == OrderStatus.PROVISIONING
    history = list(order.events.values_list("reason", flat=True))
    assert any(r.endswith(": provisioning starts.") for r in history), history


def test_the_order_page_says_when_provisioning_begins(client, demo):
    order = paid(demo, nodes=1)
    release = ProvisioningRelease.objects.get(order=order)
    at = timezone.localtime(release.provision_at, order.site.tzinfo).strftime("%Y-%m-%d %H:%M")
    client.force_login(demo["customer"])
    with translation.override("en"):
        page = client.get(reverse("dashboard_order", args=[order.number])).content.decode()
        zone = tz_label(order.site.timezone)  # "China Standard Time, UTC+08:00"
    assert (
        f"Provisioning of your nodes begins at {at} ({zone}), 24 hours before "
        "the rental starts." in page
    )
    history = list(order.events.values_list("reason", flat=True))
    assert any(f"provisioning begins at {at}, 24 hours before the start" in r for r in history)
