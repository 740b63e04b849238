"""Provisioning runs driven step by step through the services (simulated driver, no
Celery): run and step lifecycles, steps safe to run twice, swaps, the reaper, cleaning."""

from datetime import timedelta

import pytest
from django.utils import timezone

from billing.models import OrderStatus
from billing.orders.services import order_mark_paid
from core import lifecycle
from core.errors import IllegalTransition
from inventory.models import Node, NodeStatus, Reservation, ReservationStatus
from provisioning import runs
from provisioning.models import (
    FabricAllocation,
    NodeStep,
    NodeStepEvent,
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
    StepName,
    StepStatus,
)
from provisioning.runs.spares import SpareCandidate, choose_spare
from provisioning.validation import interface
from tests.billing.test_payments import make_order

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast(settings, monkeypatch):
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0
    settings.PORTAL_SIMULATED_FAIL = {}
    settings.PORTAL_PROVISIONING_STEP_RETRIES = 1

    def accept_all(targets, **kwargs):
        return interface.ValidationOutcome(
            [interface.NodeResult(t.node_id, t.hostname, True, [], {"ok": True}) for t in targets],
            True,
        )

    monkeypatch.setattr(interface, "validate_nodes", accept_all)


def drive(run: ProvisioningRun, *, rounds: int = 5) -> ProvisioningRun:
    """What the canvas does, in this process: every slot, then validate, then deliver."""
    names = runs.steps_for(run.kind)
    for _ in range(rounds):
        run.refresh_from_db()
        if not run.is_active:
            break
        slots = RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).values_list(
            "slot", flat=True
        )
        upto = names[-2] if run.kind == RunKind.PROVISION else names[-1]
        for slot in list(slots):
            runs.slot_advance(run_id=run.pk, slot=slot, upto=upto)
        if run.kind == RunKind.CLEAN:
            runs.cleaning_finish(run_id=run.pk)
        elif runs.run_validate(run_id=run.pk) == "validated":
            runs.run_deliver(run_id=run.pk)
    run.refresh_from_db()
    return run


def paid(demo, nodes=2):
    order = make_order(demo, nodes=nodes)
    order, _ = order_mark_paid(order=order)
    return order


def test_a_paid_order_is_provisioned_validated_and_delivered(demo):
    order = paid(demo, nodes=3)
    run = runs.provisioning_begin(order_id=order.pk)
    assert run.status == RunStatus.RUNNING
    order.refresh_from_db()
    assert order.status == OrderStatus.PROVISIONING
    run = drive(run)
    assert run.status == RunStatus.DELIVERED
    order.refresh_from_db()
    assert order.status == OrderStatus.READY
    nodes = Node.objects.filter(run_nodes__run=run)
    assert {n.status for n in nodes} == {NodeStatus.IN_SERVICE}
    # every step done exactly once, in order
    steps = NodeStep.objects.filter(run=run)
    assert steps.count() == 3 * 10
    assert set(steps.values_list("status", flat=True)) == {StepStatus.DONE}
    for step in steps:
        assert NodeStepEvent.objects.filter(step=step, to_status=StepStatus.DONE).count() == 1
    for rn in RunNode.objects.filter(run=run):
        assert rn.ssh_user == "ubuntu" and rn.delivered_at
    assert FabricAllocation.objects.filter(order=order, released_at__isnull=True).count() == 1
    # the order history: paid → provisioning → validating → ready
    moves = list(order.events.order_by("created_at", "id").values_list("to_status", flat=True))
    assert moves[-3:] == ["provisioning", "validating", "ready"]
    # starting again does nothing new
    assert runs.provisioning_begin(order_id=order.pk) is None


def test_running_a_step_twice_does_no_harm(demo):
    order = paid(demo, nodes=1)
    run = runs.provisioning_begin(order_id=order.pk)
    step = NodeStep.objects.get(run=run, name=StepName.CLAIM)
    assert runs.step_execute(step_id=step.pk).status == "done"
    assert runs.step_execute(step_id=step.pk).status == "done"
    step.refresh_from_db()
    assert step.attempt == 1
    assert NodeStepEvent.objects.filter(step=step, to_status=StepStatus.DONE).count() == 1


def test_a_step_under_a_live_lease_is_not_taken_twice(demo):
    order = paid(demo, nodes=1)
    run = runs.provisioning_begin(order_id=order.pk)
    step = NodeStep.objects.get(run=run, name=StepName.CLAIM)
    lifecycle.transition(
        step, to=StepStatus.RUNNING, reason="t",
        updates={"lease_until": timezone.now() + timedelta(minutes=5), "attempt": 1},
    )  # fmt: skip
    with pytest.raises(runs.StepBusy):
        runs.step_execute(step_id=step.pk)


