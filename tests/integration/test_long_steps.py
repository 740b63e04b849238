"""A burn-in longer than the broker's visibility timeout, with real workers over Redis and
PostgreSQL (simulated nodes, the real agent on the CPU path, the 24 hours at a small time
scale). The validate step runs under a short lease that it renews while it measures
(``provisioning.runs.leases``): the copy of its message that Redis hands out again finds
the lease held and returns at once, so the burn-in runs once and the order is delivered;
a worker killed in the middle of the burn-in leaves its step to be taken over once its
lease has run out, by one execution, and the run finishes."""

from __future__ import annotations

import re
import time

import pytest
from django.utils import timezone

from billing.models import Order, OrderStatus, QuoteItem
from billing.orders.services import order_mark_paid
from billing.pricing.engine import BURN_IN_CODE
from inventory.models import Site
from provisioning import runs
from provisioning.models import (
    NodeStep,
    NodeStepEvent,
    ProvisioningRun,
    RunStatus,
    StepName,
    StepStatus,
    ValidationCheck,
    ValidationProfile,
    ValidationRun,
)
from tests.billing.test_payments import make_order
from tests.integration.test_provisioning_worker import done_once, finished_run, worker_env
from tests.integration.workers import Worker, scratch_broker_url
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LEASE_S = 4  # renewed every 0.8 s
# Anything unacknowledged for this long goes back to its queue (each worker looks every
# second: portal/settings/test.py).
VISIBILITY_S = 2
AGENT_STARTS = "the agent starts"
HELD = "nothing to do"


def workers(broker: str, tmp_path, scale: str) -> tuple[Worker, Worker]:
    """Two workers on simulated nodes at ``scale`` (the 24-hour burn-in: 86400 × scale
    seconds), the agent's CPU checks at small sizes, a lease of a few seconds, and a
    visibility timeout of 2 s: while one runs the validation, the other hands its message
    out again (to itself: the one at work takes nothing more)."""
    env = worker_env(
        tmp_path,
        PORTAL_SIMULATED_TIME_SCALE=scale,
        PORTAL_PROVISIONING_LEASE_S=str(LEASE_S),
        PORTAL_VALIDATION_CPU_SIZES="gemm=128,copy=4M,allreduce=256K",
        PORTAL_BROKER_VISIBILITY_TIMEOUT=str(VISIBILITY_S),
    )
    return Worker(broker, env=env), Worker(broker, env=env)


def burnt_in_order(demo) -> Order:
    """A paid one-node order with the burn-in add-on, whose provisioning starts at once."""
    order = make_order(demo, nodes=1)
    QuoteItem.objects.create(quote=order.quote, kind="addon", addon_code=BURN_IN_CODE, quantity=1)
    Site.objects.filter(pk=order.site_id).update(lead_time_hours=8 * 24)
    order, _ = order_mark_paid(order=order)
    return order


def validating(order: Order, pair: tuple[Worker, Worker]) -> tuple[NodeStep, Worker, Worker]:
    """The validate step once it runs, the worker that holds it and the other one."""
    step = wait_until(
        lambda: NodeStep.objects.filter(
            run__order=order, name=StepName.VALIDATE, status=StepStatus.RUNNING
        ).first(),
        timeout=90,
        message="the validation to start",
    )
    holder = next(w for w in pair if step.lease_holder.startswith(f"{w.name}@"))
    return step, holder, next(w for w in pair if w is not holder)


def burning_in(step: NodeStep, attempt: int) -> bool:
    """The agent is inside the burn-in of ``attempt`` (its live check row says so)."""
    return ValidationCheck.objects.filter(
        step=step, attempt=attempt, name="burn_in", status="running"
    ).exists()


def lease_renewed(step: NodeStep) -> NodeStep:
    """The step's lease, seen moving forward while the step runs (the holder's heartbeat),
    and each time at most one lease length ahead (a short lease, not the burn-in's)."""
    first = NodeStep.objects.get(pk=step.pk)

    def moved() -> NodeStep | None:
        now = NodeStep.objects.get(pk=step.pk)
        if now.status != StepStatus.RUNNING or now.lease_until is None:
            return None
        assert (now.lease_until - timezone.now()).total_seconds() <= LEASE_S + 1
        return now if now.lease_until > first.lease_until else None

    return wait_until(moved, timeout=10, message="the lease to be renewed")


def count(log: str, text: str) -> int:
    return sum(text in line for line in log.splitlines())


