"""Every write of the validation suite: rules seeded as data, runs created, executed and
stored (documents and raw outputs with SHA-256), staff re-checks, the idle-node sweep.

The judging is ``interface.validate_nodes`` with the rules read from the database; this
module keeps what it measured and moves the run (and, for the idle sweep, failing nodes to
faulty). A provisioning run keeps its outcome by passing ``persist=validation_persister(
order_id=…)`` to ``validate_nodes``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import Order
from core import jobs, lifecycle
from core.errors import DomainError
from core.pdf import sha256_of
from core.texts import Plural, Text, label
from core.types import Actor
from inventory.models import HardwareDriverKind, Node, NodeStatus, NodeType
from inventory.services import node_mark_faulty
from provisioning.agent.profiles import PROFILES
from provisioning.drivers.base import CredentialsUnavailable, resolve_secret
from provisioning.models import (
    LiveCheckStatus,
    NodeStep,
    ValidationArtifact,
    ValidationCheck,
    ValidationNodeResult,
    ValidationProfile,
    ValidationRule,
    ValidationRun,
    ValidationRunStatus,
    ValidationTrigger,
)
from provisioning.validation import selectors, ssh
from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.interface import (
    AgentFailed,
    CheckEvent,
    LineSink,
    NodeResult,
    NodeRunner,
    NodeTarget,
    Persister,
    Progress,
    ValidationOutcome,
    judge_report,
    local_runner,
    validate_nodes,
)
from provisioning.validation.report import ACCEPTANCE_REPORT
from provisioning.validation.rules import Measurement, Rule, normalize_gpu_model
from provisioning.validation.seeding import seed_rules
from provisioning.validation.ssh import SshSettings

logger = logging.getLogger(__name__)

RENDER_REPORT_TASK = ACCEPTANCE_REPORT.render_task
EXECUTE_TASK = "provisioning.validation.tasks.validation_run_execute_task"


# --- Rules ------------------------------------------------------------------------------


def validation_rules_seed(*, rules: Iterable[Rule] = DEFAULT_RULES) -> tuple[int, int]:
    """Store the seed rules (``default_rules.DEFAULT_RULES``, from VALIDATION.md) that are not in
    the database yet. Idempotent: a rule already there (same metric, GPU model, fabric,
    scope and message size) is left as staff edited it. Returns (created, kept)."""
    with transaction.atomic():
        return seed_rules(ValidationRule, rules)


# --- Targets and runners ----------------------------------------------------------------


def runner_kind(node: Node) -> str:
    """How the agent reaches ``node``: ``local`` (a subprocess next to the worker, judged on
    the CPU path: the simulated driver, CI, ``make run`` and the Redfish emulator with its
    simulated in-band channel) or ``ssh`` (a real node). ``VALIDATION_AGENT_RUNNER``
    ``auto`` decides by the node's driver; ``local`` or ``ssh`` force one."""
    forced = settings.VALIDATION_AGENT_RUNNER
    if forced in ("local", "ssh"):
        return forced
    if forced != "auto":
        raise DomainError(_("No agent runner “%(name)s” is configured.") % {"name": forced})
    driver = node.driver or settings.PORTAL_HARDWARE_DRIVER
    if driver == HardwareDriverKind.SIMULATED or settings.PORTAL_REDFISH_IN_BAND == "simulated":
        return "local"
    return "ssh"


def judged_on_cpu(node: Node) -> bool:
    """True only for a node whose hardware is simulated: the simulated driver, or the
    Redfish emulator with the simulated in-band channel (``PORTAL_REDFISH_IN_BAND``, which
    the system check ``provisioning.E001`` refuses outside DEBUG and tests). No runner
    setting makes a GPU node a CPU node: ``VALIDATION_AGENT_RUNNER=local`` on a GPU node
    measures the worker's CPU and is rejected (``device_mismatch``)."""
    driver = node.driver or settings.PORTAL_HARDWARE_DRIVER
    return driver == HardwareDriverKind.SIMULATED or settings.PORTAL_REDFISH_IN_BAND == "simulated"


