"""The sizing wizard's calculator: pure functions, no Django.

A model (a known architecture or a size and shape), how it is trained or served, and
the node types on offer (``NodeOption``, built by the caller from the inventory) go in;
plans that can run come out: TP × PP × DP (× EP), nodes, memory per GPU part by part
with its formula, fabric, the seeds' band rule, price and time. The page
(portal.views.wizard) and the command (``manage.py size_model``) both call ``size()``
or ``evaluate()`` here.

Memory per GPU, training (bytes; Ψ = parameters held by one model-parallel shard):
- model states, ZeRO (Rajbhandari et al. 2019, "ZeRO: Memory Optimizations Toward
  Training Trillion Parameter Models", §3 and Fig. 1): weights w, gradients g and
  optimizer states K bytes per parameter; stage 0 (w+g+K)Ψ, stage 1 (w+g)Ψ + KΨ/N_d,
  stage 2 wΨ + (g+K)Ψ/N_d, stage 3 (w+g+K)Ψ/N_d. Mixed-precision Adam: w=2, g=2, K=12.
  Tensor and pipeline parallelism split Ψ by TP × PP first (Megatron-LM); MoE experts are
  split by the expert-parallel degree, and ZeRO shards them over DP ÷ EP.
- offload (ZeRO-Offload, Ren et al. 2021; ZeRO-Infinity, Rajbhandari et al. 2021):
  gradients and optimizer states go to host RAM (or NVMe), the weights stay on the GPU.
- activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models", §4): per layer s·b·h·(34 + 5·a·s/h) bytes with 16-bit
  activations, ÷ t with tensor + sequence parallelism; FlashAttention keeps no s×s
  scores, which removes the 5·a·s/h term; with full activation checkpointing a layer
  keeps only its input, 2·s·b·h/t, and one layer is recomputed at a time. With 1F1B
  pipelining the first stage holds p micro-batches of L/p layers: L layers in all.
- inference: weights × bytes per parameter; KV cache = 2 × layers × KV heads × head dim
  × bytes × context × concurrent sequences (grouped-query attention: KV heads, not
  attention heads).
- headroom: a fixed 2 GB for the CUDA context, cuBLAS workspace and NCCL buffers plus
  10% of the rest for allocator fragmentation (our estimate).

Compute: 6 × N × D FLOPs to train (Kaplan et al. 2020), 2 × N per generated token,
over the measured bf16 GEMM reference of VALIDATION.md × an MFU (assumed 40% unless the
customer says otherwise); MoE counts active parameters.

The seeds' rule of thumb (parameters × bytes × 3.5, ZeRO-3 "cuts 4–8×") is shown beside
the real estimate, never used to decide a plan. The seeds' fabric rules stay rules.

Every user-facing string goes through ``_()`` from billing.i18n; numbers are formatted
here and passed in as named placeholders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Literal

from billing.i18n import _, gettext_noop, ngettext
from billing.sizing_data import (
    ARCHITECTURES,
    BF16_ARCHITECTURES,
    FP8_ARCHITECTURES,
    INT_WEIGHT_ARCHITECTURES,
    Architecture,
    gpu_architecture,
    gpu_facts,
)

Band = Literal["<30B", "30-70B", "70-100B", ">=100B"]
Source = Literal["seeds", "estimate", "paper"]

MODES: tuple[str, ...] = ("train", "infer")
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8")  # training
INFER_PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8", "int8", "int4", "fp32")
OPTIMIZERS: tuple[str, ...] = ("adamw", "sgd", "adafactor", "adam8bit")
ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)
OFFLOADS: tuple[str, ...] = ("none", "cpu", "nvme")

GB = 1e9
BILLION = 1e9
SECONDS_PER_DAY = 86_400

# Bytes per parameter of the weights at each precision (weights-only quantisation keeps
# one fp16 scale per group of 128 weights: AWQ/GPTQ defaults).
WEIGHT_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0 + 2 / 128,
    "int4": 0.5 + 2 / 128,
}
# The seeds' rule of thumb counts 1, 2 or 4 bytes.
RULE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
RULE_FACTOR = Decimal("3.5")
RULE_ZERO_DIVISOR: dict[int, Decimal] = {
    0: Decimal(1),
    1: Decimal("1.5"),
    2: Decimal(2),
    3: Decimal(4),
}
RULE_ZERO3_OPTIMISTIC = Decimal(8)

HEADROOM_FIXED_GB = 2.0  # CUDA context + cuBLAS workspace + NCCL buffers (estimate)
HEADROOM_FRACTION = 0.10  # allocator fragmentation (estimate)
HOST_RESERVE_FRACTION = 0.10  # host RAM kept for the OS, dataloaders, pinned buffers
DEFAULT_MFU = Decimal("0.40")
INFER_CHUNK_TOKENS = 8192  # prefill chunk (vLLM's default max batched tokens)
DEFAULT_VOCAB = 128_256  # estimated vocabulary for a custom shape (Llama-3's)
MAX_NODES = 1024

MAX_PARAMS_BILLION = Decimal("20000")
MAX_TARGET_DAYS = Decimal("3650")
MAX_SEQ = 1_048_576
MAX_BATCH = 4096
MAX_CONCURRENCY = 100_000

BAND_30B = Decimal("30")
BAND_70B = Decimal("70")
BAND_100B = Decimal("100")
MEDIUM_BANDWIDTH_GBPS = 100  # estimate: the seeds' "medium bandwidth" for < 30B
TP_DP_BANDWIDTH_GBPS = 200  # seeds: 30–70B, ≥ 200 Gb/s between nodes
LARGE_NIC_GBPS = 400  # seeds: 100B+, 400 Gb/s between nodes
ROCE_MAX_GPUS = 32  # seeds: up to 32 GPUs RoCE v2 is acceptable (leaf-spine)
CLOS_MIN_GPUS = 64  # seeds: 64 GPUs and more need IB NDR 400G in a 3-tier CLOS
NVLINK_KINDS = frozenset({"nvswitch", "nvlink"})
RDMA_FABRICS = frozenset({"ib_ndr", "ib_hdr", "roce_v2"})
TP_CHOICES = (1, 2, 4, 8)
PP_CHOICES = (1, 2, 4, 8, 16, 32, 64)

FABRIC_LABELS: dict[str, str] = {
    "ib_ndr": gettext_noop("InfiniBand NDR 400G"),
    "ib_hdr": gettext_noop("InfiniBand HDR 200G"),
    "roce_v2": gettext_noop("RoCE v2"),
    "ethernet": gettext_noop("Ethernet"),
}
INTRA_LABELS: dict[str, str] = {
    "nvswitch": gettext_noop("NVLink with NVSwitch"),
    "nvlink": gettext_noop("NVLink"),
    "pcie": gettext_noop("PCIe only"),
}
OPTIMIZER_LABELS: dict[str, str] = {
    "adamw": gettext_noop("Adam/AdamW"),
    "sgd": gettext_noop("SGD with momentum"),
    "adafactor": gettext_noop("Adafactor"),
    "adam8bit": gettext_noop("8-bit Adam"),
}

GB_PLACES = Decimal("0.01")


class SizingError(ValueError):
    """Input the wizard cannot size; ``field`` names the input field that is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class SizingInput:
    """What the customer tells the wizard. Both targets (tokens and days), or neither."""

    params_billion: Decimal | None = None
    precision: str = "bf16"
    optimizer: str = "adamw"
    zero_stage: int = 0
    target_tokens_billion: Decimal | None = None
    target_days: Decimal | None = None
    mode: str = "train"
    arch: str = ""
    seq_len: int = 4096
    micro_batch: int = 1
    checkpointing: bool = True
    flash_attention: bool = True
    offload: str = "none"
    context: int = 8192
    concurrency: int = 1
    mfu: Decimal = DEFAULT_MFU
    # A custom shape (optional; estimated from the size when left empty).
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    active_params_billion: Decimal | None = None
    experts: int | None = None
    experts_active: int | None = None


@dataclass(frozen=True)
class NodeOption:
    """A node type as the calculator sees it (the caller builds it from the inventory).

    ``gpu_memory_gb`` and ``bf16_tflops`` (the measured GEMM reference) are per GPU;
    ``host_ram_gb`` is the node's RAM; ``monthly_price_per_node`` is the list price of
    one node for one month, or None when there is no price to compare.
    """

    code: str
    name: str
    gpu_model: str
    gpus_per_node: int
    gpu_memory_gb: Decimal | int
    bf16_tflops: Decimal
    intra_node: str
    nic_count: int
    nic_speed_gbps: int
    fabric: str
    monthly_price_per_node: Decimal | None = None
    host_ram_gb: int = 0
    memory_bandwidth_tbs: Decimal | float = 0

    @property
    def inter_node_gbps(self) -> int:
        """Per-node bandwidth to the fabric: NICs × speed."""
        return self.nic_count * self.nic_speed_gbps