def test_a_node_failing_a_step_is_swapped_for_a_spare_under_the_same_leaf(demo, settings):
    order = paid(demo, nodes=2)
    run = runs.provisioning_begin(order_id=order.pk)
    victim = RunNode.objects.get(run=run, slot=0).node
    settings.PORTAL_SIMULATED_FAIL = {victim.hostname: ["install_image"]}
    run = drive(run)
    assert run.status == RunStatus.DELIVERED
    victim.refresh_from_db()
    assert victim.status == NodeStatus.FAULTY
    swap = NodeSwap.objects.get(order=order)
    assert swap.failed_node == victim and swap.spare_node is not None
    assert "install_image" in swap.reason
    assert swap.spare_node.node_type_id == victim.node_type_id
    assert swap.spare_node.leaf_switch_id == victim.leaf_switch_id
    assert swap.restored_at is not None and swap.hours_lost == 0  # the period has not begun
    # the booking moved: the failed node's part released, the spare's firm in the same group
    assert Reservation.objects.get(node=victim, group=order.reservation_group).status == (
        ReservationStatus.RELEASED
    )
    assert Reservation.objects.get(node=swap.spare_node, group=order.reservation_group).status == (
        ReservationStatus.FIRM
    )
    failed_step = NodeStep.objects.get(run=run, node=victim, name=StepName.INSTALL)
    assert failed_step.status == StepStatus.FAILED and "install_image" in failed_step.message
    order.refresh_from_db()
    assert order.status == OrderStatus.READY


def test_no_spare_fails_the_run_and_leaves_no_node_in_provisioning(demo, settings):
    settings.PORTAL_PROVISIONING_MAX_SWAPS_PER_NODE = 0
    order = paid(demo, nodes=2)
    run = runs.provisioning_begin(order_id=order.pk)
    victim = RunNode.objects.get(run=run, slot=1).node
    settings.PORTAL_SIMULATED_FAIL = {victim.hostname: ["power_on"]}
    run = drive(run)
    assert run.status == RunStatus.FAILED
    assert "no spare" in run.message
    assert not Node.objects.filter(
        run_nodes__run=run, status__in=[NodeStatus.PROVISIONING, NodeStatus.VALIDATING]
    ).exists()


def test_validation_rejecting_a_node_swaps_it(demo, monkeypatch):
    order = paid(demo, nodes=2)
    run = runs.provisioning_begin(order_id=order.pk)
    bad = RunNode.objects.get(run=run, slot=1).node

    def reject_bad(targets, **kwargs):
        return interface.ValidationOutcome(
            [
                interface.NodeResult(
                    t.node_id, t.hostname, t.node_id != bad.pk,
                    [] if t.node_id != bad.pk else ["gemm below threshold"], {},
                )
                for t in targets
            ],
            True,
        )  # fmt: skip

    monkeypatch.setattr(interface, "validate_nodes", reject_bad)
    run = drive(run)
    assert run.status == RunStatus.DELIVERED
    swap = NodeSwap.objects.get(order=order)
    assert swap.failed_node == bad and "gemm below threshold" in swap.reason


def test_the_reaper_resumes_a_step_whose_worker_died_and_releases_orphans(demo):
    order = paid(demo, nodes=1)
    run = runs.provisioning_begin(order_id=order.pk)
    launch = ProvisioningRun.objects.get(pk=run.pk).launch
    runs.step_execute(step_id=NodeStep.objects.get(run=run, name=StepName.CLAIM).pk)
    step = NodeStep.objects.get(run=run, name=StepName.POWER_OFF)
    lifecycle.transition(
        step, to=StepStatus.RUNNING, reason="worker took it",
        updates={"lease_until": timezone.now() + timedelta(minutes=10), "attempt": 1},
    )  # fmt: skip
    assert runs.reaper()["reaped"] == 0  # the lease is live: nothing to do
    result = runs.reaper(now=timezone.now() + timedelta(minutes=11))
    assert result["reaped"] == 1 and result["relaunched"] == 1
    step.refresh_from_db()
    assert step.status == StepStatus.PENDING
    assert ProvisioningRun.objects.get(pk=run.pk).launch == launch + 1
    run = drive(run)
    assert run.status == RunStatus.DELIVERED
    step.refresh_from_db()
    assert step.attempt == 2 and step.status == StepStatus.DONE
    # a node left in provisioning by an ended run is released by the reaper
    node = Node.objects.get(run_nodes__run=run)
    lifecycle.transition(node, to=NodeStatus.AVAILABLE, reason="t")
    lifecycle.transition(node, to=NodeStatus.RESERVED, reason="t")
    lifecycle.transition(node, to=NodeStatus.PROVISIONING, reason="t")
    assert runs.reaper()["released"] == 1
    node.refresh_from_db()
    assert node.status == NodeStatus.AVAILABLE


