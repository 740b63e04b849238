"""The validate step's lease (``provisioning.runs.leases``), in this process: a copy of the
validation (a message the broker handed out again) finds the steps held and measures
nothing; a holder whose lease ran out is taken over once and what it measured is not
kept; the heartbeat pushes the lease on, never past the step's limit, and notices a
takeover; a burn-in's run gets a deadline that covers it. (With real workers, a short
visibility timeout and a killed worker: tests/integration/test_long_steps.py.)"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import F
from django.utils import timezone

from billing.models import QuoteItem
from billing.orders.services import order_mark_paid
from billing.pricing.engine import BURN_IN_CODE
from provisioning import runs
from provisioning.models import (
    NodeStep,
    NodeStepEvent,
    ProvisioningRun,
    StepName,
    StepStatus,
    ValidationRun,
)
from provisioning.runs import leases
from provisioning.runs.plan import STEP_LEASE_GRACE_S
from provisioning.validation.interface import AgentFailed, NodeTarget, local_runner
from tests.billing.test_payments import make_order

pytestmark = pytest.mark.django_db

# The real agent on the CPU path at small sizes, run once; later calls get its document.
_AGENT = local_runner(timeout_s=120, sizes=["gemm=64", "copy=1M", "allreduce=64K"])
_DOCUMENTS: dict[str, dict[str, Any]] = {}


def agent(target: NodeTarget, profile: str) -> dict[str, Any]:
    if profile not in _DOCUMENTS:
        _DOCUMENTS[profile] = _AGENT(target, profile)
    return copy.deepcopy(_DOCUMENTS[profile])


def validating_run(demo, settings, *, burn_in: bool = False) -> ProvisioningRun:
    """A paid one-node order's run, provisioned on simulated hardware up to validation."""
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0
    settings.PORTAL_SIMULATED_FAIL = {}
    order = make_order(demo, nodes=1)
    if burn_in:
        QuoteItem.objects.create(
            quote=order.quote, kind="addon", addon_code=BURN_IN_CODE, quantity=1
        )
    order, _ = order_mark_paid(order=order)
    run = runs.provisioning_begin(order_id=order.pk)
    assert runs.slot_advance(run_id=run.pk, slot=0, upto=runs.steps_for(run.kind)[-2]) == "ok"
    return run


def validate_step(run: ProvisioningRun) -> NodeStep:
    return NodeStep.objects.get(run=run, name=StepName.VALIDATE)


def moves(step: NodeStep) -> list[str]:
    return list(
        NodeStepEvent.objects.filter(step=step).order_by("id").values_list("to_status", flat=True)
    )


def test_a_copy_of_the_validation_finds_the_steps_held_and_measures_nothing(demo, settings):
    run = validating_run(demo, settings)
    measured: list[str] = []
    copies: list[str] = []

    def runner(target: NodeTarget, profile: str) -> dict[str, Any]:
        measured.append(target.hostname)
        if len(measured) == 1:  # while the first measures, the broker hands its task out again
            copies.append(runs.run_validate(run_id=run.pk, runner=runner, holder="copy"))
        return agent(target, profile)

    assert runs.run_validate(run_id=run.pk, runner=runner, holder="first") == "validated"
    assert copies == ["held"]
    assert len(measured) == 1  # the copy ran no agent
    step = validate_step(run)
    assert step.status == StepStatus.DONE and step.attempt == 1
    assert step.lease_holder == "first" and step.lease_until is None
    assert moves(step).count(StepStatus.RUNNING) == 1
    assert ValidationRun.objects.filter(order=run.order).count() == 1


def test_a_holder_whose_lease_ran_out_is_taken_over_once_and_keeps_nothing(demo, settings):
    run = validating_run(demo, settings)
    step = validate_step(run)
    copies: list[str] = []
    calls: list[str] = []

    def runner(target: NodeTarget, profile: str) -> dict[str, Any]:
        calls.append(NodeStep.objects.get(pk=step.pk).lease_holder)
        if len(calls) == 1:
            # The first holder stalls: before its lease runs out a copy finds it held;
            # after, the next execution takes the step over (a new attempt) and finishes.
            copies.append(runs.run_validate(run_id=run.pk, runner=runner, holder="early"))
            NodeStep.objects.filter(pk=step.pk).update(
                lease_until=timezone.now() - timedelta(seconds=1)
            )
            copies.append(runs.run_validate(run_id=run.pk, runner=runner, holder="late"))
        return agent(target, profile)

    assert runs.run_validate(run_id=run.pk, runner=runner, holder="first") == "lost"
    assert copies == ["held", "validated"]
    assert calls == ["first", "late"]
    step.refresh_from_db()
    assert step.status == StepStatus.DONE and step.attempt == 2 and step.lease_holder == "late"
    # running (first), pending (its worker lost), running (late), done: once each.
    assert moves(step)[-4:] == ["running", "pending", "running", "done"]
    # Only the execution that held the step at the end kept its measurement.
    assert ValidationRun.objects.filter(order=run.order).count() == 1