@dataclass(frozen=True)
class Note:
    """One line of explanation and where its rule comes from."""

    text: str
    source: Source

    def __str__(self) -> str:
        if self.source == "seeds":
            label = _("seeds")
        elif self.source == "paper":
            label = _("published formula")
        else:
            label = _("our estimate")
        # Translators: a note followed by where its rule comes from ("seeds" or "our estimate").
        return _("%(text)s (%(source)s)") % {"text": self.text, "source": label}


@dataclass(frozen=True)
class Shape:
    """The model as sized: parameters (total for memory, active for compute) and shape."""

    name: str
    arch: str
    params_total: float
    params_active: float
    expert_params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    experts: int
    experts_active: int
    kv_elems: int
    estimated: bool  # shape estimated from the parameter count

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def total_billions(self) -> str:
        return _billions(self.params_total)

    @property
    def active_billions(self) -> str:
        return _billions(self.params_active)

    @property
    def dense_params(self) -> float:
        return self.params_total - self.expert_params


@dataclass(frozen=True)
class Memory:
    """Memory per GPU in GB (10^9 bytes)."""

    model_states: float
    activations: float
    kv_cache: float
    headroom: float
    host_per_gpu: float = 0.0  # offloaded to host RAM (or NVMe)

    @property
    def total(self) -> float:
        return self.model_states + self.activations + self.kv_cache + self.headroom

    def as_dict(self) -> dict[str, float]:
        return {
            "model_states": _r(self.model_states),
            "activations": _r(self.activations),
            "kv_cache": _r(self.kv_cache),
            "headroom": _r(self.headroom),
            "total": _r(self.total),
        }


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
class RuleOfThumb:
    """The seeds' estimate: parameters × bytes × 3.5, ZeRO-3 ÷ 4–8."""

    total_gb: Decimal
    needed_gb: Decimal
    range_gb: tuple[Decimal, Decimal] | None
    formula: str


@dataclass(frozen=True)
class OptionOutcome:
    """What one node type gives: its best plan, or why it has none."""

    option: NodeOption
    plan: Plan | None
    problems: tuple[str, ...] = ()

    @property
    def qualifies(self) -> bool:
        return self.plan is not None


@dataclass
class SizingResult:
    """The wizard's answer. ``plans`` holds every node type's smallest plan that runs,
    cheapest first; ``cheapest`` and ``fastest`` point into it (None when empty)."""

    input: SizingInput
    shape: Shape
    band: Band
    rule: RuleOfThumb | None
    rule_comparison: str
    memory_lines: list[Note]
    compute_lines: list[Note]
    plans: list[Plan]
    cheapest: Plan | None
    fastest: Plan | None
    outcomes: list[OptionOutcome]
    reason_if_none: str
    what_would_fit: str
    parallelism: str
    fabric: str
    topology: str
    notes: list[Note] = field(default_factory=list)

    @property
    def recommended(self) -> NodeOption | None:
        return self.cheapest.option if self.cheapest else None

    @property
    def node_count(self) -> int:
        return self.cheapest.nodes if self.cheapest else 0

    @property
    def gpu_count(self) -> int:
        return self.cheapest.gpus if self.cheapest else 0

    @property
    def monthly_total(self) -> Decimal | None:
        return self.cheapest.monthly_total if self.cheapest else None

    @property
    def fastest_differs(self) -> bool:
        return (
            self.fastest is not None
            and self.cheapest is not None
            and (self.fastest.option.code, self.fastest.gpus)
            != (self.cheapest.option.code, self.cheapest.gpus)
        )

    @property
    def note_lines(self) -> list[str]:
        return [str(n) for n in self.notes]


# --- Formatting -------------------------------------------------------------------------


def _r(value: float, places: int = 2) -> float:
    return round(value + 0.0, places)


def fmt(value: Decimal | int | float, places: Decimal = GB_PLACES) -> str:
    """1225.50 -> "1,225.5"; 490.00 -> "490"."""
    if isinstance(value, float):
        value = Decimal(repr(value))
    q = Decimal(value).quantize(places, rounding=ROUND_HALF_UP).normalize()
    if q == 0:
        q = Decimal(0)
    return format(q, ",f")


def fmt_gb(value: float) -> str:
    """GB with one decimal under 100, none above: "31.4", "1,129"."""
    return fmt(value, Decimal("0.1") if abs(value) < 100 else Decimal(1))


def fmt_sci(value: float | Decimal) -> str:
    """4.2E+22 -> "4.2 × 10^22"."""
    mantissa, exponent = f"{float(value):.2e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10^{int(exponent)}"


def _billions(count: float) -> str:
    return fmt(count / BILLION, Decimal("0.1"))


def _percent(fraction: Decimal | float) -> str:
    """0.9 -> "90%"."""
    return _("%(number)s%%") % {"number": fmt(Decimal(str(fraction)) * 100)}


def _fabric_label(code: str) -> str:
    label = FABRIC_LABELS.get(code)
    return code if label is None else _(label)


def _intra_label(code: str) -> str:
    label = INTRA_LABELS.get(code)
    return code if label is None else _(label)


def _then(first: str, second: str) -> str:
    # Translators: two sentences one after the other; drop the space where the language
    # does not put one between sentences.
    return _("%(first)s %(second)s") % {"first": first, "second": second}


def _percent_range(low: Decimal, high: Decimal) -> str:
    return _("%(low)s–%(high)s%%") % {"low": fmt(low * 100), "high": fmt(high * 100)}


def _gb(value: Decimal) -> Decimal:
    return value.quantize(GB_PLACES, rounding=ROUND_HALF_UP)


# --- Validation -------------------------------------------------------------------------


def _not_a_number(field_name: str) -> str:
    if field_name == "params_billion":
        return _("Model size must be a number.")
    if field_name == "target_tokens_billion":
        return _("Target tokens must be a number.")
    if field_name == "target_days":
        return _("Target days must be a number.")
    return _("Enter a number.")


def _not_finite(field_name: str) -> str:
    if field_name == "params_billion":
        return _("Model size must be a finite number.")
    if field_name == "target_tokens_billion":
        return _("Target tokens must be a finite number.")
    if field_name == "target_days":
        return _("Target days must be a finite number.")
    return _("Enter a finite number.")


def _decimal(value: object, field_name: str) -> Decimal:
    if isinstance(value, bool):
        raise SizingError(field_name, _not_a_number(field_name))
    try:
        if isinstance(value, Decimal):
            number = value
        elif isinstance(value, int):
            number = Decimal(value)
        elif isinstance(value, float | str):
            number = Decimal(str(value).strip())
        else:
            raise SizingError(field_name, _not_a_number(field_name))
    except InvalidOperation as exc:
        raise SizingError(field_name, _not_a_number(field_name)) from exc
    if not number.is_finite():
        raise SizingError(field_name, _not_finite(field_name))
    return number


def _whole(value: object, field_name: str, low: int, high: int) -> int:
    number = _decimal(value, field_name)
    if number != number.to_integral_value() or not low <= number <= high:
        raise SizingError(
            field_name,
            _("Enter a whole number from %(low)s to %(high)s.")
            % {"low": fmt(low), "high": fmt(high)},
        )
    return int(number)


def _optional_whole(value: object, field_name: str, low: int, high: int) -> int | None:
    return None if value in (None, "") else _whole(value, field_name, low, high)


