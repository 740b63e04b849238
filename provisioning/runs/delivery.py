"""Cluster validation once every slot is provisioned, and delivery: accepted nodes go in
service and the order is ready; rejected ones are swapped and the canvas relaunched.

Validation (with the 24-hour burn-in, longer than the broker's visibility timeout) runs
under a lease that it renews while it measures (``leases``): a copy of its task that the
broker hands out again finds the steps held and returns; a holder that died leaves them
to be taken over, once, when its lease runs out."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import Order, OrderStatus
from billing.orders.selectors import order_burn_in
from billing.orders.services import order_transition
from core import jobs, lifecycle
from core.texts import Text
from inventory.models import HardwareDriverKind, Node, NodeStatus
from provisioning.access import delivered_host_keys
from provisioning.agent.profiles import PROFILES
from provisioning.drivers.base import DriverError, HardwareDriver
from provisioning.models import (
    PROVISION_STEPS,
    NodeStep,
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
    StepName,
    StepStatus,
    ValidationProfile,
)
from provisioning.runs import leases
from provisioning.runs.drivers import driver_for
from provisioning.runs.failure import run_fail
from provisioning.runs.plan import (
    EMAIL_TASK,
    HANDOVER_TASK,
    LOG_EXCERPT_CHARS,
    STEP_LEASE_GRACE_S,
    STEP_LIMIT_S,
)
from provisioning.runs.records import run_back_to_running, run_launch, step_move
from provisioning.runs.swaps import node_swap
from provisioning.validation import interface
from provisioning.validation import selectors as validation_selectors
from provisioning.validation import services as validation_services

logger = logging.getLogger(__name__)

#: A burn-in on simulated hardware lasts the 24 hours times the simulated time scale, and
#: at least this long (a scale of 0 still runs its rounds once).
BURN_IN_SIMULATED_MIN_S = 2.0


def run_simulated(run: ProvisioningRun) -> bool:
    """The run drives simulated hardware (its driver, or the emulator's in-band channel):
    its nodes are validated by the agent here, on the CPU path."""
    return (
        run.driver == HardwareDriverKind.SIMULATED or settings.PORTAL_REDFISH_IN_BAND == "simulated"
    )


def run_burn_in_seconds(run: ProvisioningRun) -> int:
    """The burn-in before this run's hand-over, in seconds; 0 for none (a replacement's
    spare gets the quick check; an order without the add-on, below the free size, none).
    The agent's ``burn_in`` profile's length, scaled on simulated hardware."""
    if run.kind != RunKind.PROVISION or not order_burn_in(run.order):
        return 0
    seconds = PROFILES[ValidationProfile.BURN_IN].burn_in_seconds
    if run_simulated(run):
        seconds = max(BURN_IN_SIMULATED_MIN_S, seconds * settings.PORTAL_SIMULATED_TIME_SCALE)
    return round(seconds)


def validate_limit_s(run: ProvisioningRun) -> int:
    """The validate step's bound (its task's time limit, and the furthest its lease is
    renewed to): the suite's own, plus the burn-in's length where there is one."""
    return STEP_LIMIT_S[StepName.VALIDATE] + run_burn_in_seconds(run)


@dataclass
class _Validation:
    """What the first phase leaves for the others: the run, its active slots, the validate
    steps it leased (empty when they were all recorded before), their holder and the
    furthest their lease may be renewed to."""

    run: ProvisioningRun
    active: list[RunNode]
    todo: list[NodeStep]
    holder: str
    until: datetime


def _validation_lease(
    run: ProvisioningRun, steps: list[NodeStep], holder: str, now: datetime
) -> tuple[list[NodeStep], datetime]:
    """Under the steps' locks: the validate steps this execution takes (pending ones, and
    running ones whose holder's lease ran out: that holder died, its attempt ends here)
    with a short lease named for ``holder``; those under another's live lease are left to
    it. Returns the steps taken and the furthest their lease may be renewed to."""
    until = now + timedelta(seconds=validate_limit_s(run) + STEP_LEASE_GRACE_S)
    taken = [step for step in steps if not leases.lease_live(step, now)]
    for step in taken:
        if step.status == StepStatus.RUNNING:
            step_move(
                step,
                StepStatus.PENDING,
                _("The worker running this step was lost."),
                lease_until=None,
            )
    for attempt in sorted({step.attempt for step in taken}):  # one move per attempt
        lifecycle.transition_many(
            [step for step in taken if step.attempt == attempt],
            to=StepStatus.RUNNING,
            reason=Text("Validation started."),
            updates={
                "attempt": attempt + 1,
                "started_at": now,
                "finished_at": None,
                "lease_until": leases.lease_expiry(now, until),
                "lease_holder": holder,
                "message": _("Running the validation suite."),
            },
            locked=True,
        )
    if (
        taken
        and run_burn_in_seconds(run)
        and run.deadline_at
        and run.deadline_at < until
        and max(step.attempt for step in taken) <= settings.PORTAL_PROVISIONING_STEP_RETRIES + 1
    ):
        # The run's deadline (an hour a node) covers the burn-in that begins now; a burn-in
        # started again after a lost worker too, as often as a step is retried (a burn-in
        # that kills its worker each time does not keep the run alive for ever).
        ProvisioningRun.objects.filter(pk=run.pk).update(deadline_at=until)
        run.deadline_at = until
    return taken, until


def _validation_begin(run_id: int, launch: int | None, holder: str) -> _Validation | str:
    """Phase 1, under the run's lock: every slot provisioned? Then the run, the order and
    the nodes move to validating and the validate steps are leased for ``holder``.
    Returns a word when there is nothing to validate now: "stopped", "waiting" (a slot
    is not provisioned) or "held" (every step to validate runs under another execution's
    live lease: a copy of the task, handed out again while a long burn-in runs)."""
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
        if run.status not in (RunStatus.RUNNING, RunStatus.VALIDATING):
            return "stopped"
        if launch is not None and launch != run.launch:
            return "stopped"
        active = list(
            RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).select_related(
                "node", "node__node_type__gpu_model"
            )
        )
        unfinished = (
            NodeStep.objects.filter(
                run=run, node_id__in=[rn.node_id for rn in active], name__in=PROVISION_STEPS
            )
            .exclude(status__in=[StepStatus.DONE, StepStatus.SKIPPED])
            .exists()
        )
        if not active or unfinished:
            return "waiting"
        if run.status == RunStatus.RUNNING:
            lifecycle.transition(
                run,
                to=RunStatus.VALIDATING,
                reason=Text("All nodes answer: validating."),
                updates={"message": _("Validating the cluster.")},
                locked=True,
            )
        order = Order.objects.select_for_update().get(pk=run.order_id)
        if order.status == OrderStatus.PROVISIONING:
            order_transition(
                order=order,
                to_status=OrderStatus.VALIDATING,
                reason=Text("Validating the cluster."),
            )
        nodes = list(
            Node.objects.select_for_update().filter(
                pk__in=[rn.node_id for rn in active], status=NodeStatus.PROVISIONING
            )
        )
        if nodes:
            lifecycle.transition_many(
                nodes, to=NodeStatus.VALIDATING, reason=Text("Validating."), locked=True
            )
        todo = list(
            NodeStep.objects.select_for_update(of=("self",))
            .select_related("node")
            .filter(
                run=run,
                node_id__in=[rn.node_id for rn in active],
                name=StepName.VALIDATE,
                status__in=[StepStatus.PENDING, StepStatus.RUNNING],
            )
        )
        now = timezone.now()
        taken, until = _validation_lease(run, todo, holder, now)
        held = [step for step in todo if step not in taken]
        if held and not taken:
            logger.info(
                "validation of run %s: steps %s are held by %s until %s; nothing to do",
                run.pk,
                [step.pk for step in held],
                ", ".join(sorted({step.lease_holder for step in held})),
                max(step.lease_until for step in held if step.lease_until).isoformat(),
            )
            return "held"
    return _Validation(run, active, taken, holder, until)


def _validation_measure(
    state: _Validation, runner: interface.NodeRunner | None
) -> interface.ValidationOutcome:
    """Phase 2, outside any transaction: the validation suite on the leased nodes, with
    the rules as stored (staff-editable); the outcome is kept as a ValidationRun with its
    documents, raw outputs and acceptance report. A suite that did not run rejects every
    node with the reason (fail closed)."""
    run = state.run
    by_node = {rn.node_id: rn for rn in state.active}
    simulated = run_simulated(run)
    burn_in_s = run_burn_in_seconds(run)
    # The node type's GPU model, fabric and figures; "cpu" only for simulated hardware
    # (validation_services.judged_on_cpu): no setting judges a GPU node as a CPU.
    targets = [validation_services.node_target(by_node[step.node_id].node) for step in state.todo]
    if simulated:  # the run drives simulated hardware (its driver, or the emulator's in-band)
        targets = [dataclasses.replace(t, gpu_model="cpu") for t in targets]
    if burn_in_s:  # the burn-in's rules apply, and must hold for its whole length
        targets = [
            dataclasses.replace(t, expected={**t.expected, "burn_in_hours": burn_in_s / 3600})
            for t in targets
        ]
    if run.kind == RunKind.REPLACE:  # a spare replacing a failed node mid-rental
        profile = ValidationProfile.QUICK
    else:
        profile = ValidationProfile.BURN_IN if burn_in_s else ValidationProfile.ACCEPTANCE
    stored = validation_services.validation_persister(order_id=run.order_id)
    step_ids = [step.pk for step in state.todo]

    def persist(
        outcome: interface.ValidationOutcome,
        targets: Sequence[interface.NodeTarget],
        profile: str,
    ) -> int:
        # A holder whose lease was taken over measured for nothing: its outcome is not
        # kept (the execution that took the steps over keeps its own).
        if not leases.steps_held(step_ids, state.holder):
            logger.warning("validation of run %s: lease lost, outcome not kept", run.pk)
            return 0
        return stored(outcome, targets, profile)

    logger.info(
        "validation of run %s: the agent starts (%s, burn-in %s s) on steps %s, attempt %s,"
        " holder %s",
        run.pk,
        profile,
        burn_in_s,
        step_ids,
        sorted({step.attempt for step in state.todo}),
        state.holder,
    )
    try:
        return interface.validate_nodes(
            targets,
            runner=runner
            or validation_services.agent_runner(simulated=simulated, burn_in_seconds=burn_in_s),
            rules=validation_selectors.rules_from_db(),
            profile=profile,
            persist=persist,
            allow_injected=settings.VALIDATION_ALLOW_INJECTED_FIGURES,
            # each check on the staff run page as it finishes
            progress=validation_services.live_checks_recorder(steps=state.todo),
        )
    except Exception as exc:
        logger.exception("validation of run %s failed to run", run.pk)
        why = f"validation did not run: {exc}"
        return interface.ValidationOutcome(
            [interface.NodeResult(t.node_id, t.hostname, False, [why], {}) for t in targets],
            False,
            [why],
        )


def _validation_record(
    state: _Validation, outcome: interface.ValidationOutcome
) -> list[tuple[RunNode, str]] | None:
    """Phase 3, one transaction: each validate step this execution still holds is done
    (accepted) or failed with the reasons. Returns the rejected slots with why; None when
    it holds none of them any more (the reaper or a copy of the task took them over when
    its lease ran out, or staff moved them)."""
    by_node = {rn.node_id: rn for rn in state.active}
    results = {r.node_id: r for r in outcome.nodes}
    rejected: list[tuple[RunNode, str]] = []
    with transaction.atomic():
        accepted: list[NodeStep] = []
        held = list(
            NodeStep.objects.select_for_update(of=("self",))
            .select_related("node")
            .filter(
                pk__in=[s.pk for s in state.todo],
                status=StepStatus.RUNNING,
                lease_holder=state.holder,
            )
        )
        if not held:
            return None
        for step in held:
            result = results.get(step.node_id)
            excerpt = json.dumps(result.report if result else {}, default=str)[:LOG_EXCERPT_CHARS]
            if result is not None and result.accepted:
                step.log_excerpt = excerpt
                accepted.append(step)
            else:
                why = "; ".join(result.reasons) if result else _("no result")
                step_move(
                    step,
                    StepStatus.FAILED,
                    why,
                    finished_at=timezone.now(),
                    lease_until=None,
                    message=why,
                    log_excerpt=excerpt,
                )
                rejected.append((by_node[step.node_id], why))
        if accepted:  # one move for all accepted nodes, then their reports
            lifecycle.transition_many(
                accepted,
                to=StepStatus.DONE,
                reason=Text("Accepted."),
                updates={
                    "finished_at": timezone.now(),
                    "lease_until": None,
                    "message": _("Accepted by validation."),
                },
                locked=True,
            )
            NodeStep.objects.bulk_update(accepted, ["log_excerpt"])
    return rejected


def _validation_settle(
    state: _Validation,
    outcome: interface.ValidationOutcome,
    rejected: list[tuple[RunNode, str]],
) -> str:
    """Phase 4: a cluster that failed as a whole fails the run; each rejected node is
    swapped for a spare (none free: the run fails) and the canvas relaunched for them."""
    run = state.run
    if not rejected and not outcome.cluster_accepted and len(state.active) > 1:
        run_fail(
            run=run,
            reason=Text(
                "The cluster failed validation: %(why)s", why="; ".join(outcome.cluster_reasons)
            ),
        )
        return "failed"
    if not rejected:
        return "validated"
    for run_node, why in rejected:
        spare = node_swap(
            run=run, run_node=run_node, reason=Text("Failed validation: %(why)s", why=why)
        )
        if spare is None:
            run_fail(
                run=run,
                reason=Text(
                    "%(node)s failed validation and no spare is free.", node=run_node.node.hostname
                ),
            )
            return "failed"
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
        run_back_to_running(run)
        run_launch(run)
    return "swapped"


def run_validate(
    *,
    run_id: int,
    launch: int | None = None,
    runner: interface.NodeRunner | None = None,
    holder: str | None = None,
) -> str:
    """Cluster validation once every slot is provisioned: accepted nodes are kept,
    rejected ones are swapped and the canvas relaunched for their spares. The steps are
    measured under a lease renewed every fifth of ``PORTAL_PROVISIONING_LEASE_S`` (a
    thread of this process) and named for ``holder`` (the task's worker and id; one of
    this process by default). Returns "stopped", "waiting", "held" (another execution
    holds the steps: nothing done), "validated", "swapped", "failed" or "lost" (this
    execution's lease was taken over while it measured: nothing recorded)."""
    state = _validation_begin(run_id, launch, holder or leases.holder_name())
    if isinstance(state, str):
        return state
    if not state.todo:
        return "validated"
    with leases.Heartbeat(
        step_ids=[step.pk for step in state.todo], holder=state.holder, until=state.until
    ):
        outcome = _validation_measure(state, runner)
    rejected = _validation_record(state, outcome)
    if rejected is None:
        logger.warning("validation of run %s: lease lost, nothing recorded", run_id)
        return "lost"
    return _validation_settle(state, outcome, rejected)


def _driver_or_none(run: ProvisioningRun, node: Node) -> HardwareDriver | None:
    try:
        return driver_for(run, node)
    except DriverError:
        return None  # the host keys then come from known_hosts


def _addresses(node: Node) -> list[str]:
    return [node.ip_address] if node.ip_address else []


def run_deliver(*, run_id: int, launch: int | None = None) -> str:
    """Every active node accepted: nodes in service, the order ready, the customer told."""
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.VALIDATING:
            return "stopped" if run.status != RunStatus.DELIVERED else "delivered"
        if launch is not None and launch != run.launch:
            return "stopped"
        active = list(
            RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).select_related("node")
        )
        pending = NodeStep.objects.filter(
            run=run, node_id__in=[rn.node_id for rn in active]
        ).exclude(status__in=[StepStatus.DONE, StepStatus.SKIPPED])
        if pending.exists():
            return "waiting"
        now = timezone.now()
        order = (
            Order.objects.select_for_update(of=("self",))
            .select_related("image_profile")
            .get(pk=run.order_id)
        )
        user = order.image_profile.ssh_user if order.image_profile else "root"
        nodes = list(Node.objects.select_for_update().filter(pk__in=[rn.node_id for rn in active]))
        lifecycle.transition_many(
            [n for n in nodes if n.status == NodeStatus.VALIDATING],
            to=NodeStatus.IN_SERVICE,
            reason=Text("Delivered to order %(n)s.", n=order.number),
            locked=True,
        )
        for rn in active:
            rn.ssh_user, rn.addresses, rn.delivered_at = user, _addresses(rn.node), now
            rn.host_keys = delivered_host_keys(rn.node, _driver_or_none(run, rn.node))
        RunNode.objects.bulk_update(active, ["ssh_user", "addresses", "host_keys", "delivered_at"])
        lifecycle.transition(
            run,
            to=RunStatus.DELIVERED,
            reason=Text("Delivered."),
            updates={"finished_at": now, "message": _("Delivered.")},
            locked=True,
        )
        if order.status == OrderStatus.VALIDATING:
            order_transition(
                order=order,
                to_status=OrderStatus.READY,
                reason=Text("The cluster passed validation and is ready."),
            )
        for swap in NodeSwap.objects.filter(
            run=run, spare_node__isnull=False, restored_at__isnull=True
        ):
            lost_from = max(order.start_at, swap.failed_at)
            lost_to = max(order.start_at, now)
            hours = Decimal(max((lost_to - lost_from).total_seconds(), 0) / 3600).quantize(
                Decimal("0.01"), rounding=ROUND_HALF_UP
            )
            NodeSwap.objects.filter(pk=swap.pk).update(restored_at=now, hours_lost=hours)
        if run.kind == RunKind.REPLACE:
            jobs.enqueue(HANDOVER_TASK, run.pk)
        else:
            jobs.enqueue(EMAIL_TASK, run.pk, "ready")
    return "delivered"