def node_type_target(
    node_type: NodeType, *, node_id: int = 0, hostname: str = "", address: str = ""
) -> NodeTarget:
    """What an agent document is judged against for a node of ``node_type``: its GPU
    model (``cpu`` for a node type without GPUs), fabric and figures."""
    gpu = node_type.gpu_model
    return NodeTarget(
        node_id=node_id,
        hostname=hostname or node_type.code,
        gpu_model=normalize_gpu_model(gpu.name) if gpu else "cpu",
        address=address,
        fabric=type_fabric(node_type),
        expected=type_expected(node_type),
    )


def node_target(node: Node) -> NodeTarget:
    """What the agent is judged against: the node type's GPU model, or ``cpu`` when the
    node's hardware is simulated (``judged_on_cpu``)."""
    target = node_type_target(
        node.node_type, node_id=node.pk, hostname=node.hostname, address=node.ip_address or ""
    )
    if judged_on_cpu(node):
        return dataclasses.replace(target, gpu_model="cpu")
    return target


def ssh_settings() -> SshSettings:
    """The SSH settings with the key resolved from its reference (``env:NAME`` or
    ``file:/path``); ``AgentFailed`` (``ssh_not_configured``) when something is missing.
    The key's text lives only in memory, never in a log, a task argument or the database."""
    reference = settings.VALIDATION_SSH_KEY
    if not reference:
        raise AgentFailed(
            "no SSH key is configured for validation (VALIDATION_SSH_KEY)",
            code="ssh_not_configured",
            setting="VALIDATION_SSH_KEY",
        )
    try:
        key = resolve_secret(reference)
        passphrase = (
            resolve_secret(settings.VALIDATION_SSH_KEY_PASSPHRASE)
            if settings.VALIDATION_SSH_KEY_PASSPHRASE
            else None
        )
    except CredentialsUnavailable as exc:
        raise AgentFailed(
            f"the validation SSH key is not available: {exc}",
            code="ssh_not_configured",
            setting="VALIDATION_SSH_KEY",
        ) from None
    return SshSettings(
        user=settings.VALIDATION_SSH_USER,
        known_hosts=settings.VALIDATION_SSH_KNOWN_HOSTS,
        private_key=key,
        passphrase=passphrase,
        port=settings.VALIDATION_SSH_PORT,
        connect_timeout_s=settings.VALIDATION_SSH_CONNECT_TIMEOUT_S,
        python=settings.VALIDATION_SSH_PYTHON,
    )


_FABRIC_KEYS = {"ib_ndr": "ndr400", "ib_hdr": "hdr200"}


def type_fabric(node_type: NodeType) -> str | None:
    """The cluster rules' fabric key of a node type: InfiniBand NDR ``ndr400``, HDR
    ``hdr200``, 100 Gb/s Ethernet or RoCE ``100g``; None (no fabric rule) otherwise."""
    if node_type.fabric in _FABRIC_KEYS:
        return _FABRIC_KEYS[node_type.fabric]
    return "100g" if node_type.nic_speed_gbps == 100 else None


def rule_fabric(node: Node) -> str | None:
    return type_fabric(node.node_type)


def type_expected(node_type: NodeType) -> dict[str, int]:
    """The node type's figures the rules compare with."""
    return {"gpu_count": node_type.gpu_count, "nics_per_node": node_type.nic_count}


def node_expected(node: Node) -> dict[str, int]:
    return type_expected(node.node_type)


def agent_timeout_s(profile: str) -> float:
    """The runner's limit for one agent: the profile's own (``agent.profiles``: acceptance
    40 min, covering DCGM -r 3) or ``VALIDATION_AGENT_TIMEOUT_S`` when larger."""
    limit = PROFILES[profile].time_limit_s if profile in PROFILES else 0.0
    return max(float(settings.VALIDATION_AGENT_TIMEOUT_S), limit)