def validate(inp: SizingInput) -> SizingInput:
    """Check the input and return it with numbers normalised; raise SizingError."""
    if inp.mode not in MODES:
        raise SizingError("mode", _("Choose training or inference."))
    arch = (inp.arch or "").strip()
    if arch and arch not in ARCHITECTURES:
        raise SizingError(
            "arch",
            _("Unknown architecture “%(value)s”: choose one of %(choices)s.")
            % {"value": arch, "choices": ", ".join(ARCHITECTURES)},
        )
    params: Decimal | None = None
    if inp.params_billion is not None and inp.params_billion != "":
        params = _decimal(inp.params_billion, "params_billion")
    if not arch:
        if params is None:
            raise SizingError(
                "params_billion", _("Give the model size, or choose a known architecture.")
            )
        if params <= 0:
            raise SizingError(
                "params_billion", _("Model size must be more than 0 billion parameters.")
            )
        if params > MAX_PARAMS_BILLION:
            raise SizingError(
                "params_billion",
                _(
                    "Model size must be at most %(max)s billion (20T) parameters; "
                    "%(size)s billion is beyond what this wizard can size."
                )
                % {"max": fmt(MAX_PARAMS_BILLION), "size": fmt(params)},
            )
    choices = PRECISIONS if inp.mode == "train" else INFER_PRECISIONS
    if inp.precision not in choices:
        raise SizingError(
            "precision",
            _("Unknown precision “%(value)s”: choose one of %(choices)s.")
            % {"value": inp.precision, "choices": ", ".join(choices)},
        )
    if inp.optimizer not in OPTIMIZERS:
        raise SizingError(
            "optimizer",
            _("Unknown optimizer “%(value)s”: choose one of %(choices)s.")
            % {"value": inp.optimizer, "choices": ", ".join(OPTIMIZERS)},
        )
    stage = inp.zero_stage
    if isinstance(stage, str) and stage.strip().isdigit():
        stage = int(stage.strip())
    if isinstance(stage, bool) or not isinstance(stage, int) or stage not in ZERO_STAGES:
        raise SizingError("zero_stage", _("ZeRO stage must be 0, 1, 2 or 3."))
    offload = inp.offload or "none"
    if offload not in OFFLOADS:
        raise SizingError(
            "offload",
            _("Unknown offload “%(value)s”: choose one of %(choices)s.")
            % {"value": offload, "choices": ", ".join(OFFLOADS)},
        )
    if inp.mode == "train" and offload != "none" and stage == 0:
        raise SizingError(
            "offload",
            _("Offloading optimizer states needs ZeRO stage 1, 2 or 3 (ZeRO-Offload)."),
        )
    seq = _whole(inp.seq_len, "seq_len", 1, MAX_SEQ)
    micro = _whole(inp.micro_batch, "micro_batch", 1, MAX_BATCH)
    context = _whole(inp.context, "context", 1, MAX_SEQ)
    concurrency = _whole(inp.concurrency, "concurrency", 1, MAX_CONCURRENCY)
    mfu = _decimal(inp.mfu, "mfu")
    if not Decimal("0.01") <= mfu <= 1:
        raise SizingError("mfu", _("MFU must be between 0.01 and 1 (1%–100%)."))

    tokens = days = None
    if inp.target_tokens_billion not in (None, ""):
        tokens = _decimal(inp.target_tokens_billion, "target_tokens_billion")
        if tokens <= 0:
            raise SizingError(
                "target_tokens_billion", _("Target tokens must be more than 0 billion.")
            )
    if inp.target_days not in (None, ""):
        days = _decimal(inp.target_days, "target_days")
        if days <= 0:
            raise SizingError("target_days", _("Target days must be more than 0."))
        if days > MAX_TARGET_DAYS:
            raise SizingError(
                "target_days",
                _("Target days must be at most %(max)s (ten years).")
                % {"max": fmt(MAX_TARGET_DAYS)},
            )
    if tokens is not None and days is None:
        raise SizingError(
            "target_days",
            _("Give the number of days as well as the target tokens, or leave both empty."),
        )
    if days is not None and tokens is None:
        raise SizingError(
            "target_tokens_billion",
            _("Give the target tokens as well as the number of days, or leave both empty."),
        )
    active = None
    if inp.active_params_billion not in (None, ""):
        active = _decimal(inp.active_params_billion, "active_params_billion")
        if active <= 0 or (params is not None and active > params):
            raise SizingError(
                "active_params_billion",
                _("Active parameters must be more than 0 and at most the model size."),
            )
    experts = _optional_whole(inp.experts, "experts", 1, 4096)
    experts_active = _optional_whole(inp.experts_active, "experts_active", 1, 4096)
    if experts and experts_active and experts_active > experts:
        raise SizingError("experts_active", _("Active experts cannot be more than the experts."))
    layers = _optional_whole(inp.layers, "layers", 1, 1000)
    hidden = _optional_whole(inp.hidden, "hidden", 64, 262_144)
    heads = _optional_whole(inp.heads, "heads", 1, 4096)
    kv_heads = _optional_whole(inp.kv_heads, "kv_heads", 1, 4096)
    if heads and kv_heads and (kv_heads > heads or heads % kv_heads):
        raise SizingError(
            "kv_heads", _("KV heads must divide the attention heads (grouped-query attention).")
        )
    if hidden and heads and hidden % heads:
        raise SizingError("heads", _("The hidden size must be a multiple of the heads."))
    return replace(
        inp,
        params_billion=params,
        zero_stage=stage,
        target_tokens_billion=tokens,
        target_days=days,
        arch=arch,
        offload=offload,
        seq_len=seq,
        micro_batch=micro,
        context=context,
        concurrency=concurrency,
        mfu=mfu,
        checkpointing=bool(inp.checkpointing),
        flash_attention=bool(inp.flash_attention),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        active_params_billion=active,
        experts=experts,
        experts_active=experts_active,
    )


# --- The model's shape ------------------------------------------------------------------


