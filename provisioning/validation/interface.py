"""The hand-over between a provisioning run and the validation suite (no Django here).

A provisioning run calls ``validate_nodes`` once its nodes answer; it gets back, per node,
accept or reject with every reason, and the cluster's verdict. Validation decides; the run
swaps rejected nodes and delivers accepted clusters. ``validate_nodes`` runs the node agent
on each node through a ``NodeRunner`` (over SSH in production, as a local subprocess with
the simulated driver) and judges its report with the rules (``evaluation``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provisioning.agent.profiles import nccl_message_bytes
from provisioning.validation.cluster import (
    DEFAULT_MESSAGE_BYTES,
    ClusterRun,
    cluster_measurement,
    run_cluster_checks,
)
from provisioning.validation.evaluation import evaluate_check, evaluate_cluster, evaluate_node
from provisioning.validation.metrics import derive
from provisioning.validation.rules import (
    CheckOutcome,
    ClusterVerdict,
    Measurement,
    NodeVerdict,
    Reason,
    Rule,
)

AGENT_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding provisioning/
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeTarget:
    """One node to validate: its id in the portal, hostname and expected GPU model."""

    node_id: int
    hostname: str
    gpu_model: str  # "cpu" for a node validated on the CPU path (CI, the simulated driver)
    address: str = ""  # where the SSH runner connects ("": the hostname)
    fabric: str | None = None  # the cluster rules' fabric key (ndr400, hdr200, 100g)
    # Figures the rules compare with (gpu_count, nics_per_node) from the node type.
    expected: Mapping[str, float | int] = field(default_factory=dict)


@dataclass
class NodeResult:
    node_id: int
    hostname: str
    accepted: bool
    reasons: list[str]
    report: dict[str, Any]  # the agent's whole JSON document (raw outputs included)
    verdict: NodeVerdict | None = None
    failure: Reason | None = None  # why the agent produced no report (code and params)


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
    # The GPU cluster check's raw outputs (name, command, exit status, raw), to be stored.
    cluster_outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rejected(self) -> list[NodeResult]:
        return [n for n in self.nodes if not n.accepted]


# Runs the agent for one node and returns its JSON document (or raises with a reason). A
# runner whose ``streams`` attribute is true also takes ``on_line=``: a callable that gets
# each of the agent's JSON lines (``parse_line``) as soon as the agent printed it.
NodeRunner = Callable[[NodeTarget, str], dict[str, Any]]
LineSink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class CheckEvent:
    """What the agent on one node just said, for the staff run page (``validate_nodes``'
    ``progress``): ``planned`` (its start line: every check it will run, in order),
    ``started`` (a check began), ``finished`` (a check's line arrived, with that check's
    own verdict: ``passed``, ``failed`` or ``not_judged`` when no rule reads it, its
    reasons and the metrics derived from its raw output) or ``ended`` (the agent is
    gone: a check still planned or running then did not finish). The node's verdict is
    still made once, on the whole document; these events only show the way there."""

    target: NodeTarget
    kind: str
    name: str = ""
    planned: tuple[str, ...] = ()
    status: str = ""
    duration_s: float | None = None
    raw_sha256: str = ""
    verdict: str = ""
    reasons: tuple[dict[str, Any], ...] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict)


Progress = Callable[[CheckEvent], None]


def parse_line(text: str) -> dict[str, Any] | None:
    """One line of the agent's output as a JSON object with a ``type``, else None (a
    line cut by a kill, noise)."""
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("type"), str) else None


def live_sink(
    target: NodeTarget,
    progress: Progress,
    rules: Iterable[Rule] | None = None,
    *,
    allow_injected: bool = False,
) -> LineSink:
    """A ``LineSink`` for one node that judges each check as its line arrives
    (``evaluation.evaluate_check``) and hands ``progress`` a :class:`CheckEvent`. A sink
    that fails (the database is down) is logged and never stops the validation: the
    verdict does not depend on it."""
    rule_list = list(rules) if rules is not None else None
    start: dict[str, Any] = {}

    def event(line: dict[str, Any]) -> CheckEvent | None:
        kind = line.get("type")
        if kind == "start":
            start.update({k: v for k, v in line.items() if k != "type"})
            planned = tuple(str(n) for n in line.get("planned") or ())
            return CheckEvent(target, "planned", planned=planned)
        name = str(line.get("name") or "")
        if kind == "check_start" and name:
            return CheckEvent(target, "started", name=name)
        if kind != "check" or not name:
            return None
        measurement = measurement_from_report(
            {**start, "checks": [line], "complete": True},
            node=target.hostname,
            gpu_model=target.gpu_model,
            fabric=target.fabric,
            expected=target.expected,
            allow_injected=allow_injected,
        )
        verdict = evaluate_check(measurement, name, rule_list)
        duration = line.get("duration_s")
        return CheckEvent(
            target,
            "finished",
            name=name,
            status=str(line.get("status") or ""),
            duration_s=float(duration) if isinstance(duration, int | float) else None,
            raw_sha256=str(line.get("raw_sha256") or ""),
            verdict="failed"
            if not verdict.accepted
            else ("passed" if verdict.results else "not_judged"),
            reasons=tuple(r.as_dict() for r in verdict.reasons),
            metrics=dict(measurement.metrics),
        )

    def sink(line: dict[str, Any]) -> None:
        try:
            found = event(line)
            if found is not None:
                progress(found)
        except Exception:  # the page misses a line; the verdict does not
            logger.exception("live validation progress for %s", target.hostname)

    return sink


# Keeps an outcome (the Django side: provisioning.validation.services.validation_persister)
# and returns the id of the stored validation run.
Persister = Callable[["ValidationOutcome", Sequence[NodeTarget], str], int]


class AgentFailed(RuntimeError):
    """The agent did not produce a report (did not start, timed out, printed no JSON, the
    node could not be reached). ``code`` and ``params`` say why as data (the portal
    translates them); the message is the English text for logs."""

    def __init__(self, text: str, *, code: str = "agent_failed", **params: Any) -> None:
        super().__init__(text)
        self.code = code
        self.params = params

    @property
    def reason(self) -> Reason:
        return Reason(code=self.code, params=dict(self.params), text=str(self))


@dataclass(frozen=True)
class LocalRunner:
    """``python -m provisioning.agent`` here as a subprocess (simulated nodes, CI), its
    lines read as the agent prints them (``on_line``). At ``timeout_s`` the agent and the
    tools it started are killed (its own process group); the lines of the checks that
    finished are kept."""

    timeout_s: float = 120.0
    sizes: Sequence[str] = ()
    extra_args: Sequence[str] = ()  # more agent options (``--gemm-seconds 10`` …)
    streams = True

    def __call__(
        self, target: NodeTarget, profile: str, on_line: LineSink | None = None
    ) -> dict[str, Any]:
        command = [sys.executable, "-m", "provisioning.agent", "--profile", profile]
        if self.sizes:
            command += ["--sizes", *self.sizes]
        command += list(self.extra_args)
        proc = subprocess.Popen(  # noqa: S603 - fixed command, our own module
            command,
            cwd=AGENT_PACKAGE_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # the agent and its tools: one group to kill
        )
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

        timer = threading.Timer(self.timeout_s, kill)
        timer.daemon = True
        errors: list[str] = []
        stdout_pipe, stderr_pipe = proc.stdout, proc.stderr
        if stdout_pipe is None or stderr_pipe is None:  # pragma: no cover - PIPE given
            raise AgentFailed("the agent's output could not be read", code="agent_failed")
        reader = threading.Thread(target=lambda: errors.append(stderr_pipe.read()), daemon=True)
        timer.start()
        reader.start()
        out: list[str] = []
        try:
            for text in stdout_pipe:  # each line as soon as the agent flushed it
                out.append(text)
                if on_line is not None and (line := parse_line(text)) is not None:
                    on_line(line)
            proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                kill()
                proc.wait()
            reader.join(timeout=10)
        stdout = "".join(out)
        if timed_out.is_set():
            doc = fold_lines(stdout)
            if doc is None:
                raise AgentFailed(
                    f"the agent ran past {self.timeout_s:.0f} s",
                    code="agent_timeout",
                    seconds=self.timeout_s,
                )
            doc["complete"] = False  # what finished is kept; the verdict names the rest
            doc["timed_out_after_s"] = self.timeout_s
            return doc
        return agent_document(proc.returncode, stdout, "".join(errors))


def local_runner(
    *, timeout_s: float = 120.0, sizes: Sequence[str] = (), extra_args: Sequence[str] = ()
) -> LocalRunner:
    """Run ``python -m provisioning.agent`` here as a subprocess (simulated nodes, CI)."""
    return LocalRunner(timeout_s=timeout_s, sizes=tuple(sizes), extra_args=tuple(extra_args))


def fold_lines(text: str) -> dict[str, Any] | None:
    """The agent's JSON Lines (``start``, one ``check`` per finished check, ``end``) as one
    document: ``checks`` in order, ``planned``, ``complete`` (False when the ``end`` line is
    missing: killed, timed out). A single JSON document (agents before issue 19) is
    returned as it is. None when nothing in ``text`` is an agent document."""
    stripped = text.strip()
    if not stripped:
        return None
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "checks" in whole:
        return whole
    doc: dict[str, Any] | None = None
    for line in stripped.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by the kill, or noise
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind == "start":
            doc = {k: v for k, v in obj.items() if k != "type"}
            doc["checks"] = []
            doc["complete"] = False
        elif doc is not None and kind == "check":
            doc["checks"].append(obj)
        elif doc is not None and kind == "end":
            doc["finished_at"] = obj.get("finished_at")
            doc["complete"] = True
    return doc


def agent_document(exit_status: int | None, stdout: str, stderr: str) -> dict[str, Any]:
    """The agent's document from its exit status and output, or ``AgentFailed``. An agent
    that was stopped after its first line gives a document with ``complete`` False (the
    judge names the checks that did not finish); one that printed nothing is a failure."""
    doc = fold_lines(stdout)
    if doc is None:
        if exit_status != 0:
            raise AgentFailed(
                f"the agent exited with {exit_status}: {stderr[-500:]}",
                code="agent_exit_status",
                status=exit_status,
                detail=stderr[-500:],
            )
        raise AgentFailed(
            "the agent printed no JSON document", code="agent_no_json", detail=stdout[-200:]
        )
    if exit_status != 0:
        doc["complete"] = False
        doc["exit_status"] = exit_status
    return doc


def measurement_from_report(
    report: dict[str, Any],
    *,
    node: str,
    gpu_model: str,
    fabric: str | None = None,
    expected: Mapping[str, float | int] | None = None,
    allow_injected: bool = False,
) -> Measurement:
    """The rules' view of an agent report: metrics derived from the raw outputs by the
    parsers (``metrics.derive``), every check's outcome and the problems found."""
    return derive(
        report,
        node=node,
        gpu_model=gpu_model,
        fabric=fabric,
        expected=expected,
        allow_injected=allow_injected,
    )