class SshNodeRunner:
    """The agent over SSH on each node (``provisioning.validation.ssh``), and the cluster
    check's commands on the first node. ``resolve`` completes a target with the node's
    IP address (else its hostname is used), fabric and node-type figures."""

    parallel = True  # each node measures itself: all nodes at once (interface.collect_reports)
    streams = True  # the agent's lines reach ``on_line`` as they arrive (the run page)

    def __init__(
        self, *, timeout_s: float | None = None, sizes: Sequence[str] | None = None
    ) -> None:
        self.timeout_s = timeout_s  # None: the profile's limit (agent_timeout_s)
        self.sizes = settings.VALIDATION_AGENT_SIZES if sizes is None else sizes

    def resolve(self, target: NodeTarget) -> NodeTarget:
        node = Node.objects.select_related("node_type").filter(pk=target.node_id).first()
        if node is None:
            return target
        return dataclasses.replace(
            target,
            address=target.address or node.ip_address or "",
            fabric=target.fabric or rule_fabric(node),
            expected=target.expected or node_expected(node),
        )

    def __call__(
        self, target: NodeTarget, profile: str, on_line: LineSink | None = None
    ) -> dict[str, Any]:
        # No database here (it may run in a thread): validate_nodes resolved the target.
        return ssh.run_agent(
            ssh_settings(),
            target,
            profile,
            timeout_s=self.timeout_s or agent_timeout_s(profile),
            sizes=self.sizes,
            on_line=on_line,
        )

    def run_command(self, host: str, argv: Sequence[str], timeout_s: float) -> ssh.CommandResult:
        return ssh.run_command(ssh_settings(), host, argv, timeout_s=timeout_s)


def ssh_node_runner(
    *, timeout_s: float | None = None, sizes: Sequence[str] | None = None
) -> SshNodeRunner:
    return SshNodeRunner(timeout_s=timeout_s, sizes=sizes)


def agent_runner(*, simulated: bool, burn_in_seconds: int = 0) -> NodeRunner:
    """The runner a provisioning run uses: simulated nodes (the simulated driver, or Redfish
    with the simulated in-band channel) run the agent locally on the CPU path; real nodes
    (Redfish) over SSH. ``burn_in_seconds``: the simulated nodes' (scaled) burn-in length;
    real nodes run the ``burn_in`` profile's own 24 hours."""
    if simulated:
        sizes = list(settings.PORTAL_VALIDATION_CPU_SIZES)
        if burn_in_seconds:
            sizes.append(f"burn_in={burn_in_seconds}")
        return local_runner(
            timeout_s=settings.VALIDATION_AGENT_TIMEOUT_S + burn_in_seconds,
            sizes=sizes,
        )
    return ssh_node_runner()