def shape_of(inp: SizingInput) -> Shape:
    """The architecture's published shape, or one estimated from the parameter count
    (P ≈ 12·L·h², h ≈ 128·L, 128-wide heads, no grouped-query attention), with whatever
    the customer entered taking precedence."""
    if inp.arch:
        a: Architecture = ARCHITECTURES[inp.arch]
        return Shape(
            name=a.name,
            arch=a.code,
            params_total=a.params_total,
            params_active=a.params_active,
            expert_params=a.expert_params,
            layers=a.layers,
            hidden=a.hidden,
            heads=a.heads,
            kv_heads=a.kv_heads,
            head_dim=a.head_dim,
            ffn=a.ffn,
            vocab=a.vocab,
            experts=a.experts,
            experts_active=a.experts_active,
            kv_elems=a.kv_elems,
            estimated=False,
        )
    params = float(inp.params_billion or 0) * BILLION
    layers_est = max(2, round((params / (12 * 128 * 128)) ** (1 / 3)))
    layers = inp.layers or layers_est
    # Hidden sizes come in multiples of 1,024 (of 128 under that), so that 128-wide heads
    # divide by the usual tensor-parallel degrees.
    raw_hidden = math.sqrt(params / (12 * layers))
    step = 1024 if raw_hidden >= 1024 else 128
    hidden = inp.hidden or max(128, step * round(raw_hidden / step))
    heads = inp.heads or max(1, hidden // 128)
    kv_heads = inp.kv_heads or heads
    head_dim = max(1, hidden // heads)
    experts = inp.experts or 0
    experts_active = inp.experts_active or (min(2, experts) if experts else 0)
    active = float(inp.active_params_billion) * BILLION if inp.active_params_billion else params
    expert_params = 0.0
    if experts > 1 and experts > experts_active and active < params:
        expert_params = (params - active) / (experts - experts_active) * experts
    return Shape(
        name=_("%(size)s B-parameter model") % {"size": fmt(inp.params_billion or 0)},
        arch="",
        params_total=params,
        params_active=active,
        expert_params=min(expert_params, params),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn=4 * hidden,
        vocab=DEFAULT_VOCAB,
        experts=experts if experts > 1 else 0,
        experts_active=experts_active if experts > 1 else 0,
        kv_elems=2 * kv_heads * head_dim,
        estimated=not (inp.layers and inp.hidden and inp.heads),
    )


def size_band(params_billion: Decimal) -> Band:
    """The seeds' bands: < 30B, 30–70B (70 included), 70–100B (ours), ≥ 100B."""
    if params_billion < BAND_30B:
        return "<30B"
    if params_billion <= BAND_70B:
        return "30-70B"
    if params_billion < BAND_100B:
        return "70-100B"
    return ">=100B"


# --- Memory formulas (bytes; each one a published formula) ------------------------------


def state_bytes(precision: str, optimizer: str) -> tuple[float, float, float]:
    """(w, g, K): bytes per parameter of weights, gradients and optimizer states.

    Mixed precision (bf16/fp16, and fp8 training, which keeps bf16 weights and fp32
    master copies in Transformer Engine): 16-bit weights and gradients, K holds the fp32
    master weights plus the optimizer's own states (ZeRO paper §3.1: Adam K = 12).
    fp32: 4-byte weights and gradients, K the optimizer states alone.
    Adam m and v 4 + 4; SGD momentum 4; Adafactor's factored second moment is O(rows +
    cols) ≈ 0 per parameter, no first moment by default (Shazeer & Stern 2018); 8-bit
    Adam keeps m and v in one byte each (Dettmers et al. 2022).
    """
    own = {"adamw": 8.0, "sgd": 4.0, "adafactor": 0.0, "adam8bit": 2.0}[optimizer]
    if precision == "fp32":
        return 4.0, 4.0, own
    return 2.0, 2.0, 4.0 + own


def model_states_bytes(
    params: float, *, dp: int, stage: int, w: float = 2, g: float = 2, k: float = 12
) -> float:
    """Model states per GPU under ZeRO stage ``stage`` over ``dp`` data-parallel GPUs
    (ZeRO paper Fig. 1): 0 (w+g+K)Ψ; 1 (w+g)Ψ + KΨ/N_d; 2 wΨ + (g+K)Ψ/N_d; 3 (w+g+K)Ψ/N_d."""
    n = max(1, dp)
    if stage == 0:
        return (w + g + k) * params
    if stage == 1:
        return (w + g) * params + k * params / n
    if stage == 2:
        return w * params + (g + k) * params / n
    return (w + g + k) * params / n


def model_states_gb(
    params: float, *, dp: int, stage: int, w: float = 2, g: float = 2, k: float = 12
) -> float:
    return model_states_bytes(params, dp=dp, stage=stage, w=w, g=g, k=k) / GB


def activation_bytes_per_layer(
    *, seq: int, batch: int, hidden: int, heads: int, tp: int, flash: bool, moe_k: int = 1
) -> float:
    """Korthikanti et al. 2022 eq. (1)/(4): s·b·h·(34 + 5·a·s/h) ÷ t with tensor and
    sequence parallelism (16-bit activations). FlashAttention drops 5·a·s/h; a MoE layer
    runs each token through k experts, so its MLP part (19·s·b·h) counts k times."""
    coefficient = 34 + 19 * max(0, moe_k - 1)
    scores = 0.0 if flash else 5 * heads * seq / hidden
    return seq * batch * hidden * (coefficient + scores) / tp


def activation_bytes(
    shape: Shape, *, seq: int, batch: int, tp: int, ckpt: bool, flash: bool
) -> float:
    """Activations on the first pipeline stage (the fullest): L layers' worth under 1F1B;
    with full checkpointing each layer keeps its input 2·s·b·h/t and one layer is
    recomputed at a time; plus the output logits in fp32 for the loss, 4·s·b·V/t."""
    layer = activation_bytes_per_layer(
        seq=seq,
        batch=batch,
        hidden=shape.hidden,
        heads=shape.heads,
        tp=tp,
        flash=flash,
        moe_k=shape.experts_active or 1,
    )
    logits = 4 * seq * batch * shape.vocab / tp
    if ckpt:
        return shape.layers * 2 * seq * batch * shape.hidden / tp + layer + logits
    return shape.layers * layer + logits


def kv_cache_bytes(
    *,
    layers: int,
    kv_heads: int,
    head_dim: int,
    bytes_per_value: float,
    context: int,
    concurrency: int,
    tp: int = 1,
    pp: int = 1,
    kv_elems: int | None = None,
) -> float:
    """2 × layers × KV heads × head dim × bytes × context × sequences, per GPU: TP splits
    the KV heads (never below one head per GPU), PP the layers. ``kv_elems`` overrides
    2 × KV heads × head dim (latent attention caches one latent, not split by TP)."""
    if kv_elems is None:
        per_gpu_heads = max(kv_heads / tp, 1.0)
        elems = 2 * per_gpu_heads * head_dim
    else:
        elems = float(kv_elems)
    return math.ceil(layers / pp) * elems * bytes_per_value * context * concurrency


def _headroom(used: float) -> float:
    return HEADROOM_FIXED_GB + HEADROOM_FRACTION * used


# --- One layout ---------------------------------------------------------------------------


def _facts_reference(option: NodeOption) -> float:
    facts = gpu_facts(option.gpu_model)
    if facts is not None:
        return float(facts.gemm_tflops)
    return float(option.bf16_tflops or 0)


def _bandwidth(option: NodeOption) -> float:
    if option.memory_bandwidth_tbs:
        return float(option.memory_bandwidth_tbs)
    facts = gpu_facts(option.gpu_model)
    return facts.hbm_tbs if facts else 0.0


def precision_problem(option: NodeOption, precision: str) -> str | None:
    """Why this GPU cannot run ``precision`` (None when it can)."""
    arch = gpu_architecture(option.gpu_model)
    label = arch or _("an unknown architecture")
    if precision == "bf16" and arch not in BF16_ARCHITECTURES:
        return _("%(gpu)s (%(arch)s) has no bf16: bf16 needs Ampere or newer") % {
            "gpu": option.gpu_model,
            "arch": label,
        }
    if precision == "fp8" and arch not in FP8_ARCHITECTURES:
        return _("%(gpu)s (%(arch)s) has no fp8: fp8 needs Hopper (or Ada) or newer") % {
            "gpu": option.gpu_model,
            "arch": label,
        }
    if precision in ("int8", "int4") and arch not in INT_WEIGHT_ARCHITECTURES:
        return _(
            "%(gpu)s (%(arch)s) has no kernels for int8/int4 weights: they need Turing or newer"
        ) % {"gpu": option.gpu_model, "arch": label}
    return None


def _compute_rate(option: NodeOption, precision: str, mfu: float) -> float:
    """Sustained TFLOPS per GPU: the measured GEMM reference × MFU; fp32 runs on TF32
    tensor cores at half the bf16 rate (Ampere/Hopper spec ratio), Volta at 1/8."""
    rate = _facts_reference(option) * mfu
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
                % {"fabric": _fabric_label(option.fabric)}
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
                "fabric": _fabric_label(option.fabric),
            }
        )
    if gpus >= CLOS_MIN_GPUS and option.fabric != "ib_ndr" and not problems:
        problems.append(
            _("%(gpus)s GPUs (64 or more) need InfiniBand NDR 400G; it has %(fabric)s")
            % {"gpus": gpus, "fabric": _fabric_label(option.fabric)}
        )
    return problems


def _choose_ep(shape: Shape, dp: int) -> int:
    """The largest expert-parallel degree that divides both DP and the expert count."""
    if not shape.is_moe:
        return 1
    return math.gcd(dp, shape.experts) or 1


def memory_per_gpu(
    inp: SizingInput, shape: Shape, *, tp: int, pp: int, dp: int, ep: int = 1
) -> Memory:
    """Memory per GPU of one layout (GB), part by part."""
    if inp.mode == "infer":
        nbytes = WEIGHT_BYTES[inp.precision]
        weights = shape.params_total * nbytes / (tp * pp)
        kv_bytes = 1.0 if inp.precision == "fp8" else (4.0 if inp.precision == "fp32" else 2.0)
        kv = kv_cache_bytes(
            layers=shape.layers,
            kv_heads=shape.kv_heads,
            head_dim=shape.head_dim,
            bytes_per_value=kv_bytes,
            context=inp.context,
            concurrency=inp.concurrency,
            tp=tp,
            pp=pp,
            kv_elems=shape.kv_elems
            if shape.kv_elems != 2 * shape.kv_heads * shape.head_dim
            else None,
        )
        chunk = min(INFER_CHUNK_TOKENS, inp.context * inp.concurrency)
        acts = chunk * (4 * shape.hidden + 2 * shape.ffn) * 2 / tp
        used = (weights + kv + acts) / GB
        return Memory(weights / GB, acts / GB, kv / GB, _headroom(used))

    w, g, k = state_bytes(inp.precision, inp.optimizer)
    stage = inp.zero_stage
    ep = max(1, ep)
    dense = shape.dense_params / (tp * pp)
    experts = shape.expert_params / (tp * pp * ep)
    expert_dp = max(1, dp // ep)
    host = 0.0
    if inp.offload != "none":
        # ZeRO-Offload: gradients and optimizer states (with the fp32 master weights)
        # live on the host, partitioned over DP; the 16-bit weights stay on the GPU.
        weights_dp = dp if stage == 3 else 1
        weights_edp = expert_dp if stage == 3 else 1
        states = w * dense / weights_dp + w * experts / weights_edp
        host = (g + k) * (dense / dp + experts / expert_dp)
    else:
        states = model_states_bytes(dense, dp=dp, stage=stage, w=w, g=g, k=k)
        states += model_states_bytes(experts, dp=expert_dp, stage=stage, w=w, g=g, k=k)
    if stage == 3:
        # ZeRO-3 gathers a layer's parameters before using it, and prefetches the next.
        states += 2 * w * (dense + experts) / max(1, math.ceil(shape.layers / pp))
    acts = activation_bytes(
        shape,
        seq=inp.seq_len,
        batch=inp.micro_batch,
        tp=tp,
        ckpt=inp.checkpointing,
        flash=inp.flash_attention,
    )
    used = (states + acts) / GB
    return Memory(states / GB, acts / GB, 0.0, _headroom(used), host / GB)


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
            % {"intra": _intra_label(option.intra_node)}
        )
    if pp > shape.layers:
        problems.append(
            _("pipeline parallel %(pp)s is more than the %(layers)s layers")
            % {"pp": pp, "layers": shape.layers}
        )
    return problems


