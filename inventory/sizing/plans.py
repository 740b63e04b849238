"""One layout on one node type (``plan_layout``) and the search for the smallest one
that runs (``search_option``): memory, host RAM, the seeds' fabric and band rules, price
and time, and the frameworks that run it.

Compute: 6 × N × D FLOPs to train (Kaplan et al. 2020), 2 × N per generated token, over
the measured GEMM reference × an MFU; MoE counts active parameters. Training time adds
the communication that the compute cannot hide (``inventory.sizing.network``).
Inference: the replicas share the requested concurrent sequences; a decode step reads
each GPU's weights once (for an MoE model only the experts the batch's tokens are routed
to) and its sequences' KV cache, at the GPU's memory bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from core.i18n_hook import _
from inventory.sizing.formatting import BILLION, GIB, fabric_label, fmt, fmt_gb, intra_label
from inventory.sizing.hardware import (
    NodeOption,
    gpu_architecture,
    memory_bandwidth,
    precision_problem,
    reference_tflops,
)
from inventory.sizing.inputs import SizingInput
from inventory.sizing.memory import (
    HOST_RESERVE_FRACTION,
    WEIGHT_BYTES,
    Memory,
    memory_per_gpu,
    sequences_per_replica,
    state_bytes,
)
from inventory.sizing.network import StepTime, step_time
from inventory.sizing.shape import Band, Shape, band_rule

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
MEMORY_WARNING_SHARE = 0.90  # above this share of a GPU's memory a plan is flagged


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
    zero: int | None  # the ZeRO stage that acts; None where it does nothing (DP 1)
    offload: str
    memory: Memory
    gpu_memory_gib: float
    host_needed_gb: float  # per node
    monthly_total: Decimal | None
    sustained_tflops: float  # per GPU: reference × MFU
    train_days: float | None
    tokens_per_s: float | None  # inference estimate
    band_rule: str
    band_rule_met: bool
    problems: tuple[str, ...] = ()
    zero_requested: int = 0
    frameworks: tuple[str, ...] = ()
    step: StepTime | None = None  # training: one micro-batch's compute and communication
    sequences_per_replica: int = 0  # inference
    weights_read_gib: float = 0.0  # inference: weights one GPU reads per decode step

    @property
    def fits(self) -> bool:
        return not self.problems

    @property
    def layout(self) -> str:
        text = f"TP {self.tp} × PP {self.pp} × DP {self.dp}"
        return text + (f" × EP {self.ep}" if self.ep > 1 else "")

    @property
    def memory_share(self) -> float:
        return self.memory.total / self.gpu_memory_gib if self.gpu_memory_gib else 0.0

    @property
    def memory_share_percent(self) -> float:
        return 100 * self.memory_share

    @property
    def memory_warning(self) -> bool:
        """Over 90% of the GPU's memory: little room for a longer sequence or a spike."""
        return self.memory_share > MEMORY_WARNING_SHARE

    @property
    def zero_label(self) -> str:
        """ "ZeRO-3", or "—" where ZeRO does nothing (data-parallel degree 1)."""
        return "—" if self.zero is None else f"ZeRO-{self.zero}"

    @property
    def network_bound(self) -> bool:
        """The data-parallel traffic across nodes takes longer than the compute."""
        return self.step is not None and self.step.across_nodes and self.step.bound

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
    rule = band_rule(band)
    if rule == "data_parallel":
        return _("Under 30B: one 8-GPU node, data parallel."), nodes == 1
    if rule == "tensor_data_parallel":
        if band == "70-100B":
            text = _(
                "70–100B: the 30–70B rule applies below 100B: full NVLink inside the node, "
                "≥ 200 Gb/s between nodes, tensor + data parallel."
            )
        else:
            text = _(
                "30–70B: full NVLink inside the node, ≥ 200 Gb/s between nodes, tensor + "
                "data parallel."
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
    if mode == "infer" or band_rule(band) == "data_parallel":
        if bandwidth < MEDIUM_BANDWIDTH_GBPS:
            problems.append(
                _(
                    "%(nodes)s nodes need at least %(min)s Gb/s per node between them; "
                    "it has %(has)s Gb/s"
                )
                % {"nodes": nodes, "min": MEDIUM_BANDWIDTH_GBPS, "has": bandwidth}
            )
    elif band_rule(band) == "tensor_data_parallel":
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
    capacity = float(option.gpu_memory_gib)
    if memory.total > capacity:
        problems.append(
            _("%(need)s GiB per GPU does not fit in the %(gpu)s's %(have)s GiB")
            % {"need": fmt_gb(memory.total), "gpu": option.gpu_model, "have": fmt(capacity)}
        )
    host_needed = 0.0
    if inp.mode == "train" and inp.offload == "cpu":
        host_needed = memory.host_per_gpu * min(gpus, per_node) / (1 - HOST_RESERVE_FRACTION)
        if host_needed > option.host_ram_gb:
            problems.append(
                _("offloading needs %(need)s GiB of host RAM per node; %(name)s has %(have)s GiB")
                % {"need": fmt_gb(host_needed), "name": option.name, "have": option.host_ram_gb}
            )
    problems.extend(_fabric_problems(band, option, nodes, gpus, inp.mode))
    mfu = float(inp.mfu)
    rate = _compute_rate(option, inp.precision, mfu)
    days = tokens_per_s = None
    step: StepTime | None = None
    seqs = 0
    weights_read = 0.0
    zero: int | None = None
    if inp.mode == "train":
        w = state_bytes(inp.precision, inp.optimizer)[0]
        ep_used = ep if shape.is_moe else 1
        step = step_time(
            option=option,
            nodes=nodes,
            tp=tp,
            pp=pp,
            dp=dp,
            ep=ep_used,
            zero=inp.zero_stage,
            w=w,
            dense_shard=shape.dense_params / (tp * pp),
            expert_shard=shape.expert_params / (tp * pp * max(1, ep_used)),
            active_params=shape.params_active,
            layers=shape.layers,
            hidden=shape.hidden,
            experts_active=shape.experts_active or 1,
            tokens=inp.seq_len * inp.micro_batch,
            recompute=inp.checkpointing,
            rate_tflops=rate,
        )
        # ZeRO partitions over the data-parallel GPUs: with one there is nothing to
        # partition (ZeRO-Offload still moves the states to the host).
        zero = inp.zero_stage if dp > 1 or inp.offload != "none" else None
    if inp.mode == "train" and inp.target_tokens_billion is not None and rate > 0:
        assert step is not None
        tokens_per_step = dp * inp.seq_len * inp.micro_batch
        steps = float(inp.target_tokens_billion) * BILLION / tokens_per_step
        days = steps * step.total / SECONDS_PER_DAY
    if inp.mode == "infer":
        seqs = sequences_per_replica(inp, dp)
        weights_read = _weights_read_per_gpu(inp, shape, tp=tp, pp=pp, seqs=seqs)
        bandwidth = memory_bandwidth(option)
        compute_cap = gpus * rate * 1e12 / (2 * shape.params_active) if rate > 0 else float("inf")
        if bandwidth > 0:
            decode = pp * (weights_read + memory.kv_cache) * GIB / (bandwidth * 1e12)
            # Every replica steps at once; together they serve the requested sequences.
            bandwidth_cap = inp.concurrency / decode
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
        zero=zero,
        offload=inp.offload if inp.mode == "train" else "none",
        memory=memory,
        gpu_memory_gib=capacity,
        host_needed_gb=host_needed,
        monthly_total=_price(option, nodes),
        sustained_tflops=rate,
        train_days=days,
        tokens_per_s=tokens_per_s,
        band_rule=rule,
        band_rule_met=met,
        problems=tuple(problems),
        zero_requested=inp.zero_stage if inp.mode == "train" else 0,
        frameworks=frameworks_for(
            inp, tp=tp, pp=pp, dp=dp, ep=ep if shape.is_moe else 1, zero=zero
        ),
        step=step,
        sequences_per_replica=seqs,
        weights_read_gib=weights_read,
    )


