"""Acceptance rules as data, and their evaluation (pure: no Django).

After SuperBench's data diagnosis: a rule is a metric, a baseline per GPU model and a
criterion; ``variance = (measured − baseline) / baseline``. The outcome is a per-node
accept flag with reasons and a per-cluster verdict.

Fail closed (VALIDATION.md, CONVENTIONS.md): a required metric that is missing, a check
that was skipped, failed, exited non-zero or whose output did not parse fails the node
with that reason. Skipped is not passed.

Reasons are data, not prose: each :class:`Reason` has a ``code``, ``params`` and a default
English ``text``; the Django layer translates from ``code`` and ``params``.

Metric names (what the portal derives from the agent's checks and the parsers):

=================================  =====================================================
``gpu_count``                       GPUs seen (``equals`` the node type's count)
``gemm_tflops_bf16`` / ``_fp16``    per GPU list, torch.matmul 8192³
``gemm_gflops_cpu``                 CPU profile (numpy matmul)
``hbm_bandwidth_gbps``              per GPU list, device-to-device copy (GB/s)
``memcopy_bandwidth_gbps_cpu``      CPU profile
``h2d_bandwidth_gbps``              per GPU list, nvbandwidth host_to_device_memcpy_ce
``p2p_bandwidth_gbps``              per GPU list (min over peers),
                                    nvbandwidth device_to_device_memcpy_read_ce
``allreduce_busbw_gbps``            intra-node, at ``message_size_bytes`` (see metric_key)
``allreduce_busbw_gbps_cpu``        CPU profile
``ib_write_bw_gbps``                Gb/s, per NIC list or one figure
``nvlink_inactive_links``           count of ``<inactive>`` links
``xid_critical_count``              kernel-log XIDs in :data:`XID_CRITICAL`
``remapped_rows_pending`` /         GPUs with a pending / failed row remap
``remapped_rows_failure``
``dcgm_fail_count`` /               DCGM results that are Fail / Skip (``Skip`` is not
``dcgm_skip_count``                 ``Pass``: the default rules require 0 skips)
``cluster_allreduce_ring_busbw_gbps``  cluster scope, ``NCCL_ALGO=RING``
``scaling_efficiency``              cluster scope
=================================  =====================================================
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

__all__ = [
    "BASELINE",
    "DEFAULT_RULES",
    "GIB",
    "XID_CRITICAL",
    "CheckOutcome",
    "ClusterVerdict",
    "Measurement",
    "NodeVerdict",
    "Reason",
    "Rule",
    "RuleResult",
    "busbw_from_algbw",
    "evaluate_cluster",
    "evaluate_node",
    "metric_key",
    "normalize_gpu_model",
    "rules_for",
    "scaling_efficiency",
]

GIB = 1024**3
#: ``Rule(equals=BASELINE)`` compares with the (resolved) baseline, e.g. ``gpu_count``.
BASELINE = "<baseline>"
#: XIDs that fail a node (Azure azurehpc-health-checks azure_gpu_xid.nhc).
XID_CRITICAL = frozenset({48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120})
#: Median rule: a GPU more than 5 % below its node's median fails (SuperBench quickscan).
MEDIAN_TOLERANCE = 0.05

Number = float | int | Decimal
MetricValue = Number | Sequence[Number] | str | None
Scope = Literal["node", "cluster"]


# ------------------------------------------------------------------------------ helpers

_BUSBW_FACTORS = {
    "all_reduce": "allreduce",
    "allreduce": "allreduce",
    "reduce_scatter": "nm1",
    "reducescatter": "nm1",
    "all_gather": "nm1",
    "allgather": "nm1",
    "all_to_all": "nm1",
    "alltoall": "nm1",
    "broadcast": "one",
    "reduce": "one",
    "sendrecv": "one",
}


def busbw_from_algbw(algbw: float, n: int, collective: str) -> float:
    """Bus bandwidth from algorithm bandwidth (nccl-tests doc/PERFORMANCE.md).

    ``busbw = algbw × 2(n−1)/n`` for all-reduce; ``(n−1)/n`` for reduce-scatter,
    all-gather and all-to-all; ``× 1`` for broadcast and reduce. ``collective`` accepts
    ``all_reduce``, ``allreduce``, ``all_reduce_perf`` and the like.
    """
    if n < 1:
        raise ValueError("n (number of ranks) must be at least 1")
    key = collective.strip().lower().removesuffix("_perf").replace("-", "_")
    kind = _BUSBW_FACTORS.get(key)
    if kind is None:
        raise ValueError(f"unknown collective {collective!r}")
    if kind == "allreduce":
        return algbw * 2 * (n - 1) / n
    if kind == "nm1":
        return algbw * (n - 1) / n
    return algbw


def scaling_efficiency(throughput_n: float, throughput_2n: float) -> float:
    """``throughput(2N) / (2 × throughput(N))`` on a fixed step (1.0 = linear)."""
    if throughput_n <= 0:
        raise ValueError("throughput at N must be positive")
    if throughput_2n < 0:
        raise ValueError("throughput at 2N must not be negative")
    return throughput_2n / (2 * throughput_n)


def metric_key(metric: str, message_size_bytes: int | None = None) -> str:
    """Key of a metric in :attr:`Measurement.metrics`: ``name`` or ``name@size``."""
    return metric if message_size_bytes is None else f"{metric}@{message_size_bytes}"


def normalize_gpu_model(name: str | None) -> str:
    """Map a marketing/driver name to a rule key: ``NVIDIA H100 80GB HBM3`` → ``H100``.

    Keys: H100, H200, GH200, A100-40G, A100-80G, V100S, V100, RTX3090, cpu; anything else
    is returned upper-cased so that it matches no default rule (and fails closed).
    """
    if not name:
        return ""
    n = name.upper().replace("NVIDIA", "").replace("TESLA", "").replace("GEFORCE", "")
    n = " ".join(n.split())
    if n in ("CPU", ""):
        return "cpu" if n == "CPU" else ""
    if "GH200" in n:
        return "GH200"
    if "H200" in n:
        return "H200"
    if "H100" in n:
        return "H100"
    if "A100" in n:
        return "A100-80G" if "80G" in n.replace(" ", "") else "A100-40G"
    if "V100S" in n:
        return "V100S"
    if "V100" in n:
        return "V100"
    if "3090" in n:
        return "RTX3090"
    return n


def _dec(value: Number | str) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        raise TypeError("a boolean is not a measurement")
    try:
        return Decimal(str(value))
    except InvalidOperation as exc:
        raise TypeError(f"not a number: {value!r}") from exc


# --------------------------------------------------------------------------- data types


@dataclass(frozen=True)
class Reason:
    """Why something failed (or was noted): a code, its parameters and English text."""

    code: str
    params: Mapping[str, Any]
    text: str

    def __str__(self) -> str:
        return self.text

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "params": dict(self.params), "text": self.text}


@dataclass(frozen=True)
class Rule:
    """One acceptance rule.

    Criterion (exactly one kind): ``min_variance`` (``(measured − baseline)/baseline ≥
    min_variance``, i.e. ``measured ≥ baseline × (1 + min_variance)``), or an absolute
    ``min_value`` and/or ``max_value`` (``min_inclusive=False`` makes the minimum strict),
    or ``equals`` (a value, or :data:`BASELINE`).

    ``baseline_from`` takes the baseline from :attr:`Measurement.expected` (e.g. the node
    type's GPU count, a golden node's figure); ``baseline_multiplier_from`` multiplies
    the baseline by such a value (e.g. NICs per node). A per-GPU (list) metric must meet
    the criterion on every GPU; with ``max_below_median`` a GPU further below the node's
    median than that fraction also fails.

    ``gpu_model`` is a :func:`normalize_gpu_model` key, ``"*"`` (any GPU model, not the
    CPU profile) or ``"cpu"``. ``fabric`` restricts the rule to nodes on that fabric.
    ``check`` names the agent check that produces the metric (for skip/failure reasons).
    ``required=False``: a missing measurement is noted, not failed; a present measurement
    is still judged.
    """

    metric: str
    gpu_model: str
    source: str
    baseline: Decimal | float | None = None
    min_variance: float | None = None
    min_value: float | None = None
    max_value: float | None = None
    equals: float | int | str | None = None
    min_inclusive: bool = True
    fabric: str | None = None
    message_size_bytes: int | None = None
    required: bool = True
    check: str | None = None
    scope: Scope = "node"
    unit: str = ""
    baseline_from: str | None = None
    baseline_multiplier_from: str | None = None
    max_below_median: float | None = None

    def __post_init__(self) -> None:
        kinds = [
            self.min_variance is not None,
            self.min_value is not None or self.max_value is not None,
            self.equals is not None,
        ]
        if sum(kinds) != 1:
            raise ValueError(f"rule {self.metric}: give exactly one kind of criterion")
        needs_baseline = self.min_variance is not None or self.equals == BASELINE
        if needs_baseline and self.baseline is None and self.baseline_from is None:
            raise ValueError(f"rule {self.metric}: criterion needs a baseline")
        if self.baseline is not None and self.min_variance is not None and self.baseline <= 0:
            raise ValueError(f"rule {self.metric}: baseline must be positive")
        if self.scope not in ("node", "cluster"):
            raise ValueError(f"rule {self.metric}: scope must be node or cluster")

    @property
    def key(self) -> str:
        return metric_key(self.metric, self.message_size_bytes)

    def applies_to(self, profile: str, fabric: str | None, scope: Scope) -> bool:
        if self.scope != scope:
            return False
        if self.fabric is not None and (fabric or "").lower() != self.fabric.lower():
            return False
        if self.gpu_model == "*":
            return profile != "cpu" and profile != ""
        return self.gpu_model == profile


@dataclass(frozen=True)
class CheckOutcome:
    """How one check ran: ``status`` is completed, failed or skipped (from the agent)."""

    name: str
    status: str
    return_code: int | None = None
    reason: str = ""
    parse_error: str | None = None


@dataclass
class Measurement:
    """What was measured on one node (or, with ``node="cluster"``, on the cluster).

    ``device`` is ``"cuda"`` or ``"cpu"``; a CPU measurement selects the ``cpu`` profile
    and can never accept a node whose ``gpu_model`` is a GPU. ``metrics`` maps
    :func:`metric_key` to a number, a per-GPU list, a string or None. ``expected`` holds
    per-node figures the rules may refer to (``gpu_count``, ``nics_per_node``, golden
    figures).
    """

    node: str
    gpu_model: str
    device: str = "cuda"
    fabric: str | None = None
    metrics: dict[str, MetricValue] = field(default_factory=dict)
    checks: list[CheckOutcome] = field(default_factory=list)
    expected: dict[str, Number] = field(default_factory=dict)

    @property
    def profile(self) -> str:
        return "cpu" if self.device == "cpu" else normalize_gpu_model(self.gpu_model)


@dataclass
class RuleResult:
    """One rule judged: ``status`` is pass, fail or not_measured (optional rule)."""

    rule: Rule
    status: str
    measured: MetricValue = None
    expected: str = ""
    variance: float | None = None
    flagged_gpus: list[int] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status != "fail"

    def as_dict(self) -> dict[str, Any]:
        measured = self.measured
        if isinstance(measured, Decimal):
            measured = float(measured)
        elif isinstance(measured, list | tuple):
            measured = [float(v) if isinstance(v, Decimal) else v for v in measured]
        return {
            "metric": self.rule.key,
            "status": self.status,
            "measured": measured,
            "expected": self.expected,
            "variance": self.variance,
            "flagged_gpus": self.flagged_gpus,
            "source": self.rule.source,
            "reasons": [r.as_dict() for r in self.reasons],
        }


@dataclass
class NodeVerdict:
    node: str
    accepted: bool
    reasons: list[Reason]
    results: list[RuleResult]
    notes: list[Reason] = field(default_factory=list)

    @property
    def reason_texts(self) -> list[str]:
        return [r.text for r in self.reasons]

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "accepted": self.accepted,
            "reasons": [r.as_dict() for r in self.reasons],
            "notes": [r.as_dict() for r in self.notes],
            "results": [r.as_dict() for r in self.results],
        }


@dataclass
class ClusterVerdict:
    accepted: bool
    reasons: list[Reason]
    nodes: list[NodeVerdict]
    results: list[RuleResult]

    @property
    def rejected_nodes(self) -> list[str]:
        return [n.node for n in self.nodes if not n.accepted]

    def as_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "reasons": [r.as_dict() for r in self.reasons],
            "rejected_nodes": self.rejected_nodes,
            "nodes": [n.as_dict() for n in self.nodes],
            "results": [r.as_dict() for r in self.results],
        }


# --------------------------------------------------------------------------- evaluation


def _reason(code: str, text: str, **params: Any) -> Reason:
    clean = {k: (float(v) if isinstance(v, Decimal) else v) for k, v in params.items()}
    return Reason(code=code, params=clean, text=text)


def _fmt(value: Any) -> str:
    if isinstance(value, Decimal):
        value = value.normalize()
        return f"{value:f}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _resolve_baseline(rule: Rule, m: Measurement) -> Decimal | None:
    baseline: Number | None = rule.baseline
    if rule.baseline_from is not None:
        baseline = m.expected.get(rule.baseline_from)
    if baseline is None:
        return None
    value = _dec(baseline)
    if rule.baseline_multiplier_from is not None:
        mult = m.expected.get(rule.baseline_multiplier_from)
        if mult is None:
            return None
        value *= _dec(mult)
    return value


def _judge_one(rule: Rule, value: Any, baseline: Decimal | None) -> tuple[bool, str]:
    """Return (passes, expected-text) for one scalar value."""
    if rule.equals is not None:
        target: Any = baseline if rule.equals == BASELINE else rule.equals
        if isinstance(target, str) or isinstance(value, str):
            return str(value) == str(target), f"= {_fmt(target)}"
        return _dec(value) == _dec(target), f"= {_fmt(target)}"
    v = _dec(value)
    if rule.min_variance is not None:
        if baseline is None:
            return False, "a baseline"
        threshold = baseline * (1 + _dec(rule.min_variance))
        return v >= threshold, f">= {_fmt(threshold)} ({_fmt(baseline)} {rule.min_variance:+.0%})"
    ok = True
    parts = []
    if rule.min_value is not None:
        lo = _dec(rule.min_value)
        ok = ok and (v >= lo if rule.min_inclusive else v > lo)
        parts.append(f"{'>=' if rule.min_inclusive else '>'} {_fmt(lo)}")
    if rule.max_value is not None:
        hi = _dec(rule.max_value)
        ok = ok and v <= hi
        parts.append(f"<= {_fmt(hi)}")
    return ok, " and ".join(parts)


def _evaluate_rule(rule: Rule, m: Measurement, checks: Mapping[str, CheckOutcome]) -> RuleResult:
    res = RuleResult(rule=rule, status="pass")
    unit = f" {rule.unit}" if rule.unit else ""
    check = checks.get(rule.check) if rule.check else None
    value = m.metrics.get(rule.key)

    def fail(reason: Reason) -> RuleResult:
        res.status = "fail" if rule.required else "not_measured"
        res.reasons.append(reason)
        return res

    if check is not None and (check.status != "completed" or check.parse_error):
        if check.parse_error:
            return fail(
                _reason(
                    "parse_error",
                    f"{rule.key}: the output of check {check.name} could not be parsed: "
                    f"{check.parse_error}",
                    metric=rule.key,
                    check=check.name,
                    error=check.parse_error,
                )
            )
        code = "check_skipped" if check.status == "skipped" else "check_failed"
        verb = "was skipped" if check.status == "skipped" else "failed"
        return fail(
            _reason(
                code,
                f"{rule.key}: check {check.name} {verb}"
                + (f": {check.reason}" if check.reason else ""),
                metric=rule.key,
                check=check.name,
                detail=check.reason,
            )
        )
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        return fail(_reason("missing_metric", f"{rule.key}: not measured", metric=rule.key))
    res.measured = list(value) if isinstance(value, list | tuple) else value
    baseline = _resolve_baseline(rule, m)
    if baseline is None and (rule.min_variance is not None or rule.equals == BASELINE):
        missing = rule.baseline_from or rule.baseline_multiplier_from
        return fail(
            _reason(
                "missing_baseline",
                f"{rule.key}: no baseline ({missing}) to compare with",
                metric=rule.key,
                baseline=missing,
            )
        )
    values = list(value) if isinstance(value, list | tuple) else [value]
    try:
        verdicts = [_judge_one(rule, v, baseline) for v in values]
    except TypeError as exc:
        return fail(
            _reason(
                "bad_value",
                f"{rule.key}: measured value is not a number ({exc})",
                metric=rule.key,
            )
        )
    res.expected = verdicts[0][1]
    if baseline is not None and rule.min_variance is not None:
        worst = min(_dec(v) for v in values)
        res.variance = float((worst - baseline) / baseline)
    per_gpu = isinstance(value, list | tuple)
    for idx, (v, (ok, expected)) in enumerate(zip(values, verdicts, strict=True)):
        if ok:
            continue
        where = f" on GPU {idx}" if per_gpu else ""
        res.status = "fail"
        if per_gpu:
            res.flagged_gpus.append(idx)
        res.reasons.append(
            _reason(
                "below_threshold" if rule.equals is None else "not_equal",
                f"{rule.key}{where}: measured {_fmt(v)}{unit}, expected {expected}{unit}",
                metric=rule.key,
                gpu=idx if per_gpu else None,
                measured=v,
                expected=expected,
                unit=rule.unit,
                source=rule.source,
            )
        )
    if per_gpu and rule.max_below_median is not None and len(values) > 1:
        decs = [_dec(v) for v in values]
        median = statistics.median(decs)
        floor = median * (1 - _dec(rule.max_below_median))
        for idx, v in enumerate(decs):
            if v < floor:
                res.status = "fail"
                if idx not in res.flagged_gpus:
                    res.flagged_gpus.append(idx)
                res.reasons.append(
                    _reason(
                        "below_node_median",
                        f"{rule.key} on GPU {idx}: {_fmt(v)}{unit} is more than "
                        f"{rule.max_below_median:.0%} below the node median {_fmt(median)}{unit}",
                        metric=rule.key,
                        gpu=idx,
                        measured=v,
                        median=median,
                        tolerance=rule.max_below_median,
                        unit=rule.unit,
                    )
                )
    return res


def rules_for(rules: Iterable[Rule], m: Measurement, scope: Scope = "node") -> list[Rule]:
    """The rules that apply to a measurement: its profile, its fabric, the scope."""
    return [r for r in rules if r.applies_to(m.profile, m.fabric, scope)]


def _evaluate(m: Measurement, rules: Iterable[Rule], scope: Scope) -> NodeVerdict:
    reasons: list[Reason] = []
    notes: list[Reason] = []
    if m.device == "cpu" and normalize_gpu_model(m.gpu_model) not in ("", "cpu"):
        reasons.append(
            _reason(
                "device_mismatch",
                f"measured on the CPU, but the node has {m.gpu_model} GPUs",
                gpu_model=m.gpu_model,
                device=m.device,
            )
        )
    selected = rules_for(rules, m, scope)
    # Wildcard rules alone (GPU count, XID...) cannot accept a node: its GPU model must have
    # rules of its own, or an unknown model would pass without a performance check.
    own = [r for r in selected if r.gpu_model == m.profile] if scope == "node" else selected
    if not own:
        reasons.append(
            _reason(
                "no_rules",
                f"no acceptance rules for {m.profile or 'an unknown GPU model'}",
                profile=m.profile,
            )
        )
    checks = {c.name: c for c in m.checks}
    required_checks = {r.check for r in selected if r.required and r.check}
    for c in m.checks:
        if c.return_code not in (None, 0):
            reasons.append(
                _reason(
                    "nonzero_return_code",
                    f"check {c.name} exited with status {c.return_code}",
                    check=c.name,
                    return_code=c.return_code,
                )
            )
        if c.parse_error:
            reasons.append(
                _reason(
                    "parse_error",
                    f"the output of check {c.name} could not be parsed: {c.parse_error}",
                    check=c.name,
                    error=c.parse_error,
                )
            )
        if c.status == "failed":
            reasons.append(
                _reason(
                    "check_failed",
                    f"check {c.name} failed" + (f": {c.reason}" if c.reason else ""),
                    check=c.name,
                    detail=c.reason,
                )
            )
        elif c.status == "skipped":
            skip = _reason(
                "check_skipped",
                f"check {c.name} was skipped" + (f": {c.reason}" if c.reason else ""),
                check=c.name,
                detail=c.reason,
            )
            (reasons if c.name in required_checks else notes).append(skip)
        elif c.status != "completed":
            reasons.append(
                _reason(
                    "unknown_status",
                    f"check {c.name} has an unknown status {c.status!r}",
                    check=c.name,
                    status=c.status,
                )
            )
    results = [_evaluate_rule(r, m, checks) for r in selected]
    seen = {(r.code, r.params.get("check")) for r in reasons}
    for res in results:
        for reason in res.reasons:
            if res.status == "fail":
                if (reason.code, reason.params.get("check")) in seen and reason.code in (
                    "check_skipped",
                    "check_failed",
                    "parse_error",
                ):
                    continue  # already said once for the check
                reasons.append(reason)
            else:
                notes.append(reason)
    return NodeVerdict(
        node=m.node, accepted=not reasons, reasons=reasons, results=results, notes=notes
    )


def evaluate_node(m: Measurement, rules: Iterable[Rule] | None = None) -> NodeVerdict:
    """Judge one node against the rules for its GPU model (default :data:`DEFAULT_RULES`).

    ``accepted`` is True only when rules exist for the node's GPU model (wildcard rules
    alone do not count: an unknown model fails with ``no_rules``), every applicable rule
    passes, and no check failed, exited non-zero, failed to parse or (when a required rule
    needs it) was skipped. Skipped checks that no required rule needs become ``notes``.
    """
    return _evaluate(m, DEFAULT_RULES if rules is None else rules, "node")


def evaluate_cluster(
    nodes: Sequence[Measurement | NodeVerdict],
    cluster: Measurement | None,
    rules: Iterable[Rule] | None = None,
) -> ClusterVerdict:
    """Judge a cluster: every node accepted and every cluster-scope rule passes.

    ``nodes`` may be measurements (judged here) or verdicts already made. ``cluster``
    carries the cluster metrics (``cluster_allreduce_ring_busbw_gbps``,
    ``scaling_efficiency``) with ``gpu_model``, ``fabric`` and ``expected``
    (``nics_per_node``); for a multi-node cluster a missing cluster measurement fails.
    """
    rule_list = list(DEFAULT_RULES if rules is None else rules)
    verdicts = [n if isinstance(n, NodeVerdict) else _evaluate(n, rule_list, "node") for n in nodes]
    reasons: list[Reason] = []
    if not verdicts:
        reasons.append(_reason("no_nodes", "the cluster has no nodes"))
    for v in verdicts:
        if not v.accepted:
            reasons.append(
                _reason(
                    "node_rejected",
                    f"node {v.node} was not accepted: " + "; ".join(v.reason_texts),
                    node=v.node,
                )
            )
    results: list[RuleResult] = []
    if cluster is not None:
        cv = _evaluate(cluster, rule_list, "cluster")
        results = cv.results
        reasons.extend(cv.reasons)
    elif len(verdicts) > 1:
        reasons.append(
            _reason(
                "missing_cluster_measurement",
                "no cluster-wide measurement (multi-node all-reduce, scaling efficiency)",
            )
        )
    return ClusterVerdict(accepted=not reasons, reasons=reasons, nodes=verdicts, results=results)


# ------------------------------------------------------------------------ default rules

_SRC_GEMM = (
    "GEMM TFLOPS: torch.matmul 8192³ bf16 (V100S fp16), 50 warm-up + 100 timed with CUDA "
    "events, all GPUs at once; ≥ 90% of reference, and no GPU > 5% below the node median "
    "(SuperBench quickscan rule `x < -0.1`; stas00/ml-engineering). Reference TFLOPS "
    "(measured, not spec): {ref} (zzc0721/torch-performance-test-data)"
)
_SRC_HBM = (
    "HBM bandwidth: copy/triad kernel or DCGM memory_bandwidth; ≥ 85% of spec (GUESS): {spec}"
)
_SRC_NVB = (
    "host↔device and P2P copy bandwidth (nvbandwidth): H100/H200 ≥ 48 GB/s H2D and ≥ 335 "
    "GB/s P2P; A100 ≥ 24; V100 ≥ 10 (Azure conf/*.conf); RTX 3090 24 (GUESS)"
)
_SRC_AR = (
    "NVLink all-reduce: `all_reduce_perf -b 16G -e 16G -g 1`, one rank per GPU; 8×H100 ≥ "
    "460 GB/s busbw, 8×H200 ≥ 431, 8×A100 ≥ 228 (Azure conf); others: golden node − 10% "
    "(GUESS)"
)
_SRC_IB = (
    "IB loopback: `ib_write_bw ... --use_cuda`; NDR ≥ 380 Gb/s (H100), HDR ≥ 185 (Azure "
    "azure_ib_write_bw_gdr.nhc)"
)
_SRC_COUNT = (
    "GPU count and model: equals the node type (Azure azurehpc-health-checks check_gpu_count)"
)
_SRC_NVLINK = (
    "NVLink state: `nvidia-smi nvlink -s`; no `<inactive>` link (azurehpc-health-checks "
    "customTests/azure_gpu_nvlink.nhc)"
)
_SRC_XID = (
    "XID errors: kernel log; none of 48 56 57 58 62 63 64 65 68 69 73 74 79 80 81 92 119 "
    "120 (azure_gpu_xid.nhc)"
)
_SRC_ECC = (
    "ECC / row remap: `nvidia-smi --query-remapped-rows`, ecc counters; no pending/failed "
    "remap, SRAM uncorrectable 0 (azure_gpu_ecc.nhc)"
)
_SRC_DCGM = (
    "DCGM diagnostics: `dcgmi diag -r 3 -j` (GeForce: `-r 1`); every result Pass; Skip is "
    "not Pass (DCGM issues #55, #139, #284)"
)
_SRC_RING = (
    "Multi-node all-reduce with `NCCL_ALGO=RING`: busbw ≥ 0.9 × NICs × per-NIC figure "
    "(0.9 GUESS); per NIC 46–48 GB/s for NDR 400G, 24 for HDR 200G, 12 for 100G (nccl-tests "
    "issues #290, #119); the lower figure of the range is used"
)
_SRC_SCALING = (
    "Scaling efficiency = throughput(2N) / (2 × throughput(N)) on a fixed step; ≥ 0.9 (GUESS)"
)
_SRC_CPU = (
    "CPU profile (CI, `device: cpu`): a path check, not a performance claim; the agent must "
    "have completed the check and measured a positive figure; a missing metric fails"
)

_GEMM = {
    # model: (metric, reference TFLOPS, reference text)
    "H100": ("gemm_tflops_bf16", 790, "H100 SXM bf16 ~790 (ml-engineering MAMF 794.5)"),
    "H200": ("gemm_tflops_bf16", 790, "H200 same as H100 (~790)"),
    "A100-80G": ("gemm_tflops_bf16", 265, "A100 SXM 80G ~265–271 (lower figure used)"),
    "A100-40G": ("gemm_tflops_bf16", 246, "A100 40G ~246"),
    "V100S": ("gemm_tflops_fp16", 89, "V100S fp16 ~89"),
    "RTX3090": ("gemm_tflops_bf16", 76, "RTX 3090 ~76"),
}
_HBM = {
    # model: (spec GB/s, source note)
    "H100": (3350, "H100 3.35 TB/s"),
    "H200": (4800, "H200 4.8 TB/s"),
    "A100-80G": (2040, "A100 80G 2.04 TB/s"),
    "A100-40G": (1555, "A100 40G 1.555 TB/s (spec sheet; not in VALIDATION.md: GUESS)"),
    "V100S": (1134, "V100S 1134 GB/s (spec sheet; not in VALIDATION.md: GUESS)"),
    "RTX3090": (936, "RTX 3090 936 GB/s (spec sheet; not in VALIDATION.md: GUESS)"),
}
_H2D = {"H100": 48, "H200": 48, "A100-80G": 24, "A100-40G": 24, "V100S": 10, "RTX3090": 24}
_AR_MIN = {"H100": 460, "H200": 431, "A100-80G": 228, "A100-40G": 228}
_NVLINK_MODELS = ("H100", "H200", "A100-80G", "A100-40G")
_REMAP_MODELS = ("H100", "H200", "A100-80G", "A100-40G")


def _default_rules() -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for model, (metric, ref, ref_text) in _GEMM.items():
        rules.append(
            Rule(
                metric=metric,
                gpu_model=model,
                baseline=Decimal(ref),
                min_variance=-0.10,
                max_below_median=MEDIAN_TOLERANCE,
                check="gemm",
                unit="TFLOPS",
                source=_SRC_GEMM.format(ref=ref_text),
            )
        )
    for model, (spec, spec_text) in _HBM.items():
        rules.append(
            Rule(
                metric="hbm_bandwidth_gbps",
                gpu_model=model,
                baseline=Decimal(spec),
                min_variance=-0.15,
                check="memory_bandwidth",
                unit="GB/s",
                source=_SRC_HBM.format(spec=spec_text),
            )
        )
    for model, h2d in _H2D.items():
        rules.append(
            Rule(
                metric="h2d_bandwidth_gbps",
                gpu_model=model,
                min_value=h2d,
                check="nvbandwidth",
                unit="GB/s",
                source=_SRC_NVB + (" — RTX 3090 figure is a GUESS" if model == "RTX3090" else ""),
            )
        )
    for model in ("H100", "H200"):
        rules.append(
            Rule(
                metric="p2p_bandwidth_gbps",
                gpu_model=model,
                min_value=335,
                check="nvbandwidth",
                unit="GB/s",
                source=_SRC_NVB,
            )
        )
    for model, busbw in _AR_MIN.items():
        rules.append(
            Rule(
                metric="allreduce_busbw_gbps",
                gpu_model=model,
                min_value=busbw,
                message_size_bytes=16 * GIB,
                check="allreduce",
                unit="GB/s",
                source=_SRC_AR + " — figure for 8 GPUs",
            )
        )
    for model in ("V100S", "RTX3090"):
        rules.append(
            Rule(
                metric="allreduce_busbw_gbps",
                gpu_model=model,
                baseline_from="golden_allreduce_busbw_gbps",
                min_variance=-0.10,
                message_size_bytes=16 * GIB,
                check="allreduce",
                unit="GB/s",
                required=False,
                source=_SRC_AR + " — golden node − 10% (GUESS); not required on PCIe nodes",
            )
        )
    rules += [
        Rule(
            metric="ib_write_bw_gbps",
            gpu_model="*",
            fabric="ndr400",
            min_value=380,
            check="ib_write_bw",
            unit="Gb/s",
            source=_SRC_IB,
        ),
        Rule(
            metric="ib_write_bw_gbps",
            gpu_model="*",
            fabric="hdr200",
            min_value=185,
            check="ib_write_bw",
            unit="Gb/s",
            source=_SRC_IB,
        ),
        Rule(
            metric="gpu_count",
            gpu_model="*",
            equals=BASELINE,
            baseline_from="gpu_count",
            check="gpu_inventory",
            source=_SRC_COUNT,
        ),
        Rule(
            metric="xid_critical_count",
            gpu_model="*",
            equals=0,
            check="xid",
            source=_SRC_XID,
        ),
        Rule(
            metric="dcgm_fail_count",
            gpu_model="*",
            equals=0,
            check="dcgm_diag",
            source=_SRC_DCGM,
        ),
        Rule(
            metric="dcgm_skip_count",
            gpu_model="*",
            equals=0,
            check="dcgm_diag",
            source=_SRC_DCGM,
        ),
    ]
    for model in _NVLINK_MODELS:
        rules.append(
            Rule(
                metric="nvlink_inactive_links",
                gpu_model=model,
                equals=0,
                check="nvlink",
                source=_SRC_NVLINK,
            )
        )
    for model in _REMAP_MODELS:
        for metric in ("remapped_rows_pending", "remapped_rows_failure"):
            rules.append(
                Rule(metric=metric, gpu_model=model, equals=0, check="ecc_remap", source=_SRC_ECC)
            )
        rules.append(
            Rule(
                metric="ecc_sram_uncorrectable",
                gpu_model=model,
                equals=0,
                check="ecc_remap",
                required=False,
                source=_SRC_ECC + " — optional: not every driver reports SRAM counters",
            )
        )
    for fabric, per_nic in (("ndr400", 46), ("hdr200", 24), ("100g", 12)):
        rules.append(
            Rule(
                metric="cluster_allreduce_ring_busbw_gbps",
                gpu_model="*",
                fabric=fabric,
                scope="cluster",
                baseline=Decimal(per_nic),
                baseline_multiplier_from="nics_per_node",
                min_variance=-0.10,
                unit="GB/s",
                source=_SRC_RING,
            )
        )
    rules.append(
        Rule(
            metric="scaling_efficiency",
            gpu_model="*",
            scope="cluster",
            min_value=0.9,
            source=_SRC_SCALING,
        )
    )
    # CPU profile: real measurements on the CPU, judged only as "it ran and measured".
    for metric, check, unit in (
        ("gemm_gflops_cpu", "gemm", "GFLOPS"),
        ("memcopy_bandwidth_gbps_cpu", "memory_bandwidth", "GB/s"),
        ("allreduce_busbw_gbps_cpu", "allreduce", "GB/s"),
    ):
        rules.append(
            Rule(
                metric=metric,
                gpu_model="cpu",
                min_value=0,
                min_inclusive=False,
                check=check,
                unit=unit,
                source=_SRC_CPU,
            )
        )
    rules.append(
        Rule(
            metric="scaling_efficiency",
            gpu_model="cpu",
            scope="cluster",
            min_value=0,
            min_inclusive=False,
            required=False,
            source=_SRC_CPU,
        )
    )
    return tuple(rules)


#: The seed rule set (VALIDATION.md). The portal stores rules as data; these seed it.
DEFAULT_RULES: tuple[Rule, ...] = _default_rules()
