"""One layout on one node type (``plan_layout``) and the search for the smallest one
that runs (``search_option``): memory, host RAM, the seeds' fabric and band rules, price
and time.

Compute: 6 × N × D FLOPs to train (Kaplan et al. 2020), 2 × N per generated token, over
the measured GEMM reference × an MFU; MoE counts active parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from core.i18n_hook import _
from inventory.sizing.formatting import BILLION, GB, fabric_label, fmt, fmt_gb, intra_label
from inventory.sizing.hardware import (
    NodeOption,
    gpu_architecture,
    memory_bandwidth,
    precision_problem,
    reference_tflops,
)
from inventory.sizing.inputs import SizingInput
from inventory.sizing.memory import HOST_RESERVE_FRACTION, Memory, memory_per_gpu
from inventory.sizing.shape import Band, Shape

SECONDS_PER_DAY = 86_400
MAX_NODES = 1024
MEDIUM_BANDWIDTH_GBPS = 100  # estimate: the seeds' "medium bandwidth" for < 30B
TP_DP_BANDWIDTH_GBPS = 200  # seeds: 30–70B, ≥ 200 Gb/s between nodes
LARGE_NIC_GBPS = 400  # seeds: 100B+, 400 Gb/s between nodes
ROCE_MAX_GPUS = 32  # seeds: up to 32 GPUs RoCE v2 is acceptable (leaf-spine)
CLOS_MIN_GPUS = 64  # seeds: 64 GPUs and more need IB NDR 400G in a 3-tier CLOS
NVLINK_KINDS = frozenset({"nvswitch", "nvlink"})
RDMA_FABRICS = frozenset({"ib_ndr", "ib_hdr", "roce_v2"})
TP_CHOICES = (1, 2, 4, 8)
PP_CHOICES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Plan:
    """One layout on one node type: whether it runs, and what it costs and takes."""

    option: NodeOption
    gpus: int
    nodes: int
    tp: int
    pp: int
    dp: int
    ep: int
    zero: int
    offload: str
    memory: Memory
    gpu_memory_gb: float
    host_needed_gb: float  # per node
    monthly_total: Decimal | None
    sustained_tflops: float  # per GPU: reference × MFU
    train_days: float | None
    tokens_per_s: float | None  # inference estimate
    band_rule: str
    band_rule_met: bool
    problems: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        return not self.problems

    @property
    def layout(self) -> str:
        text = f"TP {self.tp} × PP {self.pp} × DP {self.dp}"
        return text + (f" × EP {self.ep}" if self.ep > 1 else "")

    @property
    def memory_share(self) -> float:
        return self.memory.total / self.gpu_memory_gb if self.gpu_memory_gb else 0.0

    @property
    def gpu_count(self) -> int:
        return self.gpus

    @property
    def node_count(self) -> int:
        return self.nodes


@dataclass(frozen=True)
class OptionOutcome:
    """What one node type gives: its best plan, or why it has none."""

    option: NodeOption
    plan: Plan | None
    problems: tuple[str, ...] = ()

    @property
    def qualifies(self) -> bool:
        return self.plan is not None


def _compute_rate(option: NodeOption, precision: str, mfu: float) -> float:
    """Sustained TFLOPS per GPU: the measured GEMM reference × MFU; fp32 runs on TF32
    tensor cores at half the bf16 rate (Ampere/Hopper spec ratio), Volta at 1/8."""
    rate = reference_tflops(option) * mfu
    if precision == "fp32":
        rate *= 0.125 if gpu_architecture(option.gpu_model) == "Volta" else 0.5
    return rate


def _band_rule(band: Band, option: NodeOption, nodes: int, mode: str) -> tuple[str, bool]:
    """The seeds' band rule for this model size, and whether the plan meets it."""
    inter = option.inter_node_gbps
    nvlink = option.intra_node in NVLINK_KINDS
    if band == "<30B":
        return _("Under 30B: one 8-GPU node, data parallel."), nodes == 1
    if band in ("30-70B", "70-100B"):
        text = _(
            "30–70B: full NVLink inside the node, ≥ 200 Gb/s between nodes, tensor + data parallel."
        )
        return text, nvlink and (nodes == 1 or inter >= TP_DP_BANDWIDTH_GBPS)
    text = _(
        "100B and up: multi-node cluster, 400 Gb/s between nodes, 3D parallel with "
        "ZeRO and expert parallel, topology-aware scheduling and automatic fault "
        "recovery."
    )
    met = nodes > 1 and option.fabric == "ib_ndr" and option.nic_speed_gbps >= LARGE_NIC_GBPS
    if mode == "infer":
        met = met or (nodes == 1 and nvlink)
    return text, met