def test_a_holder_whose_step_another_execution_holds_now_records_and_keeps_nothing(demo, settings):
    run = validating_run(demo, settings)
    step = validate_step(run)

    def runner(target: NodeTarget, profile: str) -> dict[str, Any]:
        # Meanwhile its lease ran out and another execution took the step; it still runs.
        NodeStep.objects.filter(pk=step.pk).update(lease_holder="next", attempt=F("attempt") + 1)
        return agent(target, profile)

    assert runs.run_validate(run_id=run.pk, runner=runner, holder="first") == "lost"
    step.refresh_from_db()
    assert step.status == StepStatus.RUNNING and step.lease_holder == "next"
    assert not ValidationRun.objects.filter(order=run.order).exists()


def test_the_heartbeat_renews_the_lease_never_past_the_limit_and_notices_a_takeover(demo, settings):
    settings.PORTAL_PROVISIONING_LEASE_S = 10
    run = validating_run(demo, settings)
    step = validate_step(run)
    now = timezone.now()
    NodeStep.objects.filter(pk=step.pk).update(
        status=StepStatus.RUNNING, lease_holder="me", lease_until=now + timedelta(seconds=10)
    )
    beat = leases.Heartbeat(step_ids=[step.pk], holder="me", until=now + timedelta(hours=25))
    assert beat.every_s == 2.0  # a fifth of the lease
    beat.renew()
    step.refresh_from_db()
    ahead = (step.lease_until - timezone.now()).total_seconds()
    assert 9 < ahead <= 10 and beat.renewals == 1 and not beat.lost.is_set()
    # Near the step's limit the lease stops there; past it, nothing is renewed.
    near = leases.Heartbeat(step_ids=[step.pk], holder="me", until=now + timedelta(seconds=3))
    near.renew()
    step.refresh_from_db()
    assert step.lease_until == near.until
    past = leases.Heartbeat(step_ids=[step.pk], holder="me", until=now - timedelta(seconds=1))
    past.renew()
    step.refresh_from_db()
    assert step.lease_until == near.until and past.renewals == 0
    # Someone else took the step over: the beat leaves their lease alone and says so.
    NodeStep.objects.filter(pk=step.pk).update(lease_holder="other")
    beat.renew()
    step.refresh_from_db()
    assert step.lease_until == near.until and beat.lost.is_set() and beat.step_ids == []


@pytest.mark.parametrize("lost_before", [0, 5])
def test_a_burn_in_s_run_has_a_deadline_that_covers_it_and_a_short_lease(
    demo, settings, lost_before
):
    """The run's hour a node is moved past the burn-in when it starts, again after a lost
    worker, but not for ever: after as many attempts as a step gets, the deadline stays."""
    settings.PORTAL_PROVISIONING_STEP_RETRIES = 4
    run = validating_run(demo, settings, burn_in=True)
    NodeStep.objects.filter(pk=validate_step(run).pk).update(attempt=lost_before)
    deadline = ProvisioningRun.objects.get(pk=run.pk).deadline_at
    # From here a burn-in of 24 h × 0.05 = 72 minutes, longer than the run's hour a node.
    settings.PORTAL_SIMULATED_TIME_SCALE = 0.05
    assert runs.run_burn_in_seconds(run) == 4320
    seen: dict[str, Any] = {}

    def runner(target: NodeTarget, profile: str) -> dict[str, Any]:
        seen["profile"] = profile
        seen["run"] = ProvisioningRun.objects.get(pk=run.pk)
        seen["step"] = validate_step(run)
        raise AgentFailed("seen enough")

    started = timezone.now()
    runs.run_validate(run_id=run.pk, runner=runner)
    assert seen["profile"] == "burn_in"
    assert seen["step"].attempt == lost_before + 1
    if lost_before == 0:
        assert seen["run"].deadline_at >= started + timedelta(seconds=runs.validate_limit_s(run))
    else:
        assert seen["run"].deadline_at == deadline < started + timedelta(hours=1, minutes=1)
    lease = (seen["step"].lease_until - started).total_seconds()
    assert 0 < lease <= settings.PORTAL_PROVISIONING_LEASE_S + 1


def test_every_step_but_validation_ends_within_the_visibility_timeout(settings):
    """A step's task outlasting the visibility timeout would be handed out again while it
    runs: only validation may (the burn-in), and its lease is renewed well inside it."""
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    longest = settings.CELERY_LONGEST_TASK_S
    assert longest < visibility
    limits = {name: limit + STEP_LEASE_GRACE_S for name, limit in runs.STEP_LIMIT_S.items()}
    assert all(limit < longest for limit in limits.values()), limits
    assert 86400 + runs.STEP_LIMIT_S[StepName.VALIDATE] > visibility  # hence the lease
    assert leases.lease_seconds() * 2 < visibility
    assert leases.lease_seconds() / leases.RENEWALS_PER_LEASE <= 60