def judge_report(
    report: dict[str, Any],
    target: NodeTarget,
    rules: Iterable[Rule] | None = None,
    *,
    allow_injected: bool = False,
) -> tuple[Measurement, NodeVerdict]:
    """Judge one agent document for ``target``: what a provisioning run does for each node
    (``validate_nodes``) and what ``manage.py validation_judge`` does for a file."""
    measurement = measurement_from_report(
        report,
        node=target.hostname,
        gpu_model=target.gpu_model,
        fabric=target.fabric,
        expected=target.expected,
        allow_injected=allow_injected,
    )
    return measurement, evaluate_node(measurement, rules)


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
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def local_cluster_measurement(*, ranks: int = 2, message_bytes: int = 1 << 20) -> Measurement:
    """The CPU path's cluster check (simulated nodes, CI): a real ring all-reduce across
    local processes at ``ranks`` and ``2 × ranks``; scaling efficiency = throughput(2N) /
    (2 × throughput(N)), throughput being the ranks' aggregate bus bandwidth."""
    small = _ring_allreduce(message_bytes, ranks)
    large = _ring_allreduce(message_bytes, 2 * ranks)
    checks = []
    for name, res in (("cluster_allreduce_n", small), ("cluster_allreduce_2n", large)):
        ok = bool(res.get("correct"))
        checks.append(CheckOutcome(name, "completed" if ok else "failed", 0 if ok else 1, ""))
    throughput_n = small["busbw_gbps"] * small["ranks"]
    throughput_2n = large["busbw_gbps"] * large["ranks"]
    return Measurement(
        node="cluster",
        gpu_model="cpu",
        device="cpu",
        metrics={
            "cluster_allreduce_ring_busbw_gbps": large["busbw_gbps"],
            "allreduce_throughput_scaling": throughput_2n / (2 * throughput_n)
            if throughput_n
            else 0.0,
            # For the report's scaling chart (no rule reads them).
            "cluster_ranks_n": small["ranks"],
            "cluster_throughput_n_gbps": throughput_n,
            "cluster_throughput_2n_gbps": throughput_2n,
            "cluster_message_size_bytes": message_bytes,
        },
        checks=checks,
    )