class _PerNodeRunner(SshNodeRunner):
    """A stand-alone run's runner: per node local (CPU path) or SSH (``runner_kind``)."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        super().__init__()
        self.kinds = {n.pk: runner_kind(n) for n in nodes}
        # In parallel only when no node runs locally (local ones share this machine's CPUs).
        self.parallel = bool(self.kinds) and all(k == "ssh" for k in self.kinds.values())
        self.local = local_runner(
            timeout_s=settings.VALIDATION_AGENT_TIMEOUT_S, sizes=settings.VALIDATION_AGENT_SIZES
        )

    def _kind(self, target: NodeTarget) -> str:
        return self.kinds.get(target.node_id) or runner_kind(Node.objects.get(pk=target.node_id))

    def resolve(self, target: NodeTarget) -> NodeTarget:
        return target if self._kind(target) == "local" else super().resolve(target)

    def __call__(
        self, target: NodeTarget, profile: str, on_line: LineSink | None = None
    ) -> dict[str, Any]:
        if self._kind(target) == "local":
            return self.local(target, profile, on_line)
        return super().__call__(target, profile, on_line)


def default_runner(nodes: Sequence[Node] = ()) -> NodeRunner:
    """The runner of a stand-alone validation run: per node, local or SSH (``runner_kind``)."""
    return _PerNodeRunner(nodes)


# --- Each check as it finishes ----------------------------------------------------------


def live_checks_recorder(
    *, steps: Sequence[NodeStep] = (), validation_run: ValidationRun | None = None
) -> Progress:
    """``validate_nodes(progress=…)``: writes each agent line to ``ValidationCheck`` rows
    as it arrives (the staff run page polls them): for the validate ``steps`` of a
    provisioning run (their current attempt) or for a stand-alone ``validation_run``.
    When the agent is gone, a check still waiting or running did not finish (failed).
    Autocommitted outside any transaction, so the page sees a check the moment it
    finished. The SSH runner calls it from its threads (one per node): a call from
    another thread than the one that made the recorder closes that thread's connection."""
    owner = threading.get_ident()
    step_of = {s.node_id: (s.pk, s.attempt) for s in steps}

    def key(node_id: int) -> dict[str, Any] | None:
        if validation_run is not None:
            return {"validation_run_id": validation_run.pk, "node_id": node_id}
        if node_id not in step_of:
            return None
        step_id, attempt = step_of[node_id]
        return {"step_id": step_id, "attempt": attempt, "node_id": node_id}

    def write(event: CheckEvent) -> None:
        where = key(event.target.node_id)
        if where is None:
            return
        now = timezone.now()
        if event.kind == "planned":  # a fresh agent: what an earlier one left goes
            ValidationCheck.objects.filter(**where).delete()
            ValidationCheck.objects.bulk_create(
                [ValidationCheck(**where, name=n, position=i) for i, n in enumerate(event.planned)]
            )
        elif event.kind == "started":
            ValidationCheck.objects.update_or_create(
                **where,
                name=event.name,
                defaults={"status": LiveCheckStatus.RUNNING, "started_at": now},
            )
        elif event.kind == "finished":
            status = event.status if event.status in LiveCheckStatus.values else "failed"
            ValidationCheck.objects.update_or_create(
                **where,
                name=event.name,
                defaults={
                    "status": status,
                    "verdict": event.verdict,
                    "finished_at": now,
                    "duration_s": None
                    if event.duration_s is None
                    else Decimal(str(round(event.duration_s, 3))),
                    "raw_sha256": event.raw_sha256[:64],
                    "metrics": json.loads(json.dumps(dict(event.metrics), default=str)),
                    "reasons": list(event.reasons),
                },
            )

        elif event.kind == "ended":
            for check in ValidationCheck.objects.filter(
                **where, status__in=(LiveCheckStatus.PLANNED, LiveCheckStatus.RUNNING)
            ):
                check.status = LiveCheckStatus.UNFINISHED
                check.verdict = "failed"
                check.finished_at = now
                check.reasons = [
                    {
                        "code": "check_not_finished",
                        "params": {"check": check.name},
                        "text": f"check {check.name} did not finish",
                    }
                ]
                check.save(update_fields=["status", "verdict", "finished_at", "reasons"])

    def record(event: CheckEvent) -> None:
        try:
            write(event)
        finally:
            if threading.get_ident() != owner:
                connection.close()

    return record


# --- Storing an outcome -----------------------------------------------------------------


def _dump(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, indent=1, default=str)


def _artifact(
    run: ValidationRun, node_id: int | None, check: str, content: str, **extra: Any
) -> ValidationArtifact:
    data = content.encode("utf-8")
    return ValidationArtifact(
        run=run,
        node_id=node_id,
        check_name=check[:48],
        content=content,
        sha256=sha256_of(data),
        size=len(data),
        **extra,
    )