def _plan(
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
        bandwidth = _bandwidth(option)
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


def _search(inp: SizingInput, shape: Shape, band: Band, option: NodeOption) -> OptionOutcome:
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
            plan = _plan(inp, shape, band, option, gpus=gpus, tp=tp, pp=pp)
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


def rule_of_thumb(inp: SizingInput, shape: Shape) -> RuleOfThumb:
    """The seeds' formula: parameters × bytes × 3.5, ZeRO-3 ÷ 4 (÷ 8 at best)."""
    params_b = Decimal(repr(shape.params_total / BILLION)).quantize(Decimal("0.01"))
    nbytes = RULE_BYTES.get(inp.precision, 2)
    total = _gb(params_b * nbytes * RULE_FACTOR)
    divisor = RULE_ZERO_DIVISOR[inp.zero_stage]
    needed = _gb(total / divisor)
    if nbytes == 1:
        head = _("%(params)s B × %(bytes)s byte × %(factor)s = %(total)s GB")
    else:
        head = _("%(params)s B × %(bytes)s bytes × %(factor)s = %(total)s GB")
    head %= {
        "params": fmt(params_b),
        "bytes": nbytes,
        "factor": fmt(RULE_FACTOR),
        "total": fmt(total),
    }
    if inp.zero_stage == 0:
        return RuleOfThumb(total, needed, None, _("%(memory)s (no ZeRO)") % {"memory": head})
    text = _("%(memory)s; ZeRO-%(stage)s ÷ %(divisor)s = %(needed)s GB") % {
        "memory": head,
        "stage": inp.zero_stage,
        "divisor": fmt(divisor),
        "needed": fmt(needed),
    }
    low = None
    if inp.zero_stage == 3:
        best = _gb(total / RULE_ZERO3_OPTIMISTIC)
        low = (best, needed)
        text = _("%(formula)s (÷ %(divisor)s = %(best)s GB at best)") % {
            "formula": text,
            "divisor": fmt(RULE_ZERO3_OPTIMISTIC),
            "best": fmt(best),
        }
    return RuleOfThumb(total, needed, low, text)


def _comparison(inp: SizingInput, shape: Shape, rule: RuleOfThumb, plan: Plan | None) -> str:
    w, g, k = state_bytes(inp.precision, inp.optimizer)
    states_total = (w + g + k) * shape.params_total / GB
    text = _(
        "Where they differ: the rule of thumb counts %(rule)s GB for the whole job and "
        "lets ZeRO divide it; the model states alone are %(states)s GB (%(bytes)s bytes "
        "per parameter for %(optimizer)s), which ZeRO spreads across the data-parallel "
        "GPUs without shrinking the total, and activations come on top of them, set by "
        "sequence length and micro-batch."
    ) % {
        "rule": fmt(rule.total_gb),
        "states": fmt_gb(states_total),
        "bytes": fmt(w + g + k),
        "optimizer": _(OPTIMIZER_LABELS[inp.optimizer]),
    }
    if plan is not None:
        text = _then(
            text,
            _(
                "Real estimate: %(per_gpu)s GB per GPU on %(gpus)s × %(gpu)s (%(layout)s, "
                "ZeRO-%(zero)s), against %(rule)s GB by the rule."
            )
            % {
                "per_gpu": fmt_gb(plan.memory.total),
                "gpus": plan.gpus,
                "gpu": plan.option.gpu_model,
                "layout": plan.layout,
                "zero": plan.zero,
                "rule": fmt(rule.needed_gb),
            },
        )
    return text


# --- Explanations ---------------------------------------------------------------------------


def _memory_lines(inp: SizingInput, shape: Shape, plan: Plan | None) -> list[Note]:
    """Each part of the memory per GPU with its formula and its source."""
    lines: list[Note] = []
    if inp.mode == "infer":
        nbytes = WEIGHT_BYTES[inp.precision]
        lines.append(
            Note(
                _(
                    "Weights: %(params)s B parameters × %(bytes)s bytes (%(precision)s) = "
                    "%(total)s GB, split by TP × PP."
                )
                % {
                    "params": _billions(shape.params_total),
                    "bytes": fmt(nbytes, Decimal("0.001")),
                    "precision": inp.precision,
                    "total": fmt_gb(shape.params_total * nbytes / GB),
                },
                "paper",
            )
        )
        kv_bytes = 1 if inp.precision == "fp8" else (4 if inp.precision == "fp32" else 2)
        if shape.kv_elems == 2 * shape.kv_heads * shape.head_dim:
            kv = kv_cache_bytes(
                layers=shape.layers,
                kv_heads=shape.kv_heads,
                head_dim=shape.head_dim,
                bytes_per_value=kv_bytes,
                context=inp.context,
                concurrency=inp.concurrency,
            )
            lines.append(
                Note(
                    _(
                        "KV cache: 2 × %(layers)s layers × %(kv_heads)s KV heads × %(head_dim)s "
                        "head dim × %(bytes)s bytes × %(context)s tokens × %(seqs)s sequences = "
                        "%(total)s GB (grouped-query attention: %(kv_heads)s KV heads, not "
                        "%(heads)s attention heads), split by TP and PP."
                    )
                    % {
                        "layers": shape.layers,
                        "kv_heads": shape.kv_heads,
                        "head_dim": shape.head_dim,
                        "bytes": kv_bytes,
                        "context": fmt(inp.context),
                        "seqs": fmt(inp.concurrency),
                        "total": fmt_gb(kv / GB),
                        "heads": shape.heads,
                    },
                    "paper",
                )
            )
        else:
            kv = kv_cache_bytes(
                layers=shape.layers,
                kv_heads=shape.kv_heads,
                head_dim=shape.head_dim,
                bytes_per_value=kv_bytes,
                context=inp.context,
                concurrency=inp.concurrency,
                kv_elems=shape.kv_elems,
            )
            lines.append(
                Note(
                    _(
                        "KV cache: %(layers)s layers × %(elems)s cached values per token "
                        "(multi-head latent attention) × %(bytes)s bytes × %(context)s tokens × "
                        "%(seqs)s sequences = %(total)s GB."
                    )
                    % {
                        "layers": shape.layers,
                        "elems": shape.kv_elems,
                        "bytes": kv_bytes,
                        "context": fmt(inp.context),
                        "seqs": fmt(inp.concurrency),
                        "total": fmt_gb(kv / GB),
                    },
                    "paper",
                )
            )
        lines.append(
            Note(
                _(
                    "Working activations: a prefill chunk of up to %(chunk)s tokens × (4 × "
                    "hidden + 2 × FFN) × 2 bytes ÷ TP."
                )
                % {"chunk": fmt(INFER_CHUNK_TOKENS)},
                "estimate",
            )
        )
    else:
        w, g, k = state_bytes(inp.precision, inp.optimizer)
        lines.append(
            Note(
                _(
                    "Model states: %(optimizer)s at %(precision)s keeps %(w)s bytes of weights + "
                    "%(g)s of gradients + %(k)s of optimizer states = %(total)s bytes per "
                    "parameter, %(gb)s GB for %(params)s B parameters."
                )
                % {
                    "optimizer": _(OPTIMIZER_LABELS[inp.optimizer]),
                    "precision": inp.precision,
                    "w": fmt(w),
                    "g": fmt(g),
                    "k": fmt(k),
                    "total": fmt(w + g + k),
                    "gb": fmt_gb((w + g + k) * shape.params_total / GB),
                    "params": _billions(shape.params_total),
                },
                "paper",
            )
        )
        lines.append(
            Note(
                _(
                    "ZeRO (Rajbhandari et al. 2019): stage 0 (w+g+K)Ψ; stage 1 (w+g)Ψ + "
                    "KΨ/N_d; stage 2 wΨ + (g+K)Ψ/N_d; stage 3 (w+g+K)Ψ/N_d, with Ψ the "
                    "parameters of one TP × PP shard and N_d the data-parallel degree; "
                    "ZeRO-3 also gathers one layer's weights at a time (two with prefetch)."
                ),
                "paper",
            )
        )
        if inp.precision == "fp8":
            lines.append(
                Note(
                    _(
                        "fp8 training (Transformer Engine) keeps bf16 weights and gradients "
                        "and fp32 master weights: the model states are those of bf16."
                    ),
                    "estimate",
                )
            )
        if shape.is_moe:
            lines.append(
                Note(
                    _(
                        "MoE: %(total)s B parameters in memory (%(experts)s B in %(n)s experts, "
                        "split across the expert-parallel degree), %(active)s B active per token "
                        "for compute."
                    )
                    % {
                        "total": _billions(shape.params_total),
                        "experts": _billions(shape.expert_params),
                        "n": shape.experts,
                        "active": _billions(shape.params_active),
                    },
                    "paper",
                )
            )
        if inp.offload != "none":
            lines.append(
                Note(
                    _(
                        "Offload (ZeRO-Offload/ZeRO-Infinity): gradients and optimizer states, "
                        "%(bytes)s bytes per parameter, move to %(where)s; the optimizer step "
                        "runs on the CPU, which costs throughput (often 30–50%% slower steps)."
                    )
                    % {
                        "bytes": fmt(g + k),
                        "where": _("host RAM") if inp.offload == "cpu" else _("NVMe"),
                    },
                    "estimate",
                )
            )
        if inp.checkpointing:
            acts = _(
                "Activations with full checkpointing (Korthikanti et al. 2022): %(layers)s "
                "layers × 2·s·b·h/t for the layer inputs + one layer recomputed, s·b·h·%(c)s/t, "
                "+ fp32 logits 4·s·b·V/t; s = %(seq)s, b = %(batch)s, h = %(hidden)s."
            )
        else:
            acts = _(
                "Activations without checkpointing (Korthikanti et al. 2022): %(layers)s "
                "layers × s·b·h·%(c)s/t + fp32 logits 4·s·b·V/t; s = %(seq)s, b = %(batch)s, "
                "h = %(hidden)s."
            )
        coefficient = "34" if inp.flash_attention else "(34 + 5·a·s/h)"
        lines.append(
            Note(
                acts
                % {
                    "layers": shape.layers,
                    "c": coefficient,
                    "seq": fmt(inp.seq_len),
                    "batch": inp.micro_batch,
                    "hidden": fmt(shape.hidden),
                },
                "paper",
            )
        )
    lines.append(
        Note(
            _(
                "Headroom: %(fixed)s GB for the CUDA context, cuBLAS workspace and NCCL "
                "buffers + %(share)s of the rest for allocator fragmentation."
            )
            % {"fixed": fmt(HEADROOM_FIXED_GB), "share": _percent(HEADROOM_FRACTION)},
            "estimate",
        )
    )
    if shape.estimated:
        lines.append(
            Note(
                _(
                    "Shape estimated from the size (%(layers)s layers, hidden %(hidden)s, "
                    "%(heads)s heads, no grouped-query attention); choose a known "
                    "architecture or enter the shape for exact figures."
                )
                % {"layers": shape.layers, "hidden": fmt(shape.hidden), "heads": shape.heads},
                "estimate",
            )
        )
    if plan is not None:
        m = plan.memory
        lines.append(
            Note(
                _(
                    "Per GPU on %(layout)s: %(states)s + %(acts)s + %(kv)s + %(headroom)s = "
                    "%(total)s GB of %(have)s GB."
                )
                % {
                    "layout": plan.layout,
                    "states": fmt_gb(m.model_states),
                    "acts": fmt_gb(m.activations),
                    "kv": fmt_gb(m.kv_cache),
                    "headroom": fmt_gb(m.headroom),
                    "total": fmt_gb(m.total),
                    "have": fmt(plan.gpu_memory_gb),
                },
                "estimate",
            )
        )
    return lines


def _compute_lines(inp: SizingInput, shape: Shape, plan: Plan | None) -> list[Note]:
    lines: list[Note] = []
    mfu = _percent(inp.mfu)
    if inp.mode == "train" and inp.target_tokens_billion is not None:
        flops = 6 * shape.params_active * float(inp.target_tokens_billion) * BILLION
        lines.append(
            Note(
                _(
                    "Training compute: 6 × %(params)s B %(kind)s parameters × %(tokens)s B "
                    "tokens = %(flops)s FLOPs."
                )
                % {
                    "params": _billions(shape.params_active),
                    "kind": _("active") if shape.is_moe else _("dense"),
                    "tokens": fmt(inp.target_tokens_billion),
                    "flops": fmt_sci(flops),
                },
                "paper",
            )
        )
        if plan is not None and plan.train_days is not None:
            lines.append(
                Note(
                    _(
                        "Time: %(flops)s ÷ (%(gpus)s GPUs × %(tflops)s TFLOPS measured GEMM × "
                        "%(mfu)s MFU, assumed) = %(days)s days."
                    )
                    % {
                        "flops": fmt_sci(flops),
                        "gpus": plan.gpus,
                        "tflops": fmt(_facts_reference(plan.option)),
                        "mfu": mfu,
                        "days": fmt(plan.train_days, Decimal("0.1")),
                    },
                    "estimate",
                )
            )
    if inp.mode == "infer":
        lines.append(
            Note(
                _(
                    "Throughput estimate: decoding reads the weights and KV cache once per "
                    "step (memory-bandwidth bound), capped by 2 × %(params)s B active "
                    "parameters FLOPs per token at the measured GEMM × %(mfu)s MFU (assumed)."
                )
                % {"params": _billions(shape.params_active), "mfu": mfu},
                "estimate",
            )
        )
    if inp.precision in ("fp32", "fp8"):
        lines.append(
            Note(
                _(
                    "Compute uses the measured bf16 GEMM reference: fp8 would be faster, fp32 "
                    "(TF32) about half as fast; both are our assumption."
                ),
                "estimate",
            )
        )
    return lines


def _parallelism(band: Band, plan: Plan | None, mode: str) -> str:
    if plan is None:
        return _("No plan runs on the node types offered; see the reason.")
    if mode == "infer":
        return ngettext(
            "Serving with tensor parallel %(tp)s inside the node and pipeline parallel "
            "%(pp)s; %(replicas)s replica.",
            "Serving with tensor parallel %(tp)s inside the node and pipeline parallel "
            "%(pp)s; %(replicas)s replicas.",
            plan.dp,
        ) % {"tp": plan.tp, "pp": plan.pp, "replicas": plan.dp}
    parts = {
        "layout": plan.layout,
        "zero": plan.zero,
        "nodes": plan.nodes,
        "gpus": plan.gpus,
    }
    if band == ">=100B":
        return (
            _(
                "Multi-node 3D parallel: tensor parallel inside the node, pipeline parallel across "
                "nodes, data parallel with ZeRO on top; expert parallel for MoE models. Use "
                "topology-aware placement (as few leaf switches as possible) and automatic "
                "recovery with regular checkpoints; 400 Gb/s between nodes."
            )
            + " "
            + ngettext(
                "This plan: %(layout)s, ZeRO-%(zero)s, %(gpus)s GPUs on %(nodes)s node.",
                "This plan: %(layout)s, ZeRO-%(zero)s, %(gpus)s GPUs on %(nodes)s nodes.",
                plan.nodes,
            )
            % parts
        )
    if plan.tp > 1 or plan.pp > 1:
        return (
            _(
                "Tensor parallel inside the node over NVLink/NVSwitch, data parallel across "
                "nodes; at least 200 Gb/s between nodes."
            )
            + " "
            + ngettext(
                "This plan: %(layout)s, ZeRO-%(zero)s, %(gpus)s GPUs on %(nodes)s node.",
                "This plan: %(layout)s, ZeRO-%(zero)s, %(gpus)s GPUs on %(nodes)s nodes.",
                plan.nodes,
            )
            % parts
        )
    return (
        ngettext(
            "Data parallel (PyTorch DDP, or ZeRO/FSDP to shard) across %(gpus)s GPUs on %(nodes)s "
            "node, ZeRO-%(zero)s.",
            "Data parallel (PyTorch DDP, or ZeRO/FSDP to shard) across %(gpus)s GPUs on %(nodes)s "
            "nodes, ZeRO-%(zero)s.",
            plan.nodes,
        )
        % parts
    )


def _fabric(band: Band, plan: Plan | None) -> tuple[str, str]:
    """(fabric, topology) for a plan, by the seeds' rules."""
    if plan is None:
        return (
            _("No qualifying node type, so no fabric to recommend; see the reason."),
            _("No qualifying node type, so no topology to recommend."),
        )
    option = plan.option
    gpus = plan.gpus
    if plan.nodes == 1:
        if option.intra_node in NVLINK_KINDS:
            fabric = _(
                "Single node, NVLink/NVSwitch only: no inter-node fabric is needed; the "
                "GPUs talk over NVLink inside the node."
            )
        else:
            fabric = _(
                "Single node, PCIe only: no inter-node fabric is needed; the GPUs talk "
                "over PCIe (NCCL P2P) inside the node."
            )
        return fabric, _("Single node: no switch fabric.")
    placement = _("Place the nodes under as few leaf switches as possible.")
    if gpus >= CLOS_MIN_GPUS:
        fabric = _(
            "InfiniBand NDR 400G required: at %(gpus)s GPUs (64 or more) the seeds make IB "
            "NDR 400 Gb/s mandatory so that AllReduce does not hold training back."
        ) % {"gpus": gpus}
        topology = _then(
            _(
                "3-tier CLOS with adaptive routing: non-blocking, line rate between any two "
                "ports (64 GPUs and more)."
            ),
            placement,
        )
    elif gpus > ROCE_MAX_GPUS:
        fabric = _(
            "InfiniBand recommended: at %(gpus)s GPUs (more than 32) RoCE v2's PFC "
            "head-of-line blocking makes throughput unstable, while InfiniBand's "
            "credit-based flow control holds up (%(ib)s vs %(roce)s AllReduce utilisation "
            "at 32 nodes in the seeds' test)."
        ) % {"gpus": gpus, "ib": _percent(Decimal("0.98")), "roce": _percent(Decimal("0.82"))}
        topology = _then(_("Leaf-spine (2 tiers)."), placement)
    else:
        fabric = _(
            "RoCE v2 is acceptable at %(gpus)s GPUs (32 or fewer): it costs %(saving)s less "
            "than InfiniBand and its head-of-line blocking only hurts larger clusters; "
            "InfiniBand works too."
        ) % {"gpus": gpus, "saving": _percent_range(Decimal("0.30"), Decimal("0.50"))}
        topology = _then(
            _(
                "Leaf-spine (2 tiers) is enough for 8–32 GPUs, each server dual-homed to two "
                "switches for redundancy."
            ),
            placement,
        )
    if band == ">=100B" and gpus < CLOS_MIN_GPUS:
        fabric = _(
            "InfiniBand NDR 400G: 100B+ models need 400 Gb/s RDMA between nodes, even "
            "though at %(gpus)s GPUs the cluster size alone would allow RoCE v2."
        ) % {"gpus": gpus}
    nics = _("%(name)s has %(nics)s× %(speed)s Gb/s %(fabric)s = %(total)s Gb/s per node.") % {
        "name": option.name,
        "nics": option.nic_count,
        "speed": option.nic_speed_gbps,
        "fabric": _fabric_label(option.fabric),
        "total": fmt(option.inter_node_gbps),
    }
    return _then(fabric, nics), topology


def _reason_if_none(shape: Shape, outcomes: Sequence[OptionOutcome]) -> str:
    if not outcomes:
        return _("No node types were offered to size a %(size)s B-parameter model on.") % {
            "size": _billions(shape.params_total)
        }
    # Translators: the separator between two problems of one node type.
    problem_separator = _("; ")
    # Translators: the separator between two node types' problems (a sentence each).
    option_separator = _(". ")
    parts = [
        # Translators: a node type's name, then why it does not qualify.
        _("%(name)s: %(problems)s")
        % {"name": o.option.name, "problems": problem_separator.join(o.problems)}
        for o in outcomes
    ]
    return _("No node type qualifies for a %(size)s B-parameter model. %(details)s.") % {
        "size": _billions(shape.params_total),
        "details": option_separator.join(parts),
    }


def _what_would_fit(inp: SizingInput, shape: Shape, options: Sequence[NodeOption]) -> str:
    """When nothing on offer runs it: the nearest change that would."""
    band = size_band(Decimal(repr(shape.params_total / BILLION)))
    tries: list[tuple[SizingInput, str]] = []
    if inp.mode == "train":
        if inp.zero_stage < 3:
            tries.append((replace(inp, zero_stage=3), _("ZeRO-3")))
        if inp.offload == "none":
            tries.append(
                (
                    replace(
                        inp,
                        zero_stage=max(inp.zero_stage, 1) if inp.zero_stage else 3,
                        offload="cpu",
                    ),
                    _("ZeRO-3 with CPU offload") if inp.zero_stage in (0, 3) else _("CPU offload"),
                )
            )
        if not inp.checkpointing:
            tries.append((replace(inp, checkpointing=True), _("activation checkpointing")))
        if inp.micro_batch > 1 or inp.seq_len > 2048:
            tries.append(
                (
                    replace(inp, micro_batch=1, seq_len=min(inp.seq_len, 2048)),
                    _("micro-batch 1 and sequence 2,048"),
                )
            )
    else:
        for precision in ("fp8", "int8", "int4"):
            if WEIGHT_BYTES[precision] < WEIGHT_BYTES[inp.precision]:
                tries.append((replace(inp, precision=precision), precision))
        if inp.concurrency > 1:
            tries.append((replace(inp, concurrency=1), _("one sequence at a time")))
    for changed, label in tries:
        for option in options:
            outcome = _search(changed, shape, band, option)
            if outcome.plan is not None:
                return _("With %(change)s it would fit: %(gpus)s × %(gpu)s (%(layout)s).") % {
                    "change": label,
                    "gpus": outcome.plan.gpus,
                    "gpu": option.gpu_model,
                    "layout": outcome.plan.layout,
                }
    return _(
        "Nothing offered here holds it even with ZeRO-3 and offload: it needs GPUs with more "
        "memory or a larger cluster than we search (up to %(nodes)s nodes)."
    ) % {"nodes": MAX_NODES}


def shortfall_text(*, gpus_needed: int, gpu: str, free_gpus: int, full_from: str | None) -> str:
    """ "Needs 48 H100 80G SXM GPUs: only 32 are free for this period; all 48 from
    2027-02-01." — from the availability data the caller has."""
    if full_from:
        return _(
            "Needs %(gpus)s × %(gpu)s: only %(free)s are free for this period; all "
            "%(gpus)s are free from %(date)s."
        ) % {"gpus": gpus_needed, "gpu": gpu, "free": free_gpus, "date": full_from}
    return _(
        "Needs %(gpus)s × %(gpu)s: only %(free)s are free for this period, and the full "
        "count is not free within the search horizon."
    ) % {"gpus": gpus_needed, "gpu": gpu, "free": free_gpus}


# --- Entry points --------------------------------------------------------------------------


def _band_of(shape: Shape) -> Band:
    return size_band(Decimal(repr(shape.params_total / BILLION)))


def size(inp: SizingInput, options: Sequence[NodeOption]) -> SizingResult:
    """Search every node type for its smallest plan that runs; raise SizingError for bad
    input. A result without any plan is not an error: ``reason_if_none`` and
    ``what_would_fit`` say why and what would."""
    inp = validate(inp)
    shape = shape_of(inp)
    band = _band_of(shape)
    outcomes = [_search(inp, shape, band, option) for option in options]
    plans = [o.plan for o in outcomes if o.plan is not None]
    plans.sort(key=_cheapest_key)
    cheapest = plans[0] if plans else None
    fastest = min(plans, key=_fastest_key) if plans else None
    return _result(inp, shape, band, plans, cheapest, fastest, outcomes, options)


def evaluate(
    inp: SizingInput,
    option: NodeOption,
    *,
    gpus: int,
    tp: int = 1,
    pp: int = 1,
    ep: int | None = None,
) -> SizingResult:
    """Evaluate one layout (``gpus`` GPUs of ``option``, TP × PP) instead of searching:
    its plan comes back in ``plans`` with ``fits`` true or false."""
    inp = validate(inp)
    if gpus < 1 or tp < 1 or pp < 1:
        raise SizingError("gpus", _("GPUs, TP and PP must be at least 1."))
    shape = shape_of(inp)
    band = _band_of(shape)
    plan = _plan(inp, shape, band, option, gpus=gpus, tp=tp, pp=pp, ep=ep)
    fits = plan if plan.fits else None
    outcome = OptionOutcome(option, fits, plan.problems)
    result = _result(inp, shape, band, [plan], fits, fits, [outcome], [option], search=False)
    return result


def _cheapest_key(plan: Plan) -> tuple[int, Decimal, int, str]:
    if plan.monthly_total is None:
        return (1, Decimal(0), plan.nodes, plan.option.code)
    return (0, plan.monthly_total, plan.nodes, plan.option.code)


def _fastest_key(plan: Plan) -> tuple[float, Decimal, str]:
    if plan.train_days is not None:
        speed = plan.train_days
    elif plan.tokens_per_s is not None:
        speed = -plan.tokens_per_s
    else:
        speed = -plan.gpus * plan.sustained_tflops
    price = plan.monthly_total if plan.monthly_total is not None else Decimal("Infinity")
    return (speed, price, plan.option.code)


def _result(
    inp: SizingInput,
    shape: Shape,
    band: Band,
    plans: list[Plan],
    cheapest: Plan | None,
    fastest: Plan | None,
    outcomes: list[OptionOutcome],
    options: Sequence[NodeOption],
    *,
    search: bool = True,
) -> SizingResult:
    rule = rule_of_thumb(inp, shape) if inp.mode == "train" else None
    shown = cheapest or (plans[0] if plans else None)
    if rule is not None:
        comparison = _comparison(inp, shape, rule, cheapest)
    else:
        comparison = _(
            "The seeds' rule of thumb (parameters × bytes × 3.5) is for training; for serving "
            "the memory is the weights plus the KV cache, which grows with context and "
            "concurrent sequences."
        )
    fabric, topology = _fabric(band, cheapest)
    reason = what = ""
    if cheapest is None:
        reason = _reason_if_none(shape, outcomes)
        what = _what_would_fit(inp, shape, options) if search else ""
    notes: list[Note] = []
    if cheapest is not None:
        notes.append(Note(cheapest.band_rule, "seeds"))
        if band == ">=100B" and inp.mode == "train" and inp.zero_stage != 3:
            notes.append(
                Note(
                    _(
                        "At 100B+ the seeds pair 3D parallelism with ZeRO stage 3 and a fast "
                        "inter-node network to get past the memory wall."
                    ),
                    "seeds",
                )
            )
    return SizingResult(
        input=inp,
        shape=shape,
        band=band,
        rule=rule,
        rule_comparison=comparison,
        memory_lines=_memory_lines(inp, shape, shown),
        compute_lines=_compute_lines(inp, shape, shown),
        plans=plans,
        cheapest=cheapest,
        fastest=fastest,
        outcomes=outcomes,
        reason_if_none=reason,
        what_would_fit=what,
        parallelism=_parallelism(band, cheapest, inp.mode),
        fabric=fabric,
        topology=topology,
        notes=notes,
    )


# --- JSON -----------------------------------------------------------------------------------


def plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "gpus": plan.gpus,
        "node_type": plan.option.code,
        "node_type_name": plan.option.name,
        "gpu_model": plan.option.gpu_model,
        "nodes": plan.nodes,
        "tp": plan.tp,
        "pp": plan.pp,
        "dp": plan.dp,
        "ep": plan.ep,
        "zero": plan.zero,
        "offload": plan.offload,
        "fits": plan.fits,
        "problems": list(plan.problems),
        "per_gpu_gb": plan.memory.as_dict(),
        "gpu_memory_gb": _r(plan.gpu_memory_gb),
        "host_ram": {
            "needed_gb_per_node": _r(plan.host_needed_gb),
            "node_gb": plan.option.host_ram_gb,
            "offloaded_gb_per_gpu": _r(plan.memory.host_per_gpu),
        },
        "monthly_price": None if plan.monthly_total is None else str(plan.monthly_total),
        "band_rule": {"text": plan.band_rule, "met": plan.band_rule_met},
        "compute": {
            "reference_tflops": _facts_reference(plan.option),
            "sustained_tflops_per_gpu": _r(plan.sustained_tflops),
            "mfu_assumed": True,
            "train_days": None if plan.train_days is None else _r(plan.train_days),
            "tokens_per_s_estimate": None
            if plan.tokens_per_s is None
            else _r(plan.tokens_per_s, 0),
        },
    }