MAX_PARALLEL_NODES = 32


def collect_reports(
    runner: NodeRunner,
    targets: Sequence[NodeTarget],
    profile: str,
    sinks: Mapping[int, LineSink] | None = None,
) -> list[tuple[dict[str, Any] | None, AgentFailed | None]]:
    """Each target's agent document, or why there is none. A runner that says
    ``parallel = True`` (the SSH runner: every node measures itself) runs on all nodes at
    once, so a cluster takes as long as its slowest node; the local runner (the CPU path,
    all "nodes" on one machine) runs one node after the other so that they do not share
    the CPUs they measure."""

    streams = bool(sinks) and getattr(runner, "streams", False)

    def one(target: NodeTarget) -> tuple[dict[str, Any] | None, AgentFailed | None]:
        try:
            sink = (sinks or {}).get(target.node_id) if streams else None
            if sink is not None:
                return runner(target, profile, on_line=sink), None  # type: ignore[call-arg]
            return runner(target, profile), None
        except AgentFailed as exc:
            return None, exc

    if getattr(runner, "parallel", False) and len(targets) > 1:
        workers = min(len(targets), MAX_PARALLEL_NODES)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agent") as pool:
            return list(pool.map(one, targets))
    return [one(t) for t in targets]


def gpus_per_node(reports: Sequence[dict[str, Any]]) -> int:
    """GPUs per node as the agents report them (the smallest count; 0 if any has none)."""
    counts = []
    for report in reports:
        host = report.get("host") if isinstance(report, dict) else None
        if not isinstance(host, dict) or host.get("device") != "cuda":
            return 0
        count = host.get("gpu_count")
        if not isinstance(count, int) or count < 1:
            return 0
        counts.append(count)
    return min(counts) if counts else 0