def _fabric_problems(band: Band, option: NodeOption, nodes: int, gpus: int, mode: str) -> list[str]:
    """The seeds' fabric rules for a multi-node plan (they stay rules)."""
    if nodes <= 1:
        return []
    problems: list[str] = []
    bandwidth = option.inter_node_gbps
    if mode == "infer" or band == "<30B":
        if bandwidth < MEDIUM_BANDWIDTH_GBPS:
            problems.append(
                _(
                    "%(nodes)s nodes need at least %(min)s Gb/s per node between them; "
                    "it has %(has)s Gb/s"
                )
                % {"nodes": nodes, "min": MEDIUM_BANDWIDTH_GBPS, "has": bandwidth}
            )
    elif band in ("30-70B", "70-100B"):
        if bandwidth < TP_DP_BANDWIDTH_GBPS:
            problems.append(
                _(
                    "30–100B models across nodes need ≥ %(min)s Gb/s per node between "
                    "nodes; it has %(has)s Gb/s"
                )
                % {"min": TP_DP_BANDWIDTH_GBPS, "has": bandwidth}
            )
        if option.fabric not in RDMA_FABRICS:
            problems.append(
                _(
                    "30–100B models across nodes need an RDMA fabric (InfiniBand or "
                    "RoCE v2), not plain %(fabric)s"
                )
                % {"fabric": fabric_label(option.fabric)}
            )
    elif option.fabric != "ib_ndr" or option.nic_speed_gbps < LARGE_NIC_GBPS:
        problems.append(
            _(
                "100B+ models need 400 Gb/s InfiniBand NDR NICs between nodes; it has "
                "%(nics)s× %(speed)s Gb/s %(fabric)s"
            )
            % {
                "nics": option.nic_count,
                "speed": option.nic_speed_gbps,
                "fabric": fabric_label(option.fabric),
            }
        )
    if gpus >= CLOS_MIN_GPUS and option.fabric != "ib_ndr" and not problems:
        problems.append(
            _("%(gpus)s GPUs (64 or more) need InfiniBand NDR 400G; it has %(fabric)s")
            % {"gpus": gpus, "fabric": fabric_label(option.fabric)}
        )
    return problems


def _choose_ep(shape: Shape, dp: int) -> int:
    """The largest expert-parallel degree that divides both DP and the expert count."""
    if not shape.is_moe:
        return 1
    return math.gcd(dp, shape.experts) or 1


def _price(option: NodeOption, nodes: int) -> Decimal | None:
    if option.monthly_price_per_node is None:
        return None
    return Decimal(option.monthly_price_per_node) * nodes


def _layout_problems(
    option: NodeOption, shape: Shape, inp: SizingInput, tp: int, pp: int, gpus: int
) -> list[str]:
    problems: list[str] = []
    per_node = int(option.gpus_per_node)
    if gpus % (tp * pp):
        problems.append(
            _("%(gpus)s GPUs do not split into TP %(tp)s × PP %(pp)s")
            % {"gpus": gpus, "tp": tp, "pp": pp}
        )
    if tp > per_node:
        problems.append(
            _("tensor parallel %(tp)s is more than the %(per_node)s GPUs of one node")
            % {"tp": tp, "per_node": per_node}
        )
    if tp > 1 and shape.heads % tp:
        problems.append(
            _("tensor parallel %(tp)s does not divide the %(heads)s attention heads")
            % {"tp": tp, "heads": shape.heads}
        )
    if tp > 1 and inp.mode == "train" and option.intra_node not in NVLINK_KINDS:
        problems.append(
            _("tensor parallel training needs NVLink or NVSwitch inside the node; it has %(intra)s")
            % {"intra": intra_label(option.intra_node)}
        )
    if pp > shape.layers:
        problems.append(
            _("pipeline parallel %(pp)s is more than the %(layers)s layers")
            % {"pp": pp, "layers": shape.layers}
        )
    return problems


