"""The portal's own work per provisioning step stays small: a slot's steps run in one
task, each step costs a fixed handful of queries (one short transaction between two
steps), the driver is built once per task, and each step's log holds only its own
operations (the benchmark adds them up as the hardware time)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from provisioning import runs
from provisioning.models import CLEAN_STEPS, PROVISION_STEPS, NodeStep, RunNode, StepName
from tests.provisioning.test_runs import fast, paid  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

# Per step about 7 here: one transaction between two steps records the outcome of one
# and takes the lease of the next (the two rows locked with the run and order, one event
# insert, one update per row, the savepoint pair that is a COMMIT outside tests); per slot
# task: the run, the slot's node, its steps to do and, once, the driver's record.
# Claiming the node and the fabric key add their own writes: 9.2 on average over the nine steps
# (before: 17.3 with a lease and an outcome transaction per step and three phase tasks,
# 25 with a task per step).
QUERIES_PER_STEP = 10


def test_phases_end_with_the_last_step():
    assert runs.PROVISION_PHASE_ENDS[-1] == PROVISION_STEPS[-1]
    assert runs.CLEAN_PHASE_ENDS[-1] == CLEAN_STEPS[-1]
    assert list(runs.PROVISION_PHASE_ENDS) == sorted(
        runs.PROVISION_PHASE_ENDS, key=PROVISION_STEPS.index
    )


def test_each_step_costs_a_fixed_number_of_queries_whatever_the_cluster(demo):
    counts = []
    for nodes in (1, 3):
        order = paid(demo, nodes=nodes)
        run = runs.provisioning_begin(order_id=order.pk)
        slots = list(RunNode.objects.filter(run=run).values_list("slot", flat=True))
        with CaptureQueriesContext(connection) as captured:
            for slot in slots:
                for upto in runs.PROVISION_PHASE_ENDS:
                    assert runs.slot_advance(run_id=run.pk, slot=slot, upto=upto) == "ok"
        steps = len(slots) * len(PROVISION_STEPS)
        assert NodeStep.objects.filter(run=run, status="done").count() == steps
        counts.append(len(captured.captured_queries) / steps)
    assert max(counts) <= QUERIES_PER_STEP, counts
    assert abs(counts[0] - counts[1]) < 1, counts  # no query per other node


def test_each_step_logs_only_its_own_operations(demo):
    order = paid(demo, nodes=1)
    run = runs.provisioning_begin(order_id=order.pk)
    runs.slot_advance(run_id=run.pk, slot=0, upto=StepName.CHECK_OS)
    logs = dict(NodeStep.objects.filter(run=run).values_list("name", "log_excerpt"))
    assert logs[StepName.INSTALL] == "install_image: 900 s (simulated)"
    assert logs[StepName.POWER_ON] == "power_on: 180 s (simulated)"
    assert logs[StepName.CHECK_OS] == "ping_os: 0.5 s (simulated)"


def test_a_step_outcome_is_kept_when_the_next_step_is_busy(demo):
    # The outcome of one step and the lease of the next share a transaction: a next step
    # under another worker's live lease must not take the finished step's record with it.
    from datetime import timedelta

    from django.utils import timezone

    from core import lifecycle
    from provisioning.models import NodeStepEvent, StepStatus

    order = paid(demo, nodes=1)
    run = runs.provisioning_begin(order_id=order.pk)
    steps = list(NodeStep.objects.filter(run=run).order_by("position"))
    claim, power_off = steps[0], steps[1]
    lifecycle.transition(
        power_off, to=StepStatus.RUNNING, reason="another worker",
        updates={"lease_until": timezone.now() + timedelta(minutes=5), "attempt": 1},
    )  # fmt: skip
    with pytest.raises(runs.StepBusy):
        runs.steps_execute(step_ids=[claim.pk, power_off.pk])
    claim.refresh_from_db()
    power_off.refresh_from_db()
    assert claim.status == StepStatus.DONE and claim.attempt == 1
    assert power_off.status == StepStatus.RUNNING and power_off.attempt == 1
    # the finished step moved once to running and once to done: one event a move
    moves = NodeStepEvent.objects.filter(step=claim).order_by("id")
    assert list(moves.values_list("to_status", flat=True)) == [StepStatus.RUNNING, StepStatus.DONE]


def test_moves_of_several_steps_are_checked_before_anything_is_written(demo):
    from django.db import transaction

    from core import lifecycle
    from core.errors import IllegalTransition
    from provisioning.models import NodeStepEvent, StepStatus

    order = paid(demo, nodes=1)
    run = runs.provisioning_begin(order_id=order.pk)
    first, second = NodeStep.objects.filter(run=run).order_by("position")[:2]
    before = NodeStepEvent.objects.count()
    with pytest.raises(IllegalTransition), transaction.atomic():
        lifecycle.transition_each(
            [
                lifecycle.Move(first, StepStatus.RUNNING, "lease"),
                lifecycle.Move(second, StepStatus.DONE, "pending cannot be done"),
            ]
        )
    assert NodeStepEvent.objects.count() == before
    assert set(NodeStep.objects.filter(run=run).values_list("status", flat=True)) == {
        StepStatus.PENDING
    }
