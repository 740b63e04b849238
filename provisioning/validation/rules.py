"""Acceptance rules as data (pure: no Django): the rule, the measurement and the verdict
types; the seed rules are in ``default_rules``, the judging in ``evaluation``.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

__all__ = [
    "BASELINE",
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
    "metric_key",
    "normalize_gpu_model",
    "scaling_efficiency",
]

GIB = 1024**3
#: InfiniBand fabrics (``services.type_fabric`` keys): there the fabric NICs are the RDMA
#: devices whose link layer is InfiniBand (``metrics``: a RoCE front-end port is not one).
IB_FABRICS = ("ndr400", "hdr200")
#: ``Rule(equals=BASELINE)`` compares with the (resolved) baseline, e.g. ``gpu_count``.
BASELINE = "<baseline>"
#: XIDs that fail a node: Azure azurehpc-health-checks azure_gpu_xid.nhc's list, plus 95.
#: NVIDIA's XID catalogue: 95 is an *uncontained* ECC error (recovery: reset the GPU; other
#: processes' memory may be corrupt), so it fails. 94 is a *contained* ECC error (only the
#: faulting application is affected, recovery: restart it; the row is remapped at the
#: next reset): it is recorded as a note, not failed by itself, because the row-remap
#: rules (pending, failure, more than 512 uncorrectable remaps) judge that memory.
XID_CRITICAL = frozenset(
    {48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 95, 119, 120}
)
#: Recorded, not failing (see above).
XID_NOTED = frozenset({94})
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


# --------------------------------------------------------------------------- data types


#: Checks made only on request: their rules apply where the measurement expects the
#: named figure (the portal sets ``expected["burn_in_hours"]`` for an order that bought
#: the burn-in), and fail closed there.
EXPECTED_BY_CHECK: dict[str, str] = {"burn_in": "burn_in_hours"}


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
    #: Only for nodes with this many GPUs (the node type's, ``expected["gpu_count"]``);
    #: None: any count. 8-GPU figures must not judge a 4-GPU or 1-GPU node.
    gpu_count: int | None = None

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

    def applies_to(
        self, profile: str, fabric: str | None, scope: Scope, gpu_count: Any = None
    ) -> bool:
        if self.scope != scope:
            return False
        if self.gpu_count is not None and gpu_count != self.gpu_count:
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
    #: The agent's own code for a failure (``tool_missing``, ``no_message_size`` …).
    reason_code: str = ""


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
    #: What the raw outputs showed beyond the metrics (XID 79, all links inactive, a
    #: -nan from nccl-tests, an unfinished agent …): each fails the node with its code.
    problems: list[Reason] = field(default_factory=list)
    #: Shown, not judged (XID 94, DCGM warnings …).
    observations: list[Reason] = field(default_factory=list)

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
            "unit": self.rule.unit,
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
