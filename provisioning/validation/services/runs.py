"""Validation runs: rules seeded, runs created and executed, a provisioning run's
persister, staff re-checks, the idle-node sweep, a saved agent document judged."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import Order
from core import jobs, lifecycle
from core.errors import DomainError
from core.texts import Plural, Text, label
from core.types import Actor
from inventory.models import Node, NodeStatus, NodeType
from inventory.services import node_mark_faulty
from provisioning.models import (
    ValidationProfile,
    ValidationRule,
    ValidationRun,
    ValidationRunStatus,
    ValidationTrigger,
)
from provisioning.validation import selectors
from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.interface import (
    NodeRunner,
    NodeTarget,
    Persister,
    ValidationOutcome,
    judge_report,
    validate_nodes,
)
from provisioning.validation.report import ACCEPTANCE_REPORT
from provisioning.validation.rules import Measurement, Rule
from provisioning.validation.seeding import seed_rules
from provisioning.validation.services.live import live_checks_recorder
from provisioning.validation.services.storing import _finish, _rules_snapshot
from provisioning.validation.services.targets import default_runner, node_target, node_type_target

logger = logging.getLogger(__name__)

RENDER_REPORT_TASK = ACCEPTANCE_REPORT.render_task
EXECUTE_TASK = "provisioning.validation.tasks.validation_run_execute_task"


def validation_rules_seed(*, rules: Iterable[Rule] = DEFAULT_RULES) -> tuple[int, int]:
    """Store the seed rules (``default_rules.DEFAULT_RULES``, from VALIDATION.md) that are not in
    the database yet. Idempotent: a rule already there (same metric, GPU model, fabric,
    scope and message size) is left as staff edited it. Returns (created, kept)."""
    with transaction.atomic():
        return seed_rules(ValidationRule, rules)


def validation_run_create(
    *,
    nodes: Sequence[Node],
    profile: str = ValidationProfile.ACCEPTANCE,
    trigger: str = ValidationTrigger.STAFF,
    order: Any = None,
    actor: Actor = None,
    enqueue: bool = True,
) -> ValidationRun:
    """A pending run on ``nodes``; its execution is enqueued on the validation queue after
    the commit (``enqueue=False`` leaves that to the caller)."""
    if not nodes:
        raise DomainError(_("A validation run needs at least one node."))
    if profile not in ValidationProfile.values:
        raise DomainError(_("Unknown validation profile “%(profile)s”.") % {"profile": profile})
    with transaction.atomic():
        run = ValidationRun.objects.create(
            profile=profile,
            trigger=trigger,
            order=order,
            requested_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        run.nodes.set(nodes)
        lifecycle.record_creation(
            [run],
            actor=actor,
            reason=Text(
                "%(profile)s validation of %(nodes)s",
                profile=label(ValidationProfile, run.profile),
                nodes=", ".join(n.hostname for n in nodes),
            ),
        )
        if enqueue:
            jobs.enqueue(EXECUTE_TASK, run.pk)
    return run


def _start(run_id: int) -> tuple[ValidationRun | None, list[Node]]:
    """Lock the run and move it to running; None when there is nothing (more) to do."""
    with transaction.atomic():
        run = ValidationRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status not in (
            ValidationRunStatus.PENDING,
            ValidationRunStatus.RUNNING,
        ):
            return None, []
        nodes = list(run.nodes.select_related("node_type__gpu_model").order_by("hostname"))
        if run.status == ValidationRunStatus.RUNNING:
            # A worker died half way (the message came back): start again from scratch.
            run.results.all().delete()
            run.artifacts.all().delete()
            run.live_checks.all().delete()
            return run, nodes
        if run.trigger == ValidationTrigger.IDLE_SWEEP:
            busy = [n.hostname for n in nodes if not selectors.node_is_idle(n)]
            if busy:
                lifecycle.transition(
                    run,
                    to=ValidationRunStatus.CANCELLED,
                    reason=Text(
                        "Booked or no longer available meanwhile: %(nodes)s.", nodes=", ".join(busy)
                    ),
                    locked=True,
                )
                return None, []
        run = lifecycle.transition(
            run,
            to=ValidationRunStatus.RUNNING,
            reason=Plural(
                "The agent runs on %(count)s node.",
                "The agent runs on %(count)s nodes.",
                len(nodes),
                count=len(nodes),
            ),
            updates={"started_at": timezone.now()},
            locked=True,
        )
        return run, nodes


def validation_run_execute(
    *, run_id: int, runner: NodeRunner | None = None, cluster: Measurement | None = None
) -> ValidationRun | None:
    """Run the agent on the run's nodes, judge with the rules in the database, store
    everything and move the run. Safe to call twice: a finished run is returned as it is;
    a run left running by a dead worker starts again."""
    run, nodes = _start(run_id)
    if run is None:
        return ValidationRun.objects.filter(pk=run_id).first()
    targets = [node_target(n) for n in nodes]
    rules = selectors.rules_from_db()
    try:
        outcome = validate_nodes(
            targets,
            profile=run.profile,
            runner=runner or default_runner(nodes),
            rules=rules,
            cluster=cluster,
            allow_injected=settings.VALIDATION_ALLOW_INJECTED_FIGURES,
            progress=live_checks_recorder(validation_run=run),
        )
    except Exception as exc:  # fail closed: an error is a failed run with its reason
        logger.exception("validation run %s", run_id)
        with transaction.atomic():
            return lifecycle.transition(
                run,
                to=ValidationRunStatus.FAILED,
                reason=Text("The validation could not run: %(error)s", error=exc),
                updates={"finished_at": timezone.now(), "error": str(exc)[:2000]},
            )
    with transaction.atomic():
        run.rules_snapshot = _rules_snapshot(rules)
        run.save(update_fields=["rules_snapshot"])
        run = _finish(run, targets, outcome)
        if run.trigger == ValidationTrigger.IDLE_SWEEP and run.status == ValidationRunStatus.FAILED:
            _fault_failing_idle_nodes(run)
    return run


def validation_persister(
    *,
    order_id: int | None = None,
    trigger: str = ValidationTrigger.PROVISIONING,
    actor: Actor = None,
) -> Persister:
    """For ``interface.validate_nodes(..., persist=…)``: keeps the outcome of a validation
    run that the caller (a provisioning run) executed itself, as a stored
    ``ValidationRun`` (documents, raw outputs, verdicts, acceptance report queued)."""

    def persist(outcome: ValidationOutcome, targets: Sequence[NodeTarget], profile: str) -> int:
        nodes = list(Node.objects.filter(pk__in=[t.node_id for t in targets]).order_by("pk"))
        with transaction.atomic():
            run = validation_run_create(
                nodes=nodes,
                profile=profile,
                trigger=trigger,
                order=Order.objects.get(pk=order_id) if order_id else None,
                actor=actor,
                enqueue=False,
            )
            run = lifecycle.transition(
                run,
                to=ValidationRunStatus.RUNNING,
                reason=Text("Run by the provisioning run."),
                updates={"started_at": timezone.now()},
            )
            return _finish(run, targets, outcome).pk

    return persist


# --- Staff re-check and the idle sweep -----------------------------------------------


def validation_node_recheck(
    *, node: Node, actor: Actor, profile: str = ValidationProfile.QUICK
) -> ValidationRun:
    """Staff re-run validation on one node: only an idle node (available, not booked now)
    or one in service; anything else is refused with the reason."""
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        if node.status == NodeStatus.AVAILABLE:
            if not selectors.node_is_idle(node):
                raise DomainError(
                    _(
                        "Node %(hostname)s is booked now: validation can only be re-run on "
                        "an idle or in-service node."
                    )
                    % {"hostname": node.hostname}
                )
        elif node.status != NodeStatus.IN_SERVICE:
            raise DomainError(
                _(
                    "Node %(hostname)s is “%(status)s”: validation can only be re-run on an "
                    "idle or in-service node."
                )
                % {"hostname": node.hostname, "status": node.get_status_display()}
            )
        if ValidationRun.objects.filter(
            nodes=node, status__in=(ValidationRunStatus.PENDING, ValidationRunStatus.RUNNING)
        ).exists():
            raise DomainError(
                _("A validation of node %(hostname)s is already pending or running.")
                % {"hostname": node.hostname}
            )
        return validation_run_create(
            nodes=[node], profile=profile, trigger=ValidationTrigger.STAFF, actor=actor
        )


def validation_idle_sweep(*, now: datetime | None = None) -> list[int]:
    """Beat: a quick validation run for every idle node (never a booked one). Returns the
    ids of the runs created; a failing node goes to faulty when its run finishes."""
    created: list[int] = []
    for node in selectors.idle_nodes(now=now):
        run = validation_run_create(
            nodes=[node], profile=ValidationProfile.QUICK, trigger=ValidationTrigger.IDLE_SWEEP
        )
        created.append(run.pk)
    return created


def _fault_failing_idle_nodes(run: ValidationRun) -> None:
    """A node that failed the idle check goes to faulty with the reasons, unless it was
    booked meanwhile (the node's row lock serialises with reservation holds)."""
    for result in run.results.filter(accepted=False):
        node = Node.objects.select_for_update().get(pk=result.node_id)
        if node.status != NodeStatus.AVAILABLE or not selectors.node_is_idle(node):
            logger.warning("validation run %s: %s is no longer idle", run.pk, node.hostname)
            continue
        node_mark_faulty(
            node=node,
            reason=Text(
                "Idle validation run %(id)s failed: %(reasons)s",
                id=run.pk,
                reasons="; ".join(result.reason_texts)[:1500],
            ),
        )


# --- Judging a saved agent document -----------------------------------------------------


def validation_judge_document(
    *, node_type: NodeType, document: dict[str, Any], burn_in_hours: float | None = None
) -> dict[str, Any]:
    """Judge an agent document (the file the agent wrote, or its stdout saved) for a node
    of ``node_type`` with the stored rules, exactly as a provisioning run does
    (``interface.judge_report``). ``burn_in_hours``: the burn-in the order bought (its
    rules apply and it must have run that long). Returns ``accepted``, ``reasons`` and
    ``notes`` (code, text, params), ``metrics`` (derived from the raw outputs) and every
    rule's result."""
    target = node_type_target(node_type)
    if burn_in_hours is not None:
        target = dataclasses.replace(
            target, expected={**target.expected, "burn_in_hours": burn_in_hours}
        )
    measurement, verdict = judge_report(
        document,
        target,
        selectors.rules_from_db(),
        allow_injected=settings.VALIDATION_ALLOW_INJECTED_FIGURES,
    )
    return {
        "accepted": verdict.accepted,
        "node_type": node_type.code,
        "gpu_model": target.gpu_model,
        "expected": dict(target.expected),
        "fabric": target.fabric,
        "complete": document.get("complete", True),
        "reasons": [r.as_dict() for r in verdict.reasons],
        "notes": [r.as_dict() for r in verdict.notes],
        "metrics": measurement.metrics,
        "results": [r.as_dict() for r in verdict.results],
    }