def _reasons(result: NodeResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if result.verdict is None:  # the agent produced no report
        if result.failure is not None:
            return [result.failure.as_dict()], []
        return [{"code": "agent_failed", "params": {}, "text": t} for t in result.reasons], []
    return (
        [r.as_dict() for r in result.verdict.reasons],
        [r.as_dict() for r in result.verdict.notes],
    )


def _cluster_metrics(measurement: Measurement | None) -> dict[str, Any]:
    if measurement is None:
        return {}
    return {
        "metrics": {k: v for k, v in measurement.metrics.items()},
        "checks": [
            {"name": c.name, "status": c.status, "return_code": c.return_code}
            for c in measurement.checks
        ],
        "device": measurement.device,
        "fabric": measurement.fabric,
    }


def _store_outcome(
    run: ValidationRun, targets: Sequence[NodeTarget], outcome: ValidationOutcome
) -> None:
    """Keep every node's verdict, its agent document and each raw output with SHA-256."""
    gpu_models = {t.node_id: t.gpu_model for t in targets}
    artifacts: list[ValidationArtifact] = []
    results: list[ValidationNodeResult] = []
    for result in outcome.nodes:
        reasons, notes = _reasons(result)
        document = _dump(result.report) if result.report else ""
        if result.report:
            artifacts.append(
                _artifact(run, result.node_id, "agent_document", document, raw_format="json")
            )
        for check in result.report.get("checks", []) if result.report else []:
            if not isinstance(check, dict):
                continue
            artifacts.append(
                _artifact(
                    run,
                    result.node_id,
                    str(check.get("name", "?")),
                    str(check.get("raw") or ""),
                    status=str(check.get("status") or "")[:16],
                    raw_format=str(check.get("raw_format") or "")[:32],
                )
            )
        results.append(
            ValidationNodeResult(
                run=run,
                node_id=result.node_id,
                hostname=result.hostname,
                gpu_model=gpu_models.get(result.node_id, ""),
                device=str(result.report.get("host", {}).get("device", ""))[:16]
                if result.report
                else "",
                accepted=result.accepted,
                reasons=reasons,
                notes=notes,
                rule_results=[r.as_dict() for r in result.verdict.results]
                if result.verdict
                else [],
                report=result.report,
                report_sha256=sha256_of(document.encode("utf-8")) if document else "",
            )
        )
    cluster = _cluster_metrics(outcome.cluster_measurement)
    if cluster:
        artifacts.append(_artifact(run, None, "cluster", _dump(cluster), raw_format="json"))
    for output in outcome.cluster_outputs:  # the GPU cluster check's nccl-tests outputs
        artifacts.append(
            _artifact(
                run,
                None,
                str(output["name"]),
                f"$ {output['command']}\n{output['raw']}",
                status="completed" if output.get("exit_status") == 0 else "failed",
                raw_format="nccl-tests",
            )
        )
    ValidationNodeResult.objects.bulk_create(results)
    ValidationArtifact.objects.bulk_create(artifacts)
    run.cluster_metrics = cluster
    run.cluster_verdict = outcome.cluster.as_dict() if outcome.cluster else {}
    run.cluster_reasons = (
        [r.as_dict() for r in outcome.cluster.reasons]
        if outcome.cluster
        else [{"code": "no_verdict", "params": {}, "text": t} for t in outcome.cluster_reasons]
    )
    run.save(update_fields=["cluster_metrics", "cluster_verdict", "cluster_reasons"])


def _rules_snapshot(rules: Sequence[Rule]) -> list[dict[str, Any]]:
    return [
        {
            "metric": r.key,
            "gpu_model": r.gpu_model,
            "fabric": r.fabric,
            "scope": r.scope,
            "source": r.source,
        }
        for r in rules
    ]


def _finish(
    run: ValidationRun, targets: Sequence[NodeTarget], outcome: ValidationOutcome
) -> ValidationRun:
    """Store the outcome and move the run to passed or failed (caller holds a transaction)."""
    _store_outcome(run, targets, outcome)
    rejected = [n.hostname for n in outcome.rejected]
    if outcome.cluster_accepted:
        to, reason = ValidationRunStatus.PASSED, _("Every node and the cluster passed.")
    else:
        to = ValidationRunStatus.FAILED
        reason = (
            _("Rejected: %(nodes)s.") % {"nodes": ", ".join(rejected)}
            if rejected
            else _("The cluster checks failed.")
        )
    run = lifecycle.transition(
        run,
        to=to,
        reason=reason,
        updates={"finished_at": timezone.now(), "cluster_accepted": outcome.cluster_accepted},
    )
    if run.order_id is not None:
        for language, _name in settings.LANGUAGES:
            ACCEPTANCE_REPORT.ask(run, language=language)
    return run


# --- Runs -------------------------------------------------------------------------------


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