def result_json(result: SizingResult) -> dict[str, Any]:
    """The whole result as JSON-ready data (the command's ``--json``)."""
    inp = result.input
    s = result.shape
    rule = result.rule
    return {
        "mode": inp.mode,
        "input": {
            "arch": inp.arch or None,
            "params": s.params_total,
            "precision": inp.precision,
            "optimizer": inp.optimizer if inp.mode == "train" else None,
            "zero": inp.zero_stage if inp.mode == "train" else None,
            "offload": inp.offload,
            "seq": inp.seq_len,
            "micro_batch": inp.micro_batch,
            "checkpointing": inp.checkpointing,
            "context": inp.context,
            "concurrency": inp.concurrency,
            "mfu": float(inp.mfu),
            "mfu_assumed": True,
            "target_tokens_billion": None
            if inp.target_tokens_billion is None
            else float(inp.target_tokens_billion),
            "target_days": None if inp.target_days is None else float(inp.target_days),
        },
        "model": {
            "name": s.name,
            "params_total": s.params_total,
            "params_active": s.params_active,
            "layers": s.layers,
            "hidden": s.hidden,
            "heads": s.heads,
            "kv_heads": s.kv_heads,
            "head_dim": s.head_dim,
            "experts": s.experts,
            "experts_active": s.experts_active,
            "shape_estimated": s.estimated,
        },
        "band": result.band,
        "plans": [plan_json(p) for p in result.plans],
        "cheapest": None if result.cheapest is None else plan_json(result.cheapest),
        "fastest": None if result.fastest is None else plan_json(result.fastest),
        "rule_of_thumb": None
        if rule is None
        else {
            "total_gb": float(rule.total_gb),
            "needed_gb": float(rule.needed_gb),
            "range_gb": None if rule.range_gb is None else [float(x) for x in rule.range_gb],
            "formula": rule.formula,
        },
        "comparison": result.rule_comparison,
        "memory": [str(n) for n in result.memory_lines],
        "compute": [str(n) for n in result.compute_lines],
        "reason_if_none": result.reason_if_none,
        "what_would_fit": result.what_would_fit,
        "parallelism": result.parallelism,
        "fabric": result.fabric,
        "topology": result.topology,
        "rejected": [
            {"node_type": o.option.code, "problems": list(o.problems)}
            for o in result.outcomes
            if o.plan is None
        ],
    }


