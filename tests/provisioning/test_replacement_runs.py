"""Replacement runs that do not go to plan, driven through the services in this process
(as in ``tests/provisioning/test_runs.py``; the validation suite replaced by its verdict):
a spare that fails its quick validation is swapped inside its run and the order's slot
ends with the one delivered; a replacement run that fails leaves its incident waiting for
a spare (never stuck "replacing"), and the sweep replaces the failed spare once one is
free. The same helpers drive the parallel replacements of
``tests/provisioning/test_replacements_parallel.py``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from inventory.models import Node, NodeStatus, Reservation
from provisioning import runs as provisioning_runs
from provisioning.health import selectors as health_selectors
from provisioning.health import services as health
from provisioning.models import (
    HealthIncident,
    IncidentStatus,
    ProvisioningRun,
    RunNode,
    RunNodeState,
    RunStatus,
)
from provisioning.sla import order_sla_facts
from provisioning.validation import interface
from tests import factories
from tests.provisioning.test_replacement_paths import rented  # noqa: F401 - fixture
from tests.provisioning.test_runs import fast  # noqa: F401 - fixture (autouse there)

pytestmark = pytest.mark.django_db

HANDOVER = "provisioning.tasks.replacement_handover"


def drive(run: ProvisioningRun, *, rounds: int = 5) -> ProvisioningRun:
    """What a replacement run's canvas does, in this process: the spare's steps, then the
    quick validation, then the delivery (which enqueues the hand-over)."""
    upto = provisioning_runs.steps_for(run.kind)[-2]  # the last step before validation
    for _ in range(rounds):
        run.refresh_from_db()
        if not run.is_active:
            break
        for slot in list(
            RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).values_list(
                "slot", flat=True
            )
        ):
            provisioning_runs.slot_advance(run_id=run.pk, slot=slot, upto=upto)
        if provisioning_runs.run_validate(run_id=run.pk) == "validated":
            provisioning_runs.run_deliver(run_id=run.pk)
    run.refresh_from_db()
    return run


def xid_79(node: Node, *, seconds_ago: float) -> HealthIncident:
    incident = health.incident_open(
        node=node, rule="xid_79", action="replace", metric="DCGM_FI_DEV_XID_ERRORS",
        value=79.0, observed_at=timezone.now() - timedelta(seconds=seconds_ago), gpu="3",
    )  # fmt: skip
    assert incident is not None
    return incident


def test_a_spare_failing_its_quick_validation_is_swapped_and_the_slot_gets_the_next(
    rented,  # noqa: F811
    monkeypatch,
):
    order, provision, nodes = rented
    victim = nodes[0]
    incident = health.incident_act(incident=xid_79(victim, seconds_ago=0))
    first_spare = incident.swap.spare_node

    def reject_first_spare(targets, **kwargs):
        results = [
            interface.NodeResult(t.node_id, t.hostname, t.node_id != first_spare.pk, [], {})
            for t in targets
        ]
        return interface.ValidationOutcome(results, all(r.accepted for r in results))

    monkeypatch.setattr(interface, "validate_nodes", reject_first_spare)
    run = drive(incident.replacement_run, rounds=8)
    assert run.status == RunStatus.DELIVERED, run.message
    assert factories.run_outbox(HANDOVER) == 1
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.REPLACED
    delivered = RunNode.objects.get(run=run, state=RunNodeState.ACTIVE)
    assert delivered.node_id != first_spare.pk
    # The order's slot: the spare delivered, with its access details; the rejected spare
    # out of it (and faulty, for ops).
    slot = RunNode.objects.get(run=provision, slot=0, state=RunNodeState.ACTIVE)
    assert slot.node_id == delivered.node_id and slot.delivered_at and slot.ssh_user
    assert RunNode.objects.get(run=provision, node=first_spare).state == RunNodeState.SWAPPED_OUT
    assert Node.objects.get(pk=first_spare.pk).status == NodeStatus.FAULTY
    kit = health_selectors.order_delivery_kit(order)
    assert kit is not None and delivered.node.hostname in kit.k8s_labels
    assert first_spare.hostname not in kit.k8s_labels


def test_a_replacement_run_that_fails_waits_for_a_spare_and_is_retried_with_the_next(
    rented,  # noqa: F811
    monkeypatch,
):
    """The spare fails its quick validation and no other is free: the run fails, the
    incident waits for a spare (not stuck "replacing"), and once one is free the sweep
    replaces the failed spare; the order's slot ends with the one delivered."""
    order, provision, nodes = rented
    victim = nodes[0]
    incident = health.incident_act(incident=xid_79(victim, seconds_ago=0))
    first_spare = incident.swap.spare_node
    held_back = list(
        Node.objects.filter(
            site_id=victim.site_id, node_type_id=victim.node_type_id, status=NodeStatus.AVAILABLE
        ).values_list("pk", flat=True)
    )
    Node.objects.filter(pk__in=held_back).update(status=NodeStatus.MAINTENANCE)

    def reject_first_spare(targets, **kwargs):
        results = [
            interface.NodeResult(t.node_id, t.hostname, t.node_id != first_spare.pk, [], {})
            for t in targets
        ]
        return interface.ValidationOutcome(results, all(r.accepted for r in results))

    monkeypatch.setattr(interface, "validate_nodes", reject_first_spare)
    failed_run = drive(incident.replacement_run)
    assert failed_run.status == RunStatus.FAILED
    swept = health.health_sweep()
    assert swept["failed"] == 1 and swept["retried"] == 1
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.NO_SPARE and incident.replacement_run is None
    assert "failed" in incident.events.order_by("-created_at", "-pk").first().reason
    mail.outbox.clear()
    assert factories.run_outbox("provisioning.tasks.health_incident_email") >= 1
    assert any("我们准备的备用节点未通过检查" in m.body for m in mail.outbox)  # zh quote
    Node.objects.filter(pk__in=held_back).update(status=NodeStatus.AVAILABLE)
    assert health.health_sweep()["retried"] == 1
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.REPLACING
    assert incident.replacement_run != failed_run and incident.swap.failed_node == first_spare
    run = drive(incident.replacement_run)
    assert run.status == RunStatus.DELIVERED, run.message
    assert factories.run_outbox(HANDOVER) == 1
    incident.refresh_from_db()
    assert incident.status == IncidentStatus.REPLACED
    second_spare = incident.swap.spare_node
    slot = RunNode.objects.get(run=provision, slot=0, state=RunNodeState.ACTIVE)
    assert slot.node == second_spare and slot.delivered_at and slot.ssh_user
    assert Node.objects.get(pk=first_spare.pk).status == NodeStatus.FAULTY
    assert Reservation.objects.filter(
        node=second_spare, group=order.reservation_group, status="firm"
    ).exists()
    facts = order_sla_facts(order)
    assert [o.kind for o in facts[0][1].outages if o.kind == "swap"] == ["swap"]