def plan_layout(
    inp: SizingInput,
    shape: Shape,
    band: Band,
    option: NodeOption,
    *,
    gpus: int,
    tp: int,
    pp: int,
    ep: int | None = None,
) -> Plan:
    """Evaluate one layout: memory per GPU, host RAM, fabric, price and time."""
    per_node = max(1, int(option.gpus_per_node))
    nodes = max(1, math.ceil(gpus / per_node))
    dp = max(1, gpus // (tp * pp))
    ep = _choose_ep(shape, dp) if ep is None else ep
    problems = list(_layout_problems(option, shape, inp, tp, pp, gpus))
    if shape.is_moe and (dp % ep or ep > shape.experts):
        problems.append(
            _("expert parallel %(ep)s must divide DP %(dp)s and at most the %(experts)s experts")
            % {"ep": ep, "dp": dp, "experts": shape.experts}
        )
    precision = precision_problem(option, inp.precision)
    if precision:
        problems.append(precision)
    memory = memory_per_gpu(inp, shape, tp=tp, pp=pp, dp=dp, ep=ep if shape.is_moe else 1)
    capacity = float(option.gpu_memory_gb)
    if memory.total > capacity:
        problems.append(
            _("%(need)s GB per GPU does not fit in the %(gpu)s's %(have)s GB")
            % {"need": fmt_gb(memory.total), "gpu": option.gpu_model, "have": fmt(capacity)}
        )
    host_needed = 0.0
    if inp.mode == "train" and inp.offload == "cpu":
        host_needed = memory.host_per_gpu * min(gpus, per_node) / (1 - HOST_RESERVE_FRACTION)
        if host_needed > option.host_ram_gb:
            problems.append(
                _("offloading needs %(need)s GB of host RAM per node; %(name)s has %(have)s GB")
                % {"need": fmt_gb(host_needed), "name": option.name, "have": option.host_ram_gb}
            )
    problems.extend(_fabric_problems(band, option, nodes, gpus, inp.mode))
    mfu = float(inp.mfu)
    rate = _compute_rate(option, inp.precision, mfu)
    days = tokens_per_s = None
    if inp.mode == "train" and inp.target_tokens_billion is not None and rate > 0:
        flops = 6 * shape.params_active * float(inp.target_tokens_billion) * BILLION
        days = flops / (gpus * rate * 1e12 * SECONDS_PER_DAY)
    if inp.mode == "infer":
        bandwidth = memory_bandwidth(option)
        replicas = max(1, dp)
        compute_cap = gpus * rate * 1e12 / (2 * shape.params_active) if rate > 0 else float("inf")
        if bandwidth > 0:
            step = pp * (memory.model_states + memory.kv_cache) * GB / (bandwidth * 1e12)
            bandwidth_cap = replicas * inp.concurrency / step
        else:
            bandwidth_cap = float("inf")
        best = min(compute_cap, bandwidth_cap)
        tokens_per_s = None if math.isinf(best) else best
    rule, met = _band_rule(band, option, nodes, inp.mode)
    return Plan(
        option=option,
        gpus=gpus,
        nodes=nodes,
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep if shape.is_moe else 1,
        zero=inp.zero_stage if inp.mode == "train" else 0,
        offload=inp.offload if inp.mode == "train" else "none",
        memory=memory,
        gpu_memory_gb=capacity,
        host_needed_gb=host_needed,
        monthly_total=_price(option, nodes),
        sustained_tflops=rate,
        train_days=days,
        tokens_per_s=tokens_per_s,
        band_rule=rule,
        band_rule_met=met,
        problems=tuple(problems),
    )


def _gpus_for_deadline(inp: SizingInput, shape: Shape, option: NodeOption) -> int:
    if inp.mode != "train" or inp.target_days is None or inp.target_tokens_billion is None:
        return 1
    rate = _compute_rate(option, inp.precision, float(inp.mfu))
    if rate <= 0:
        return 1
    flops = 6 * shape.params_active * float(inp.target_tokens_billion) * BILLION
    return max(1, math.ceil(flops / (rate * 1e12 * float(inp.target_days) * SECONDS_PER_DAY)))


def search_option(inp: SizingInput, shape: Shape, band: Band, option: NodeOption) -> OptionOutcome:
    """The smallest whole-node plan on this node type that runs (lowest TP × PP first)."""
    per_node = int(option.gpus_per_node)
    if per_node <= 0 or float(option.gpu_memory_gb) <= 0:
        return OptionOutcome(option, None, (_("it has no GPUs"),))
    precision = precision_problem(option, inp.precision)
    if precision:
        return OptionOutcome(option, None, (precision,))
    combos = [
        (tp, pp)
        for tp in TP_CHOICES
        for pp in PP_CHOICES
        if tp <= per_node
        and pp <= shape.layers
        and (tp == 1 or shape.heads % tp == 0)
        and (tp == 1 or inp.mode == "infer" or option.intra_node in NVLINK_KINDS)
    ]
    combos.sort(key=lambda c: (c[0] * c[1], c[1], c[0]))
    capacity = float(option.gpu_memory_gb)
    # The part of the memory that no amount of data parallelism shrinks: with it alone
    # over the GPU's memory, a layout never fits.
    viable = []
    for tp, pp in combos:
        floor = memory_per_gpu(inp, shape, tp=tp, pp=pp, dp=1_000_000_000, ep=1)
        if shape.is_moe and inp.mode == "train":
            floor = memory_per_gpu(
                inp, shape, tp=tp, pp=pp, dp=1_000_000_000 * shape.experts, ep=shape.experts
            )
        if floor.total <= capacity:
            viable.append((tp, pp))
    if not viable:
        smallest = (
            min(
                memory_per_gpu(inp, shape, tp=tp, pp=pp, dp=1_000_000_000, ep=1).total
                for tp, pp in combos
            )
            if combos
            else float("inf")
        )
        return OptionOutcome(
            option,
            None,
            (
                _(
                    "even split as far as it goes, each GPU would need at least %(need)s GB; "
                    "the %(gpu)s has %(have)s GB"
                )
                % {"need": fmt_gb(smallest), "gpu": option.gpu_model, "have": fmt(capacity)},
            ),
        )
    need_gpus = _gpus_for_deadline(inp, shape, option)
    first_nodes = max(1, math.ceil(need_gpus / per_node))
    last_nodes = MAX_NODES
    if inp.mode == "infer":  # more replicas never lower the memory per GPU
        last_nodes = max(first_nodes, math.ceil(max(tp * pp for tp, pp in viable) / per_node))
    last: Plan | None = None
    for nodes in range(first_nodes, last_nodes + 1):
        gpus = nodes * per_node
        for tp, pp in viable:
            if gpus % (tp * pp):
                continue
            plan = plan_layout(inp, shape, band, option, gpus=gpus, tp=tp, pp=pp)
            if plan.fits:
                return OptionOutcome(option, plan)
            last = plan
            if _fabric_problems(band, option, nodes, gpus, inp.mode):
                # More nodes will not mend the fabric.
                return OptionOutcome(option, None, plan.problems)
    if last is None:
        return OptionOutcome(option, None, (_("no layout of whole nodes fits"),))
    return OptionOutcome(option, None, last.problems)


# --- The seeds' rule of thumb -------------------------------------------------------------