def test_a_run_past_its_deadline_fails(demo):
    order = paid(demo, nodes=1)
    run = runs.provisioning_begin(order_id=order.pk)
    assert runs.reaper(now=timezone.now() + timedelta(hours=2))["failed"] == 1
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "deadline" in run.message


def test_cleaning_wipes_the_nodes_and_returns_them_available(demo, settings):
    order = paid(demo, nodes=2)
    run = drive(runs.provisioning_begin(order_id=order.pk))
    assert run.status == RunStatus.DELIVERED
    nodes = list(Node.objects.filter(run_nodes__run=run).order_by("hostname"))
    settings.PORTAL_SIMULATED_FAIL = {nodes[1].hostname: ["secure_erase"]}
    order.refresh_from_db()
    from billing.models import Order

    Order.objects.filter(pk=order.pk).update(end_at=timezone.now() - timedelta(minutes=1))
    assert runs.orders_end_due() == 1
    order.refresh_from_db()
    assert order.status == OrderStatus.ENDED
    clean = ProvisioningRun.objects.get(order=order, kind=RunKind.CLEAN)
    clean = drive(clean)
    for n in nodes:
        n.refresh_from_db()
    assert nodes[0].status == NodeStatus.AVAILABLE
    assert nodes[1].status == NodeStatus.FAULTY
    assert clean.status == RunStatus.FAILED  # one node failed cleaning
    erase = NodeStep.objects.get(run=clean, node=nodes[0], name=StepName.ERASE)
    assert erase.status == StepStatus.DONE
    assert not FabricAllocation.objects.filter(order=order, released_at__isnull=True).exists()


def test_run_lifecycle_refuses_illegal_moves(demo):
    order = paid(demo, nodes=1)
    run = drive(runs.provisioning_begin(order_id=order.pk))
    with pytest.raises(IllegalTransition):
        lifecycle.transition(run, to=RunStatus.RUNNING, reason="again")
    step = NodeStep.objects.filter(run=run).first()
    with pytest.raises(IllegalTransition):
        lifecycle.transition(step, to=StepStatus.RUNNING, reason="again")


def test_staff_cancel_and_retry(demo, settings, admin_user):
    order = paid(demo, nodes=1)
    run = runs.provisioning_begin(order_id=order.pk)
    node = RunNode.objects.get(run=run).node
    settings.PORTAL_SIMULATED_FAIL = {node.hostname: ["boot_os"]}
    settings.PORTAL_PROVISIONING_MAX_SWAPS_PER_NODE = 0
    run = drive(run)
    assert run.status == RunStatus.FAILED
    settings.PORTAL_SIMULATED_FAIL = {}
    failed = NodeStep.objects.get(run=run, status=StepStatus.FAILED)
    # the slot lost its node (no spare): a retry is refused with a message
    with pytest.raises(Exception, match="no longer part"):
        runs.step_retry(step=failed, actor=admin_user)
    other = paid(demo, nodes=1)
    run2 = runs.provisioning_begin(order_id=other.pk)
    runs.run_cancel(run=run2, actor=admin_user, reason="customer asked")
    run2.refresh_from_db()
    assert run2.status == RunStatus.CANCELLED
    assert not NodeStep.objects.filter(run=run2, status=StepStatus.PENDING).exists()


def test_spare_choice_prefers_the_same_leaf_then_the_cluster_then_the_rack():
    c = [
        SpareCandidate(1, "z-other-leaf", leaf_id=9, rack_id=1),
        SpareCandidate(2, "b-cluster-leaf", leaf_id=5, rack_id=2),
        SpareCandidate(3, "c-same-leaf", leaf_id=4, rack_id=3),
        SpareCandidate(4, "a-same-leaf-same-rack", leaf_id=4, rack_id=1),
    ]
    assert choose_spare(c, failed_leaf_id=4, failed_rack_id=1, cluster_leaf_ids={5}).node_id == 4
    assert (
        choose_spare(c[:2], failed_leaf_id=4, failed_rack_id=1, cluster_leaf_ids={5}).node_id == 2
    )
    assert choose_spare(c[:1], failed_leaf_id=4, failed_rack_id=7).node_id == 1
    assert choose_spare([], failed_leaf_id=4, failed_rack_id=1) is None
