"""The portal's own work per provisioning step stays small: a slot's steps run in a few
phase tasks, each step costs a fixed handful of queries (two short transactions), the
driver is built once per task, and each step's log holds only its own operations (the
benchmark adds them up as the hardware time)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from provisioning import services
from provisioning.models import CLEAN_STEPS, PROVISION_STEPS, NodeStep, RunNode, StepName
from tests.provisioning.test_runs import fast, paid  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

# Per step 12 here: lease (lock with its run and order, event, update) and outcome (lock,
# event, update), each transaction's savepoint pair (a COMMIT outside tests) and the
# lifecycle move's; per phase task: the run, the slot's node, its steps and, once, the
# driver's record. Claiming the node and the fabric key add their own writes: 17.3 on
# average over the nine steps (before the phases, the shared driver and the lease taken
# with the run in one query: 25).
QUERIES_PER_STEP = 18


def test_phases_end_with_the_last_step():
    assert services.PROVISION_PHASE_ENDS[-1] == PROVISION_STEPS[-1]
    assert services.CLEAN_PHASE_ENDS[-1] == CLEAN_STEPS[-1]
    assert list(services.PROVISION_PHASE_ENDS) == sorted(
        services.PROVISION_PHASE_ENDS, key=PROVISION_STEPS.index
    )


def test_each_step_costs_a_fixed_number_of_queries_whatever_the_cluster(demo):
    counts = []
    for nodes in (1, 3):
        order = paid(demo, nodes=nodes)
        run = services.provisioning_begin(order_id=order.pk)
        slots = list(RunNode.objects.filter(run=run).values_list("slot", flat=True))
        with CaptureQueriesContext(connection) as captured:
            for slot in slots:
                for upto in services.PROVISION_PHASE_ENDS:
                    assert services.slot_advance(run_id=run.pk, slot=slot, upto=upto) == "ok"
        steps = len(slots) * len(PROVISION_STEPS)
        assert NodeStep.objects.filter(run=run, status="done").count() == steps
        counts.append(len(captured.captured_queries) / steps)
    assert max(counts) <= QUERIES_PER_STEP, counts
    assert abs(counts[0] - counts[1]) < 1, counts  # no query per other node


def test_each_step_logs_only_its_own_operations(demo):
    order = paid(demo, nodes=1)
    run = services.provisioning_begin(order_id=order.pk)
    services.slot_advance(run_id=run.pk, slot=0, upto=StepName.CHECK_OS)
    logs = dict(NodeStep.objects.filter(run=run).values_list("name", "log_excerpt"))
    assert logs[StepName.INSTALL] == "install_image: 900 s (simulated)"
    assert logs[StepName.POWER_ON] == "power_on: 180 s (simulated)"
    assert logs[StepName.CHECK_OS] == "ping_os: 0.5 s (simulated)"