# --- The seeds' own examples, beside the real estimate ----------------------------------------


@dataclass(frozen=True)
class SeedExample:
    """One of the seeds' sizing claims with the rule of thumb and the real estimate."""

    title: str
    seeds_claim: str
    rule_formula: str
    real: str
    plan: Plan | None
    differs: str


def _seed_cases() -> list[tuple[str, str, str, SizingInput]]:
    return [
        (
            _("Llama 3 70B, bf16, AdamW, ZeRO-3"),
            _("8 × H100 80G"),
            "H100",
            SizingInput(arch="llama3-70b", zero_stage=3),
        ),
        (
            _("175B dense, bf16, AdamW, ZeRO-3"),
            _("at least 32–64 × H100 80G"),
            "H100",
            SizingInput(params_billion=Decimal(175), zero_stage=3),
        ),
        (
            _("Llama 2 13B full fine-tune, bf16, AdamW, ZeRO-3"),
            _("4 × A100 40G (160 GB pooled) is more than enough"),
            "A100 40G",
            SizingInput(params_billion=Decimal(13), zero_stage=3),
        ),
    ]


def seed_examples(options: Sequence[NodeOption]) -> list[SeedExample]:
    """The seeds' examples (seeds/000: Llama 3 70B on 8 H100, 175B on 32–64 H100, Llama 2
    13B on one 4 × A100 40G node), each sized for real on the matching node type offered."""
    examples = []
    for title, claim, gpu_key, raw in _seed_cases():
        option = next((o for o in options if gpu_key in o.gpu_model and o.gpus_per_node), None)
        if option is None:
            continue
        inp = validate(raw)
        shape = shape_of(inp)
        rule = rule_of_thumb(inp, shape)
        outcome = _search(inp, shape, _band_of(shape), option)
        w, g, k = state_bytes(inp.precision, inp.optimizer)
        states = (w + g + k) * shape.params_total / GB
        if outcome.plan is not None:
            plan = outcome.plan
            real = _("%(gpus)s × %(gpu)s (%(layout)s), %(per_gpu)s GB per GPU") % {
                "gpus": plan.gpus,
                "gpu": option.gpu_model,
                "layout": plan.layout,
                "per_gpu": fmt_gb(plan.memory.total),
            }
        else:
            plan = None
            real = _("does not run on %(gpu)s: %(why)s") % {
                "gpu": option.gpu_model,
                "why": _("; ").join(outcome.problems),
            }
        differs = _(
            "The rule of thumb divides %(rule)s GB by ZeRO; the model states alone are "
            "%(states)s GB, which ZeRO-3 spreads across the GPUs but does not shrink, and the "
            "activations come on top."
        ) % {"rule": fmt(rule.total_gb), "states": fmt_gb(states)}
        examples.append(SeedExample(title, claim, rule.formula, real, plan, differs))
    return examples
