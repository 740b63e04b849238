"""Two replace-class faults on two nodes of one order are healed at once, on PostgreSQL
with real threads: each fault gets its own spare (never the same node: the spare choice
runs under ``inventory.services.placement_lock``, the reservations' exclusion constraint
is the last word) and its own replacement run; both runs are active together, are driven
in parallel to delivery and handed over; the delivery kit then names both spares, and the
SLA facts hold a swap per slot. With one free node for two faults, one gets it and the
other waits for a spare.

The runs' steps and the hand-over are the real services, driven in this process (as in
``tests/provisioning/test_runs.py``); the validation suite is replaced by its verdict
(the suite itself: ``tests/integration/test_day2.py`` with a real worker)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection
from django.utils import timezone

from core import outbox
from inventory.models import Node, NodeStatus, Reservation
from provisioning import runs as provisioning_runs
from provisioning.health import selectors as health_selectors
from provisioning.health import services as health
from provisioning.models import (
    HealthIncident,
    IncidentStatus,
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
)
from provisioning.sla import order_sla_facts
from tests import factories
from tests.provisioning.test_replacement_paths import rented  # noqa: F401 - fixture
from tests.provisioning.test_replacement_runs import HANDOVER, drive, xid_79
from tests.provisioning.test_runs import fast  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def outbox_kept(monkeypatch):
    """No broker under test: committed outbox rows stay pending for ``run_outbox``."""
    monkeypatch.setattr(outbox, "publish_now", lambda message_id: False)


def at_once(*calls: Callable[[], object]) -> list[object]:
    """Run each call in its own thread (own database connection), released together."""
    barrier = threading.Barrier(len(calls), timeout=30)
    results: list[object] = [None] * len(calls)

    def one(i: int) -> None:
        try:
            barrier.wait()
            results[i] = calls[i]()
        except Exception as exc:  # the test reads what each call got
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def test_two_faults_of_one_order_are_replaced_in_parallel_with_two_spares(rented):  # noqa: F811
    order, provision, nodes = rented
    a, b = nodes
    # XID 79 on node A, and 10 s later on node B; both acted on at the same moment.
    first, second = xid_79(a, seconds_ago=10), xid_79(b, seconds_ago=0)
    acted = at_once(
        lambda: health.incident_act(incident=first), lambda: health.incident_act(incident=second)
    )
    assert not [r for r in acted if isinstance(r, Exception)], acted

    incidents = {i.node_id: i for i in HealthIncident.objects.filter(order=order)}
    assert {i.status for i in incidents.values()} == {IncidentStatus.REPLACING}
    runs = [incidents[n.pk].replacement_run for n in nodes]
    # Each fault its own run, both active together: neither waits for the other.
    assert None not in runs and runs[0] != runs[1]
    assert {r.status for r in runs} == {RunStatus.RUNNING}
    assert ProvisioningRun.objects.filter(order=order, kind=RunKind.REPLACE).count() == 2
    swaps = {s.failed_node_id: s for s in NodeSwap.objects.filter(order=order)}
    spares = [swaps[a.pk].spare_node, swaps[b.pk].spare_node]
    assert spares[0] != spares[1] and not {s.pk for s in spares} & {a.pk, b.pk}
    assert all(s.node_type_id == a.node_type_id for s in spares)
    assert [list(r.run_nodes.values_list("node_id", flat=True)) for r in runs] == [
        [spares[0].pk],
        [spares[1].pk],
    ]
    # Each spare holds the rest of its failed node's booking; the failed nodes are faulty.
    now = timezone.now()
    for failed, spare in zip(nodes, spares, strict=True):
        assert Reservation.objects.filter(
            node=spare, group=order.reservation_group, status="firm", end_at=order.end_at
        ).exists()
        assert not Reservation.objects.filter(
            node=failed, group=order.reservation_group, status__in=("hold", "firm"),
            end_at__gt=now,
        ).exists()  # fmt: skip
        assert Node.objects.get(pk=failed.pk).status == NodeStatus.FAULTY
        assert swaps[failed.pk].failed_at == incidents[failed.pk].observed_at

    # Both runs provisioned and validated in parallel, then handed over.
    driven = at_once(lambda: drive(runs[0]), lambda: drive(runs[1]))
    assert [getattr(r, "status", r) for r in driven] == [RunStatus.DELIVERED] * 2
    assert factories.run_outbox(HANDOVER) == 2
    for incident in incidents.values():
        incident.refresh_from_db()
        assert incident.status == IncidentStatus.REPLACED and incident.handed_over_at
    slots = RunNode.objects.filter(run=provision, state=RunNodeState.ACTIVE).order_by("slot")
    assert [rn.node_id for rn in slots] == [s.pk for s in spares]
    assert all(rn.delivered_at and rn.ssh_user and rn.addresses for rn in slots)
    # The kit names both spares, neither failed node; the SLA facts a swap per slot.
    kit = health_selectors.order_delivery_kit(order)
    assert kit is not None
    for spare in spares:
        spare.refresh_from_db()
        assert spare.status == NodeStatus.IN_SERVICE
        assert spare.hostname in kit.k8s_labels
    assert not any(n.hostname in kit.k8s_labels for n in nodes)
    facts = order_sla_facts(order)
    assert len(facts) == 2
    for _code, slot_facts in facts:
        assert [o.kind for o in slot_facts.outages if o.kind == "swap"] == ["swap"]

    # Both spares fail at once while only one node of the type is free: one fault gets
    # it, the other waits for a spare (the sweep tries again); never the same node twice.
    free = provisioning_runs.spare_candidates(
        order=order, failed=a, exclude=[s.pk for s in spares], start_at=timezone.now()
    )
    assert free
    keep = Node.objects.get(pk=free[0].node_id)
    Node.objects.filter(
        site_id=a.site_id, node_type_id=a.node_type_id, status=NodeStatus.AVAILABLE
    ).exclude(pk=keep.pk).update(status=NodeStatus.MAINTENANCE)
    third, fourth = xid_79(spares[0], seconds_ago=1), xid_79(spares[1], seconds_ago=0)
    acted = at_once(
        lambda: health.incident_act(incident=third), lambda: health.incident_act(incident=fourth)
    )
    assert not [r for r in acted if isinstance(r, Exception)], acted
    statuses = sorted(
        HealthIncident.objects.filter(pk__in=[third.pk, fourth.pk]).values_list("status", flat=True)
    )
    assert statuses == [IncidentStatus.NO_SPARE, IncidentStatus.REPLACING]
    assert list(
        NodeSwap.objects.filter(order=order, failed_node__in=spares).values_list(
            "spare_node", flat=True
        )
    ) == [keep.pk]
    assert Reservation.objects.filter(node=keep, status__in=("hold", "firm")).count() == 1