def copy_held(worker: Worker, holder: str) -> str:
    """The worker's log line saying that its copy of the validation found the steps held
    by ``holder`` and did nothing."""
    return wait_until(
        lambda: next(
            (ln for ln in worker.output().splitlines() if HELD in ln and holder in ln), ""
        ),
        timeout=30,
        message=lambda: (
            "the validation's message handed out again and found held: " + worker.output()[-3000:]
        ),
    )


def test_a_burn_in_longer_than_the_visibility_timeout_runs_once_and_is_delivered(
    demo, settings, tmp_path
):
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    order = burnt_in_order(demo)
    # 24 h × 0.0001: a 9 s burn-in, over four times the visibility timeout.
    pair = workers(broker, tmp_path, "0.0001")
    try:
        step, holder, other = validating(order, pair)
        held = lease_renewed(step)
        copy_held(other, held.lease_holder)
        assert NodeStep.objects.get(pk=step.pk).status == StepStatus.RUNNING  # still at it
        run = finished_run(order)
    finally:
        logs = {w: w.stop() for w in pair}
    assert run.status == RunStatus.DELIVERED, (run.message, logs[holder][-3000:])
    order.refresh_from_db()
    assert order.status == OrderStatus.READY
    # One message, received twice: by the worker at work, then by the other one.
    [task_id] = re.findall(r"provisioning_validate\[([0-9a-f-]+)\] received", logs[holder])
    assert f"provisioning_validate[{task_id}] received" in logs[other]
    # The copy found the lease held and did nothing: the agent ran once.
    assert count(logs[holder], AGENT_STARTS) == 1 and count(logs[other], AGENT_STARTS) == 0
    step.refresh_from_db()
    assert step.status == StepStatus.DONE and step.attempt == 1
    assert step.lease_holder == held.lease_holder
    assert NodeStepEvent.objects.filter(step=step, to_status=StepStatus.RUNNING).count() == 1
    done_once(run)
    [check] = ValidationRun.objects.filter(order=order)
    assert check.profile == ValidationProfile.BURN_IN and check.status == "passed"


def test_a_worker_killed_mid_burn_in_is_taken_over_once_its_lease_runs_out(
    demo, settings, tmp_path
):
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    order = burnt_in_order(demo)
    pair = workers(broker, tmp_path, "0.0001")
    try:
        step, holder, other = validating(order, pair)
        wait_until(lambda: burning_in(step, 1), timeout=60, message="the burn-in to start")
        lease_renewed(step)
        # The broker's copy came and went (held): the message is acknowledged, so nothing
        # brings it back when the holder dies. The lease is what does.
        copy_held(other, step.lease_holder)
    except BaseException:
        for w in pair:
            w.stop()
        raise
    holder_log = holder.kill()
    killed_at = timezone.now()
    lost = NodeStep.objects.get(pk=step.pk)
    assert lost.status == StepStatus.RUNNING and lost.attempt == 1, holder_log[-3000:]
    # Nobody renews it any more: it runs out within one lease length of the kill.
    assert (lost.lease_until - killed_at).total_seconds() <= LEASE_S + 1
    time.sleep(1.5)
    assert NodeStep.objects.get(pk=step.pk).lease_until == lost.lease_until
    reaped = 0
    try:

        def finished() -> ProvisioningRun | None:
            nonlocal reaped  # the reaper, as beat runs it (every minute)
            reaped += runs.reaper()["reaped"]
            return ProvisioningRun.objects.filter(
                order=order, status__in=[RunStatus.DELIVERED, RunStatus.FAILED]
            ).first()

        run = wait_until(finished, timeout=120, interval=0.5, message="the run to finish")
    finally:
        other_log = other.stop()
    assert run.status == RunStatus.DELIVERED, (run.message, other_log[-4000:])
    step.refresh_from_db()
    # Taken over once, by the other worker, only after the first one's lease ran out: the
    # burn-in never ran twice at the same time.
    assert step.status == StepStatus.DONE and step.attempt == 2, other_log[-3000:]
    assert step.lease_holder.startswith(f"{other.name}@")
    assert reaped == 1
    running = list(
        NodeStepEvent.objects.filter(step=step, to_status=StepStatus.RUNNING).order_by("id")
    )
    assert len(running) == 2 and running[1].created_at >= lost.lease_until
    assert count(holder_log, AGENT_STARTS) == 1 and count(other_log, AGENT_STARTS) == 1
    done_once(run)
    [check] = ValidationRun.objects.filter(order=order)  # the killed attempt kept nothing
    assert check.profile == ValidationProfile.BURN_IN and check.status == "passed"
    order.refresh_from_db()
    assert order.status == OrderStatus.READY