def _weights_read_per_gpu(inp: SizingInput, shape: Shape, *, tp: int, pp: int, seqs: int) -> float:
    """GiB of weights one GPU reads per decode step: all of its shard for a dense model;
    for an MoE model the dense part and only the experts that the batch's ``seqs`` tokens
    are routed to (with uniform routing a share 1 − (1 − k/E)^seqs of them)."""
    nbytes = WEIGHT_BYTES[inp.precision]
    params = shape.params_total
    if shape.is_moe and shape.expert_params:
        touched = 1 - (1 - shape.experts_active / shape.experts) ** seqs
        params = shape.dense_params + shape.expert_params * touched
    return params * nbytes / (tp * pp) / GIB


def frameworks_for(
    inp: SizingInput, *, tp: int, pp: int, dp: int, ep: int, zero: int | None
) -> tuple[str, ...]:
    """The frameworks that run this layout as planned (product names, not translated)."""
    if inp.mode == "infer":
        return ("vLLM", "SGLang")
    if inp.offload == "nvme":
        return ("DeepSpeed ZeRO-Infinity",)
    if inp.offload == "cpu":
        return ("DeepSpeed ZeRO-Offload",)
    names: list[str] = []
    if tp == 1 and pp == 1 and ep == 1:
        if dp == 1 or zero is None:
            return ("PyTorch",)
        if zero == 0:
            return ("PyTorch DDP", "DeepSpeed", "PyTorch FSDP (NO_SHARD)")
        if zero == 1:
            return ("DeepSpeed ZeRO-1", "Megatron-LM / NeMo (distributed optimizer)")
        if zero == 2:
            return ("DeepSpeed ZeRO-2", "PyTorch FSDP (SHARD_GRAD_OP)")
        return ("DeepSpeed ZeRO-3", "PyTorch FSDP (FULL_SHARD)")
    # Model parallel: Megatron-LM / NeMo run TP × PP (× EP) with a ZeRO-1-like
    # distributed optimizer; ZeRO-2/3 with TP is Megatron-FSDP or FSDP2 + TP (torchtitan);
    # DeepSpeed's pipeline engine takes ZeRO-1 only.
    if zero is None or zero <= 1:
        names.append("Megatron-LM / NeMo")
        if ep == 1:
            names.append("DeepSpeed (Megatron-DeepSpeed)")
    else:
        names.append("Megatron-LM / NeMo (Megatron-FSDP)")
        names.append("PyTorch FSDP2 + TP/PP (torchtitan)")
        if pp == 1 and ep == 1:
            names.append("DeepSpeed (Megatron-DeepSpeed)")
    if ep > 1:
        names.append("DeepSpeed-MoE" if zero is not None and zero <= 2 and pp == 1 else "")
    return tuple(n for n in names if n)


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
    if per_node <= 0 or float(option.gpu_memory_gib) <= 0:
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
    capacity = float(option.gpu_memory_gib)
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
                    "even split as far as it goes, each GPU would need at least %(need)s GiB; "
                    "the %(gpu)s has %(have)s GiB"
                )
                % {"need": fmt_gb(smallest), "gpu": option.gpu_model, "have": fmt(capacity)},
            ),
        )
    need_gpus = _gpus_for_deadline(inp, shape, option)
    first_nodes = max(1, math.ceil(need_gpus / per_node))
    last_nodes = MAX_NODES
    if inp.mode == "infer":
        # More replicas lower the KV cache per GPU (they share the sequences) down to one
        # sequence each; beyond that they never lower the memory per GPU.
        widest = max(tp * pp for tp, pp in viable)
        last_nodes = min(
            MAX_NODES, max(first_nodes, math.ceil(widest * inp.concurrency / per_node))
        )
    last: Plan | None = None
    late: Plan | None = None  # fits, but misses the deadline
    nodes = first_nodes
    while nodes <= last_nodes:
        gpus = nodes * per_node
        fitting: list[Plan] = []
        for tp, pp in viable:
            if gpus % (tp * pp):
                continue
            plan = plan_layout(inp, shape, band, option, gpus=gpus, tp=tp, pp=pp)
            if plan.fits:
                fitting.append(plan)
                if nodes == 1 or inp.mode == "infer":
                    break  # the smallest split that fits (the list is in that order)
                continue
            last = plan
            if _fabric_problems(band, option, nodes, gpus, inp.mode):
                # More nodes will not mend the fabric.
                return OptionOutcome(option, None, plan.problems)
        if fitting:
            target = float(inp.target_days) if inp.target_days is not None else None
            best = min(fitting, key=lambda plan: _multi_node_key(plan, target))
            if target is None or best.train_days is None or best.train_days <= target:
                return OptionOutcome(option, best)
            # Communication makes it late: more nodes, as many as the shortfall says.
            late = best
            nodes = max(nodes + 1, math.ceil(nodes * best.train_days / target))
            continue
        nodes += 1
    if late is not None:
        return OptionOutcome(option, late)  # the fastest that fits; its days say it is late
    if last is None:
        return OptionOutcome(option, None, (_("no layout of whole nodes fits"),))
    return OptionOutcome(option, None, last.problems)


def _multi_node_key(plan: Plan, target_days: float | None) -> tuple[bool, bool, int, int, float]:
    """Among the layouts that fit on the same nodes: not network-bound first, then on
    time; for ZeRO-3 across nodes tensor parallel inside the node, as wide as it goes,
    and no pipeline (TP's traffic stays on NVLink, each GPU re-gathers 1/TP of the
    weights every micro-batch, and ZeRO keeps sharding across the nodes); otherwise the
    smallest split; then the fastest step per token."""
    late = target_days is not None and plan.train_days is not None and plan.train_days > target_days
    per_token = plan.step.total / max(1, plan.dp) if plan.step is not None else 0.0
    if plan.zero_requested == 3:
        return (plan.network_bound, late, -plan.tp, plan.pp, per_token)
    return (plan.network_bound, late, plan.tp * plan.pp, plan.pp, per_token)
