"""The hand-over between a provisioning run and the validation suite (no Django here).

A provisioning run calls ``validate_nodes`` once its nodes answer; it gets back, per node,
accept or reject with every reason, and the cluster's verdict. Validation decides; the run
swaps rejected nodes and delivers accepted clusters. ``validate_nodes`` runs the node agent
on each node through a ``NodeRunner`` (over SSH in production, as a local subprocess with
the simulated driver) and judges its report with the rules (``rules.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provisioning.validation.rules import (
    CheckOutcome,
    ClusterVerdict,
    Measurement,
    NodeVerdict,
    Rule,
    evaluate_cluster,
    evaluate_node,
)

AGENT_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding provisioning/


@dataclass(frozen=True)
class NodeTarget:
    """One node to validate: its id in the portal, hostname and expected GPU model."""

    node_id: int
    hostname: str
    gpu_model: str  # "cpu" for a node validated on the CPU path (CI, the simulated driver)


@dataclass
class NodeResult:
    node_id: int
    hostname: str
    accepted: bool
    reasons: list[str]
    report: dict[str, Any]  # the agent's whole JSON document (raw outputs included)
    verdict: NodeVerdict | None = None


@dataclass
class ValidationOutcome:
    nodes: list[NodeResult]
    cluster_accepted: bool
    cluster_reasons: list[str] = field(default_factory=list)
    cluster: ClusterVerdict | None = None
    # What the cluster check measured (None for one node or when it did not run), and the
    # stored ValidationRun when the caller asked for the outcome to be kept (``persist``).
    cluster_measurement: Measurement | None = None
    validation_run_id: int | None = None

    @property
    def rejected(self) -> list[NodeResult]:
        return [n for n in self.nodes if not n.accepted]


# Runs the agent for one node and returns its JSON document (or raises with a reason).
NodeRunner = Callable[[NodeTarget, str], dict[str, Any]]
# Keeps an outcome (the Django side: provisioning.validation.services.validation_persister)
# and returns the id of the stored validation run.
Persister = Callable[["ValidationOutcome", Sequence[NodeTarget], str], int]


class AgentFailed(RuntimeError):
    """The agent did not produce a report (did not start, timed out, printed no JSON)."""


def local_runner(*, timeout_s: float = 120.0, sizes: Sequence[str] = ()) -> NodeRunner:
    """Run ``python -m provisioning.agent`` here as a subprocess (simulated nodes, CI)."""

    def run(target: NodeTarget, profile: str) -> dict[str, Any]:
        command = [sys.executable, "-m", "provisioning.agent", "--profile", profile]
        if sizes:
            command += ["--sizes", *sizes]
        try:
            proc = subprocess.run(  # noqa: S603 - fixed command, our own module
                command,
                cwd=AGENT_PACKAGE_ROOT,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AgentFailed(f"the agent ran past {timeout_s:.0f} s") from exc
        if proc.returncode != 0:
            raise AgentFailed(f"the agent exited with {proc.returncode}: {proc.stderr[-500:]}")
        try:
            report = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            raise AgentFailed(f"the agent printed no JSON document: {exc}") from exc
        if not isinstance(report, dict):
            raise AgentFailed("the agent's document is not a JSON object")
        return report

    return run


def measurement_from_report(report: dict[str, Any], *, node: str, gpu_model: str) -> Measurement:
    """The rules' view of an agent report: metrics by name and every check's outcome."""
    checks = [c for c in report.get("checks", []) if isinstance(c, dict)]
    return Measurement(
        node=node,
        gpu_model=gpu_model,
        device=str(report.get("host", {}).get("device", "")),
        metrics={c["metric"]: c.get("value") for c in checks if c.get("metric")},
        checks=[
            CheckOutcome(
                str(c.get("name")), str(c.get("status")), c.get("return_code"), c.get("reason")
            )
            for c in checks
        ],
    )


_RING_SCRIPT = (
    "import json, sys\n"
    "from provisioning.agent import ring\n"
    "print(json.dumps(ring.cpu_allreduce(int(sys.argv[1]), int(sys.argv[2]), 2, 5, "
    "timeout=120.0)))\n"
)


def _ring_allreduce(message_bytes: int, ranks: int) -> dict[str, Any]:
    """One ring all-reduce across ``ranks`` local processes, run from a fresh interpreter:
    a Celery prefork child is a daemonic process and may not start processes itself."""
    proc = subprocess.run(  # noqa: S603 - our own module with integer arguments
        [sys.executable, "-c", _RING_SCRIPT, str(int(message_bytes)), str(int(ranks))],
        cwd=AGENT_PACKAGE_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if proc.returncode != 0:
        raise AgentFailed(f"the cluster all-reduce failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def local_cluster_measurement(*, ranks: int = 2, message_bytes: int = 1 << 20) -> Measurement:
    """The CPU path's cluster check (simulated nodes, CI): a real ring all-reduce across
    local processes at ``ranks`` and ``2 × ranks``; scaling efficiency = throughput(2N) /
    (2 × throughput(N)), throughput being the ranks' aggregate bus bandwidth."""
    small = _ring_allreduce(message_bytes, ranks)
    large = _ring_allreduce(message_bytes, 2 * ranks)
    checks = []
    for name, res in (("cluster_allreduce_n", small), ("cluster_allreduce_2n", large)):
        ok = bool(res.get("correct"))
        checks.append(CheckOutcome(name, "completed" if ok else "failed", 0 if ok else 1, None))
    throughput_n = small["busbw_gbps"] * small["ranks"]
    throughput_2n = large["busbw_gbps"] * large["ranks"]
    return Measurement(
        node="cluster",
        gpu_model="cpu",
        device="cpu",
        metrics={
            "cluster_allreduce_ring_busbw_gbps": large["busbw_gbps"],
            "scaling_efficiency": throughput_2n / (2 * throughput_n) if throughput_n else 0.0,
            # For the report's scaling chart (no rule reads them).
            "cluster_ranks_n": small["ranks"],
            "cluster_throughput_n_gbps": throughput_n,
            "cluster_throughput_2n_gbps": throughput_2n,
            "cluster_message_size_bytes": message_bytes,
        },
        checks=checks,
    )