def cluster_message_bytes(measurements: Sequence[Measurement]) -> int | None:
    """The cluster all-reduce's message size: 8 GiB (bandwidth-bound), or less where it
    does not fit: nccl-tests' own rule (3 × size + 1 GiB with data checking,
    ``profiles.nccl_message_bytes``) on the smallest GPU any node reported (24 GB cards
    run 4 GiB). None when a node reported no GPU memory or nothing fits (fail closed)."""
    smallest: int | None = None
    for measurement in measurements:
        memory = measurement.metrics.get("gpu_memory_mib")
        if not isinstance(memory, list) or not memory:
            return None
        smallest = min(memory) if smallest is None else min(smallest, *memory)
    size = nccl_message_bytes(smallest)
    return None if size is None else min(size, DEFAULT_MESSAGE_BYTES)


def validate_nodes(
    targets: Sequence[NodeTarget],
    *,
    profile: str = "acceptance",
    runner: NodeRunner | None = None,
    rules: Iterable[Rule] | None = None,
    cluster: Measurement | None = None,
    persist: Persister | None = None,
    cluster_timeout_s: float = 900.0,
    allow_injected: bool = False,
    progress: Progress | None = None,
) -> ValidationOutcome:
    """Run the agent on every node, judge each, then the cluster. Fails closed: a node whose
    agent produced no report is rejected with that reason. ``persist`` (optional) stores
    the outcome (documents, raw outputs with SHA-256, verdicts) and its run id is set on
    the outcome as ``validation_run_id``.

    The cluster check runs once every node passed: on the CPU path a ring all-reduce
    across local processes; on GPU nodes (every agent document reports CUDA GPUs) the
    nccl-tests plan of ``cluster.py`` through the runner's ``run_command``. With no way
    to run it, a multi-node cluster has no cluster measurement and is not accepted.

    ``progress`` (optional) gets a :class:`CheckEvent` per agent line as it arrives, each
    finished check judged on its own (``live_sink``), from runners that stream."""
    runner = runner or local_runner()
    # A runner that reaches real nodes may complete the targets (address, fabric, the node
    # type's figures) and run the cluster check's commands (``ssh`` through the portal).
    resolve = getattr(runner, "resolve", None)
    if resolve is not None:
        targets = [resolve(t) for t in targets]
    command_runner = getattr(runner, "run_command", None)
    rule_list = list(rules) if rules is not None else None
    results: list[NodeResult] = []
    verdicts: list[NodeVerdict] = []
    measurements: list[Measurement] = []
    sinks = (
        {
            t.node_id: live_sink(t, progress, rule_list, allow_injected=allow_injected)
            for t in targets
        }
        if progress is not None
        else None
    )
    reports = collect_reports(runner, targets, profile, sinks)
    for target in targets:
        if progress is None:
            break
        try:  # whatever was still planned or running did not finish
            progress(CheckEvent(target, "ended"))
        except Exception:
            logger.exception("live validation progress for %s", target.hostname)
    for target, (report, failed) in zip(targets, reports, strict=True):
        if failed is not None or report is None:
            exc = failed or AgentFailed("no report")
            results.append(
                NodeResult(
                    target.node_id, target.hostname, False, [str(exc)], {}, failure=exc.reason
                )
            )
            continue
        measurement, verdict = judge_report(
            report, target, rule_list, allow_injected=allow_injected
        )
        verdicts.append(verdict)
        measurements.append(measurement)
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
    cluster_runs: list[ClusterRun] = []
    if cluster is None and len(targets) > 1 and all(t.gpu_model == "cpu" for t in targets):
        try:
            cluster = local_cluster_measurement()
        except (AgentFailed, subprocess.TimeoutExpired, ValueError) as exc:
            cluster_error = f"the cluster check did not run: {exc}"
    elif cluster is None and len(targets) > 1 and all(v.accepted for v in verdicts):
        gpus = gpus_per_node([r.report for r in results])
        size = cluster_message_bytes(measurements)
        if gpus and size is None:
            cluster_error = "the cluster check did not run: no message size fits the GPUs"
        elif gpus and len(verdicts) == len(targets) and command_runner is not None:
            cluster_runs = run_cluster_checks(
                targets[0].address or targets[0].hostname,
                [t.address or t.hostname for t in targets],
                gpus,
                command_runner,
                timeout_s=cluster_timeout_s,
                message_bytes=size,
            )
            cluster = cluster_measurement(
                cluster_runs,
                gpu_model=targets[0].gpu_model,
                fabric=targets[0].fabric,
                expected=targets[0].expected,
            )
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
    outcome.cluster_outputs = [
        {
            "name": r.command.name,
            "command": " ".join(r.command.argv),
            "exit_status": r.result.exit_status if r.result else None,
            "raw": r.raw,
        }
        for r in cluster_runs
    ]
    if persist is not None:
        outcome.validation_run_id = persist(outcome, targets, profile)
    return outcome