def validate_nodes(
    targets: Sequence[NodeTarget],
    *,
    profile: str = "acceptance",
    runner: NodeRunner | None = None,
    rules: Iterable[Rule] | None = None,
    cluster: Measurement | None = None,
    persist: Persister | None = None,
) -> ValidationOutcome:
    """Run the agent on every node, judge each, then the cluster. Fails closed: a node whose
    agent produced no report is rejected with that reason. ``persist`` (optional) stores
    the outcome (documents, raw outputs with SHA-256, verdicts) and its run id is set on
    the outcome as ``validation_run_id``."""
    runner = runner or local_runner()
    rule_list = list(rules) if rules is not None else None
    results: list[NodeResult] = []
    verdicts: list[NodeVerdict] = []
    for target in targets:
        try:
            report = runner(target, profile)
        except AgentFailed as exc:
            results.append(NodeResult(target.node_id, target.hostname, False, [str(exc)], {}))
            continue
        measurement = measurement_from_report(
            report, node=target.hostname, gpu_model=target.gpu_model
        )
        verdict = evaluate_node(measurement, rule_list)
        verdicts.append(verdict)
        results.append(
            NodeResult(
                target.node_id,
                target.hostname,
                verdict.accepted,
                [r.text for r in verdict.reasons],
                report,
                verdict,
            )
        )
    cluster_error = ""
    if cluster is None and len(targets) > 1 and all(t.gpu_model == "cpu" for t in targets):
        try:
            cluster = local_cluster_measurement()
        except (AgentFailed, subprocess.TimeoutExpired, ValueError) as exc:
            cluster_error = f"the cluster check did not run: {exc}"
    cluster_verdict = evaluate_cluster(verdicts, cluster, rule_list) if verdicts else None
    all_reported = len(verdicts) == len(targets)
    accepted = bool(cluster_verdict and cluster_verdict.accepted and all_reported)
    reasons = [r.text for r in cluster_verdict.reasons] if cluster_verdict else []
    if not all_reported:
        reasons.append("some nodes produced no report")
    if cluster_error:
        accepted = False
        reasons.append(cluster_error)
    outcome = ValidationOutcome(results, accepted, reasons, cluster_verdict, cluster)
    if persist is not None:
        outcome.validation_run_id = persist(outcome, targets, profile)
    return outcome
