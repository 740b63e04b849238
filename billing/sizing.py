"""The sizing wizard's calculator: pure functions over Decimal, no Django.

A model (size, precision, optimizer, ZeRO stage, optionally a token target and a deadline)
and the node types on offer (``NodeOption``, built by the caller from the inventory) go
in; GPUs, nodes, the recommended node type, parallelism, fabric and topology come out,
each figure with the formula that produced it and a note saying where the rule comes
from: ``"seeds"`` (the provider's articles in shared/seeds/) or ``"estimate"`` (our own
assumption, to be replaced by measurements when we have them).

Rules from the seeds:
- GPU memory ≈ parameters × bytes per parameter × 3.5 (weights, gradients, optimizer
  states, activations; mixed-precision Adam); ZeRO-3 cuts it 4–8×.
- Under 30B: one 8-GPU node, data parallel. 30–70B: NVLink inside the node, ≥ 200 Gb/s
  between nodes, tensor + data parallel. 100B and up: multi-node, 400 Gb/s, 3D parallel
  with ZeRO, expert parallel for MoE, topology-aware placement, automatic recovery.
- Up to 32 GPUs RoCE v2 is acceptable with a leaf-spine fabric; 64 GPUs and more need
  InfiniBand NDR 400G in a 3-tier CLOS.

Our estimates: the factor for SGD and Adafactor, the ZeRO-1/2 divisors, 10% memory
headroom, 40% MFU, the 70–100B band (between the seeds' bands), "medium bandwidth" for
multi-node data parallel under 30B (≥ 100 Gb/s per node), rounding to whole nodes.

Every user-facing string goes through ``_()`` from billing.i18n (the Django layer installs
gettext there), with named %-placeholders filled in after the call; numbers are formatted
here with ``fmt``/``fmt_sci`` and passed in. Texts are translated when ``size()`` and
``validate()`` run, so they come out in the language active at the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Literal

from billing.i18n import _, gettext_noop

Precision = Literal["fp32", "bf16", "fp16", "fp8"]
Optimizer = Literal["adamw", "sgd", "adafactor"]
IntraNode = Literal["nvswitch", "nvlink", "pcie"]
FabricKind = Literal["ib_ndr", "ib_hdr", "roce_v2", "ethernet"]
Band = Literal["<30B", "30-70B", "70-100B", ">=100B"]
Source = Literal["seeds", "estimate"]

PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8")
OPTIMIZERS: tuple[str, ...] = ("adamw", "sgd", "adafactor")
ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)

BYTES_PER_PARAM: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
# Memory factor over the weights: the seeds give 3.5 for mixed-precision Adam(W).
# SGD (one momentum buffer) and Adafactor (factored second moments) keep less optimizer
# state: our estimates, not from the seeds.
MEMORY_FACTOR: dict[str, Decimal] = {
    "adamw": Decimal("3.5"),
    "sgd": Decimal("2.5"),
    "adafactor": Decimal("2.0"),
}
SEED_OPTIMIZERS = frozenset({"adamw"})
# ZeRO divisors. Stage 3: the seeds' 4–8×; we size on the conservative ÷ 4 and report
# ÷ 8 as the optimistic end. Stages 1 and 2: our estimates.
ZERO_DIVISOR: dict[int, Decimal] = {
    0: Decimal("1"),
    1: Decimal("1.5"),
    2: Decimal("2"),
    3: Decimal("4"),
}
ZERO3_OPTIMISTIC_DIVISOR = Decimal("8")

USABLE_MEMORY_FRACTION = Decimal("0.9")  # ~10% headroom: CUDA context, NCCL, fragmentation
ASSUMED_MFU = Decimal("0.40")  # sustained share of the GPU's bf16 TFLOPS
TRAINING_FLOPS_PER_PARAM_TOKEN = 6  # forward + backward ≈ 6 × N × D

MAX_PARAMS_BILLION = Decimal("20000")  # 20T parameters
MAX_TARGET_DAYS = Decimal("3650")
SECONDS_PER_DAY = 86_400
BILLION = Decimal(10) ** 9
TERA = Decimal(10) ** 12

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

# English labels, marked for extraction; translated where used (_fabric_label, _intra_label).
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

GB_PLACES = Decimal("0.01")


class SizingError(ValueError):
    """Input the wizard cannot size; ``field`` names the input field that is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class SizingInput:
    """What the customer tells the wizard. Both targets, or neither."""

    params_billion: Decimal
    precision: str = "bf16"
    optimizer: str = "adamw"
    zero_stage: int = 0
    target_tokens_billion: Decimal | None = None
    target_days: Decimal | None = None


@dataclass(frozen=True)
class NodeOption:
    """A node type as the calculator sees it (the caller builds it from the inventory).

    ``gpu_memory_gb`` and ``bf16_tflops`` are per GPU; ``monthly_price_per_node`` is the
    list price of one node for one month, or None when there is no price to compare.
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
        label = _("seeds") if self.source == "seeds" else _("our estimate")
        # Translators: a note followed by where its rule comes from ("seeds" or "our estimate").
        return _("%(text)s (%(source)s)") % {"text": self.text, "source": label}


@dataclass(frozen=True)
class OptionPlan:
    """What one node type would take, and why it does not qualify (``problems``)."""

    option: NodeOption
    gpus_for_memory: int
    gpus_for_compute: int | None
    gpus_needed: int
    gpu_count: int
    node_count: int
    monthly_total: Decimal | None
    problems: tuple[str, ...] = ()

    @property
    def qualifies(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class SizingResult:
    """The wizard's answer. GPU and node figures are those of the recommended node type;
    when none qualifies they are 0 (``gpus_for_compute`` None) and ``reason_if_none``
    says why; ``options_considered`` holds every node type's own plan either way."""

    input: SizingInput
    band: Band
    bytes_per_param: int
    memory_factor: Decimal
    memory_total_gb: Decimal  # before ZeRO
    zero_divisor: Decimal
    memory_needed_gb: Decimal  # after ZeRO, the figure we size on
    memory_range_gb: tuple[Decimal, Decimal] | None  # ZeRO-3 only: (÷ 8, ÷ 4)
    formula: str
    compute_flops: Decimal | None
    compute_formula: str | None
    notes: list[Note]
    gpus_for_memory: int
    gpus_for_compute: int | None
    gpu_count: int
    node_count: int
    recommended: NodeOption | None
    reason_if_none: str
    monthly_total: Decimal | None
    parallelism: str
    fabric: str
    topology: str
    options_considered: list[OptionPlan] = field(default_factory=list)

    @property
    def note_lines(self) -> list[str]:
        """The notes as plain strings, each ending with its source."""
        return [str(n) for n in self.notes]


# --- Formatting -------------------------------------------------------------------------


def fmt(value: Decimal | int, places: Decimal = GB_PLACES) -> str:
    """1225.50 -> "1,225.5"; 490.00 -> "490"."""
    q = Decimal(value).quantize(places, rounding=ROUND_HALF_UP).normalize()
    if q == 0:
        q = Decimal(0)
    return format(q, ",f")


def fmt_sci(value: Decimal) -> str:
    """4.2E+22 -> "4.2 × 10^22"."""
    mantissa, exponent = f"{value:.2e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10^{int(exponent)}"


def _percent(fraction: Decimal) -> str:
    """0.9 -> "90%"."""
    return _("%(number)s%%") % {"number": fmt(fraction * 100)}


def _fabric_label(code: str) -> str:
    label = FABRIC_LABELS.get(code)
    return code if label is None else _(label)


def _intra_label(code: str) -> str:
    label = INTRA_LABELS.get(code)
    return code if label is None else _(label)


def _then(first: str, second: str) -> str:
    """Two sentences (or clauses) one after the other."""
    # Translators: two sentences one after the other; drop the space where the language
    # does not put one between sentences.
    return _("%(first)s %(second)s") % {"first": first, "second": second}


def _nodes(count: int) -> str:
    """ "1 node", "7 nodes"."""
    if count == 1:
        return _("%(count)s node") % {"count": count}
    return _("%(count)s nodes") % {"count": count}


def _percent_range(low: Decimal, high: Decimal) -> str:
    """0.3, 0.5 -> "30–50%"."""
    return _("%(low)s–%(high)s%%") % {"low": fmt(low * 100), "high": fmt(high * 100)}


def _ceil(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _gb(value: Decimal) -> Decimal:
    return value.quantize(GB_PLACES, rounding=ROUND_HALF_UP)


# --- Validation -------------------------------------------------------------------------


def _not_a_number(field_name: str) -> str:
    if field_name == "params_billion":
        return _("Model size must be a number.")
    if field_name == "target_tokens_billion":
        return _("Target tokens must be a number.")
    return _("Target days must be a number.")


def _not_finite(field_name: str) -> str:
    if field_name == "params_billion":
        return _("Model size must be a finite number.")
    if field_name == "target_tokens_billion":
        return _("Target tokens must be a finite number.")
    return _("Target days must be a finite number.")


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


def validate(inp: SizingInput) -> SizingInput:
    """Check the input and return it with numbers as Decimal; raise SizingError."""
    params = _decimal(inp.params_billion, "params_billion")
    if params <= 0:
        raise SizingError("params_billion", _("Model size must be more than 0 billion parameters."))
    if params > MAX_PARAMS_BILLION:
        raise SizingError(
            "params_billion",
            _(
                "Model size must be at most %(max)s billion (20T) parameters; "
                "%(size)s billion is beyond what this wizard can size."
            )
            % {"max": fmt(MAX_PARAMS_BILLION), "size": fmt(params)},
        )
    if inp.precision not in PRECISIONS:
        raise SizingError(
            "precision",
            _("Unknown precision “%(value)s”: choose one of %(choices)s.")
            % {"value": inp.precision, "choices": ", ".join(PRECISIONS)},
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

    tokens = days = None
    if inp.target_tokens_billion is not None:
        tokens = _decimal(inp.target_tokens_billion, "target_tokens_billion")
        if tokens <= 0:
            raise SizingError(
                "target_tokens_billion", _("Target tokens must be more than 0 billion.")
            )
    if inp.target_days is not None:
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
    return SizingInput(
        params_billion=params,
        precision=inp.precision,
        optimizer=inp.optimizer,
        zero_stage=stage,
        target_tokens_billion=tokens,
        target_days=days,
    )


# --- Rules ------------------------------------------------------------------------------


def size_band(params_billion: Decimal) -> Band:
    """The seeds' bands: < 30B, 30–70B (70 included), 70–100B (ours), ≥ 100B."""
    if params_billion < BAND_30B:
        return "<30B"
    if params_billion <= BAND_70B:
        return "30-70B"
    if params_billion < BAND_100B:
        return "70-100B"
    return ">=100B"


def _memory(inp: SizingInput) -> tuple[int, Decimal, Decimal, Decimal, Decimal, list[Note]]:
    """(bytes, factor, total GB, ZeRO divisor, needed GB, notes)."""
    nbytes = BYTES_PER_PARAM[inp.precision]
    factor = MEMORY_FACTOR[inp.optimizer]
    total = _gb(inp.params_billion * nbytes * factor)
    divisor = ZERO_DIVISOR[inp.zero_stage]
    needed = _gb(total / divisor)
    if nbytes == 1:
        per_param = _(
            "GPU memory ≈ parameters × bytes per parameter × factor "
            "(%(bytes)s byte for %(precision)s)."
        )
    else:
        per_param = _(
            "GPU memory ≈ parameters × bytes per parameter × factor "
            "(%(bytes)s bytes for %(precision)s)."
        )
    notes: list[Note] = [
        Note(per_param % {"bytes": nbytes, "precision": inp.precision}, "seeds"),
    ]
    if inp.optimizer in SEED_OPTIMIZERS:
        notes.append(
            Note(
                _(
                    "Factor 3.5 covers weights, gradients, optimizer states and activations "
                    "for mixed-precision Adam(W)."
                ),
                "seeds",
            )
        )
    else:
        notes.append(
            Note(
                _(
                    "Factor %(factor)s for %(optimizer)s: it keeps less optimizer state "
                    "than Adam(W), whose factor is 3.5 in the seeds."
                )
                % {"factor": fmt(factor), "optimizer": inp.optimizer},
                "estimate",
            )
        )
    if inp.precision == "fp8":
        notes.append(
            Note(
                _(
                    "fp8 at 1 byte per parameter applies the seeds' formula as is; fp8 "
                    "training usually keeps higher-precision master weights and optimizer "
                    "states, so expect more memory than this."
                ),
                "estimate",
            )
        )
    if inp.zero_stage == 3:
        notes.append(
            Note(
                _(
                    "ZeRO-3 cuts memory 4–8×: we size on ÷ 4 (conservative) and show ÷ 8 "
                    "as the optimistic end."
                ),
                "seeds",
            )
        )
    elif inp.zero_stage in (1, 2):
        if inp.zero_stage == 1:
            partial = _(
                "ZeRO-%(stage)s ÷ %(divisor)s: it partitions optimizer states only; the "
                "seeds give a figure for ZeRO-3 alone (4–8×)."
            )
        else:
            partial = _(
                "ZeRO-%(stage)s ÷ %(divisor)s: it partitions optimizer states and "
                "gradients only; the seeds give a figure for ZeRO-3 alone (4–8×)."
            )
        notes.append(Note(partial % {"stage": inp.zero_stage, "divisor": fmt(divisor)}, "estimate"))
    notes.append(
        Note(
            _(
                "Usable memory is %(usable)s of each GPU's memory, keeping ~%(headroom)s "
                "headroom for the CUDA context, NCCL buffers and fragmentation."
            )
            % {
                "usable": _percent(USABLE_MEMORY_FRACTION),
                "headroom": _percent(1 - USABLE_MEMORY_FRACTION),
            },
            "estimate",
        )
    )
    return nbytes, factor, total, divisor, needed, notes


def _formula(
    inp: SizingInput,
    nbytes: int,
    factor: Decimal,
    total: Decimal,
    divisor: Decimal,
    needed: Decimal,
) -> str:
    if nbytes == 1:
        head = _("%(params)s B × %(bytes)s byte × %(factor)s = %(total)s GB")
    else:
        head = _("%(params)s B × %(bytes)s bytes × %(factor)s = %(total)s GB")
    head %= {
        "params": fmt(inp.params_billion),
        "bytes": nbytes,
        "factor": fmt(factor),
        "total": fmt(total),
    }
    if inp.zero_stage == 0:
        return _("%(memory)s (no ZeRO)") % {"memory": head}
    text = _("%(memory)s; ZeRO-%(stage)s ÷ %(divisor)s = %(needed)s GB") % {
        "memory": head,
        "stage": inp.zero_stage,
        "divisor": fmt(divisor),
        "needed": fmt(needed),
    }
    if inp.zero_stage == 3:
        best = _gb(total / ZERO3_OPTIMISTIC_DIVISOR)
        text = _("%(formula)s (÷ %(divisor)s = %(best)s GB at best)") % {
            "formula": text,
            "divisor": fmt(ZERO3_OPTIMISTIC_DIVISOR),
            "best": fmt(best),
        }
    return text


def _flops(inp: SizingInput) -> Decimal | None:
    if inp.target_tokens_billion is None:
        return None
    return (
        TRAINING_FLOPS_PER_PARAM_TOKEN
        * inp.params_billion
        * BILLION
        * inp.target_tokens_billion
        * BILLION
    )


def _gpus_for_compute(flops: Decimal, days: Decimal, option: NodeOption) -> int:
    per_gpu = Decimal(option.bf16_tflops) * TERA * ASSUMED_MFU
    return max(1, _ceil(flops / (per_gpu * days * SECONDS_PER_DAY)))


def _min_nodes(band: Band) -> int:
    return 2 if band == ">=100B" else 1


def _plan(
    inp: SizingInput, band: Band, needed_gb: Decimal, flops: Decimal | None, option: NodeOption
) -> OptionPlan:
    """Size one node type and list what keeps it from qualifying."""
    gpus = int(option.gpus_per_node)
    memory = Decimal(option.gpu_memory_gb)
    if gpus <= 0 or memory <= 0:
        return OptionPlan(option, 0, None, 0, 0, 0, None, (_("it has no GPUs"),))
    problems: list[str] = []
    usable = memory * USABLE_MEMORY_FRACTION
    for_memory = max(1, _ceil(needed_gb / usable))
    for_compute: int | None = None
    if flops is not None and inp.target_days is not None:
        if Decimal(option.bf16_tflops) <= 0:
            problems.append(_("it has no bf16 TFLOPS figure to size compute on"))
        else:
            for_compute = _gpus_for_compute(flops, inp.target_days, option)
    gpus_needed = max(for_memory, for_compute or 0)
    nodes = max(_ceil(Decimal(gpus_needed) / gpus), _min_nodes(band))
    gpu_count = nodes * gpus
    price = option.monthly_price_per_node
    total = None if price is None else Decimal(price) * nodes
    multi = nodes > 1
    bandwidth = option.inter_node_gbps

    if band != "<30B" and option.intra_node not in NVLINK_KINDS:
        problems.append(
            _(
                "30B+ models need NVLink or NVSwitch inside the node for tensor "
                "parallelism; it has %(intra)s"
            )
            % {"intra": _intra_label(option.intra_node)}
        )
    if inp.zero_stage == 0 and band == "<30B" and needed_gb > usable:
        problems.append(
            _(
                "plain data parallel keeps a whole copy of the model on every GPU: "
                "%(needed)s GB needed, %(usable)s GB usable per GPU (choose ZeRO 1–3)"
            )
            % {"needed": fmt(needed_gb), "usable": fmt(usable)}
        )
    if inp.zero_stage == 0 and band in ("30-70B", "70-100B") and needed_gb > usable * gpus:
        problems.append(
            _(
                "tensor parallel inside the node keeps a whole copy of the model in every "
                "node: %(needed)s GB needed, %(usable)s GB usable per node (choose ZeRO 1–3)"
            )
            % {"needed": fmt(needed_gb), "usable": fmt(usable * gpus)}
        )
    if multi:
        if band == "<30B" and bandwidth < MEDIUM_BANDWIDTH_GBPS:
            problems.append(
                _(
                    "%(nodes)s nodes need at least %(min)s Gb/s per node between them; "
                    "it has %(has)s Gb/s"
                )
                % {"nodes": nodes, "min": MEDIUM_BANDWIDTH_GBPS, "has": bandwidth}
            )
        if band in ("30-70B", "70-100B"):
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
        if band == ">=100B" and (
            option.fabric != "ib_ndr" or option.nic_speed_gbps < LARGE_NIC_GBPS
        ):
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
        elif gpu_count >= CLOS_MIN_GPUS and option.fabric != "ib_ndr":
            problems.append(
                _("%(gpus)s GPUs (64 or more) need InfiniBand NDR 400G; it has %(fabric)s")
                % {"gpus": gpu_count, "fabric": _fabric_label(option.fabric)}
            )
    return OptionPlan(
        option=option,
        gpus_for_memory=for_memory,
        gpus_for_compute=for_compute,
        gpus_needed=gpus_needed,
        gpu_count=gpu_count,
        node_count=nodes,
        monthly_total=total,
        problems=tuple(problems),
    )


def _rank(plan: OptionPlan) -> tuple[int, Decimal, int, str]:
    """Priced plans first by total monthly price, then fewer nodes, then code."""
    if plan.monthly_total is None:
        return (1, Decimal(0), plan.node_count, plan.option.code)
    return (0, plan.monthly_total, plan.node_count, plan.option.code)


def _parallelism(band: Band, plan: OptionPlan | None) -> tuple[str, list[Note]]:
    nodes = plan.node_count if plan else 0
    gpus = plan.gpu_count if plan else 0
    if band == "<30B":
        if plan is not None and nodes > 1:
            text = _(
                "Data parallel (PyTorch DDP, or ZeRO/FSDP to shard) across %(nodes)s nodes "
                "(%(gpus)s GPUs). The seeds size models under 30B on one 8-GPU node; more "
                "nodes here are for the deadline, and medium bandwidth between them is enough."
            ) % {"nodes": nodes, "gpus": gpus}
        elif plan is not None:
            text = _(
                "Data parallel (PyTorch DDP, or ZeRO/FSDP to shard) on one node (%(gpus)s "
                "GPUs): under 30B parameters one 8-GPU node with data parallelism is enough."
            ) % {"gpus": gpus}
        else:
            text = _(
                "Data parallel (PyTorch DDP, or ZeRO/FSDP to shard) on one 8-GPU node: "
                "under 30B parameters one 8-GPU node with data parallelism is enough."
            )
        return text, [Note(_("Under 30B: one 8-GPU node, data parallel."), "seeds")]
    if band == "30-70B":
        if plan is not None and nodes == 1:
            text = _(
                "Tensor parallel across the node's %(gpus)s GPUs over NVLink/NVSwitch; to go "
                "faster, add nodes with data parallel across them (at least 200 Gb/s "
                "between nodes)."
            ) % {"gpus": gpus}
        else:
            text = _(
                "Tensor parallel inside the node over NVLink/NVSwitch, data parallel across "
                "nodes; at least 200 Gb/s between nodes."
            )
        return text, [
            Note(
                _(
                    "30–70B: full NVLink inside the node, ≥ 200 Gb/s between nodes, tensor + "
                    "data parallel."
                ),
                "seeds",
            )
        ]
    if band == "70-100B":
        text = _(
            "Between the seeds' 30–70B and 100B+ bands: treat it like 30–70B (tensor "
            "parallel inside the node over NVLink/NVSwitch, data parallel across nodes), "
            "but plan for 400 Gb/s between nodes."
        )
        return text, [
            Note(
                _(
                    "70–100B is not covered by the seeds: we apply the 30–70B rules and "
                    "recommend 400 Gb/s between nodes as for 100B+."
                ),
                "estimate",
            )
        ]
    text = _(
        "Multi-node 3D parallel: tensor parallel inside the node, pipeline parallel across "
        "nodes, data parallel with ZeRO on top; expert parallel for MoE models. Use "
        "topology-aware placement (as few leaf switches as possible) and automatic "
        "recovery with regular checkpoints; 400 Gb/s between nodes."
    )
    return text, [
        Note(
            _(
                "100B and up: multi-node cluster, 400 Gb/s between nodes, 3D parallel with "
                "ZeRO and expert parallel, topology-aware scheduling and automatic fault "
                "recovery."
            ),
            "seeds",
        ),
        Note(
            _(
                "The seeds put a 175B-class model at 32–64 H100 80G at least; start with a "
                "small cluster rented by the day for profiling, then scale."
            ),
            "seeds",
        ),
    ]


def _fabric(band: Band, plan: OptionPlan) -> tuple[str, str, list[Note]]:
    """(fabric, topology, notes) for the recommended plan."""
    option = plan.option
    gpus = plan.gpu_count
    if plan.node_count == 1:
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
        return fabric, _("Single node: no switch fabric."), []

    placement = _("Place the nodes under as few leaf switches as possible.")
    notes: list[Note] = []
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
        notes.append(Note(_("64 GPUs and more: InfiniBand NDR 400G in a 3-tier CLOS."), "seeds"))
    elif gpus > ROCE_MAX_GPUS:
        fabric = _(
            "InfiniBand recommended: at %(gpus)s GPUs (more than 32) RoCE v2's PFC "
            "head-of-line blocking makes throughput unstable, while InfiniBand's "
            "credit-based flow control holds up (%(ib)s vs %(roce)s AllReduce utilisation "
            "at 32 nodes in the seeds' test)."
        ) % {"gpus": gpus, "ib": _percent(Decimal("0.98")), "roce": _percent(Decimal("0.82"))}
        topology = _then(_("Leaf-spine (2 tiers)."), placement)
        notes.append(
            Note(
                _(
                    "Above 32 GPUs InfiniBand's stability advantage is clear; RoCE v2 is "
                    "fine for small clusters only."
                ),
                "seeds",
            )
        )
        notes.append(
            Note(
                _(
                    "33–63 GPUs: the seeds name leaf-spine for 8–32 GPUs and CLOS from 64; "
                    "leaf-spine in between is our reading."
                ),
                "estimate",
            )
        )
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
        notes.append(
            Note(_("Up to 32 GPUs RoCE v2 is acceptable with a leaf-spine fabric."), "seeds")
        )
    if band == ">=100B" and gpus < CLOS_MIN_GPUS:
        fabric = _(
            "InfiniBand NDR 400G: 100B+ models need 400 Gb/s RDMA between nodes, even "
            "though at %(gpus)s GPUs the cluster size alone would allow RoCE v2."
        ) % {"gpus": gpus}
    elif band == "70-100B" and gpus <= ROCE_MAX_GPUS:
        fabric = _then(fabric, _("Plan for 400 Gb/s per node at this model size."))
    nics = _("%(name)s has %(nics)s× %(speed)s Gb/s %(fabric)s = %(total)s Gb/s per node.") % {
        "name": option.name,
        "nics": option.nic_count,
        "speed": option.nic_speed_gbps,
        "fabric": _fabric_label(option.fabric),
        "total": fmt(option.inter_node_gbps),
    }
    return _then(fabric, nics), topology, notes


# --- Entry point ------------------------------------------------------------------------


def size(inp: SizingInput, options: Sequence[NodeOption]) -> SizingResult:
    """Size a training job on the node types offered; raise SizingError for bad input.

    A result without a qualifying node type is not an error: ``recommended`` is None and
    ``reason_if_none`` says why.
    """
    inp = validate(inp)
    band = size_band(inp.params_billion)
    nbytes, factor, total, divisor, needed, notes = _memory(inp)
    formula = _formula(inp, nbytes, factor, total, divisor, needed)
    memory_range = (_gb(total / ZERO3_OPTIMISTIC_DIVISOR), needed) if inp.zero_stage == 3 else None

    flops = _flops(inp)
    plans = [_plan(inp, band, needed, flops, option) for option in options]
    qualifying = sorted((p for p in plans if p.qualifies), key=_rank)
    best = qualifying[0] if qualifying else None

    compute_formula = None
    if flops is not None and inp.target_days is not None:
        compute_formula = _(
            "%(factor)s × %(params)s B parameters × %(tokens)s B tokens = %(flops)s FLOPs"
        ) % {
            "factor": TRAINING_FLOPS_PER_PARAM_TOKEN,
            "params": fmt(inp.params_billion),
            "tokens": fmt(inp.target_tokens_billion or 0),
            "flops": fmt_sci(flops),
        }
        if best is not None and best.gpus_for_compute is not None:
            sustained = Decimal(best.option.bf16_tflops) * ASSUMED_MFU
            compute_formula = _(
                "%(flops)s; ÷ (%(tflops)s TFLOPS × %(mfu)s MFU = %(sustained)s TFLOPS per GPU "
                "× %(days)s days) = %(gpus)s GPUs"
            ) % {
                "flops": compute_formula,
                "tflops": fmt(best.option.bf16_tflops),
                "mfu": fmt(ASSUMED_MFU),
                "sustained": fmt(sustained),
                "days": fmt(inp.target_days),
                "gpus": best.gpus_for_compute,
            }
        notes.append(
            Note(
                _(
                    "Training compute ≈ %(factor)s × parameters × tokens; sustained "
                    "throughput per GPU = bf16 TFLOPS × an assumed %(mfu)s MFU."
                )
                % {"factor": TRAINING_FLOPS_PER_PARAM_TOKEN, "mfu": _percent(ASSUMED_MFU)},
                "estimate",
            )
        )
        if inp.precision == "fp32":
            notes.append(
                Note(
                    _(
                        "The compute estimate uses bf16 throughput; fp32 training is several "
                        "times slower, so expect a longer run."
                    ),
                    "estimate",
                )
            )

    parallelism, band_notes = _parallelism(band, best)
    notes.extend(band_notes)
    if band == ">=100B" and inp.zero_stage != 3:
        notes.append(
            Note(
                _(
                    "At 100B+ the seeds pair 3D parallelism with ZeRO stage 3 and a fast "
                    "inter-node network to get past the memory wall."
                ),
                "seeds",
            )
        )

    if best is None:
        reason = _reason_if_none(inp, plans)
        return SizingResult(
            input=inp,
            band=band,
            bytes_per_param=nbytes,
            memory_factor=factor,
            memory_total_gb=total,
            zero_divisor=divisor,
            memory_needed_gb=needed,
            memory_range_gb=memory_range,
            formula=formula,
            compute_flops=flops,
            compute_formula=compute_formula,
            notes=notes,
            gpus_for_memory=0,
            gpus_for_compute=None,
            gpu_count=0,
            node_count=0,
            recommended=None,
            reason_if_none=reason,
            monthly_total=None,
            parallelism=parallelism,
            fabric=_("No qualifying node type, so no fabric to recommend; see the reason."),
            topology=_("No qualifying node type, so no topology to recommend."),
            options_considered=plans,
        )

    option = best.option
    usable = Decimal(option.gpu_memory_gb) * USABLE_MEMORY_FRACTION
    if best.gpus_for_memory == 1:
        memory = _(
            "Memory: %(needed)s GB ÷ %(usable)s GB usable per %(gpu)s (%(share)s of "
            "%(memory)s GB) = %(gpus)s GPU."
        )
    else:
        memory = _(
            "Memory: %(needed)s GB ÷ %(usable)s GB usable per %(gpu)s (%(share)s of "
            "%(memory)s GB) = %(gpus)s GPUs."
        )
    memory %= {
        "needed": fmt(needed),
        "usable": fmt(usable),
        "gpu": option.gpu_model,
        "share": _percent(USABLE_MEMORY_FRACTION),
        "memory": fmt(Decimal(option.gpu_memory_gb)),
        "gpus": best.gpus_for_memory,
    }
    notes.append(Note(memory, "estimate"))
    rounding = _rounding_note(best)
    if rounding:
        notes.append(rounding)
    fabric, topology, fabric_notes = _fabric(band, best)
    notes.extend(fabric_notes)
    return SizingResult(
        input=inp,
        band=band,
        bytes_per_param=nbytes,
        memory_factor=factor,
        memory_total_gb=total,
        zero_divisor=divisor,
        memory_needed_gb=needed,
        memory_range_gb=memory_range,
        formula=formula,
        compute_flops=flops,
        compute_formula=compute_formula,
        notes=notes,
        gpus_for_memory=best.gpus_for_memory,
        gpus_for_compute=best.gpus_for_compute,
        gpu_count=best.gpu_count,
        node_count=best.node_count,
        recommended=option,
        reason_if_none="",
        monthly_total=best.monthly_total,
        parallelism=parallelism,
        fabric=fabric,
        topology=topology,
        options_considered=plans,
    )


def _rounding_note(plan: OptionPlan) -> Note | None:
    option = plan.option
    params = {
        "needed": plan.gpus_needed,
        "gpus": plan.gpu_count,
        "nodes": _nodes(plan.node_count),
        "name": option.name,
        "per_node": option.gpus_per_node,
    }
    if plan.node_count > _ceil(Decimal(plan.gpus_needed) / option.gpus_per_node):
        return Note(
            _(
                "Raised from %(needed)s to %(gpus)s GPUs = %(nodes)s of %(name)s: the seeds "
                "call for a multi-node cluster at 100B+."
            )
            % params,
            "seeds",
        )
    if plan.gpu_count != plan.gpus_needed:
        return Note(
            _(
                "Rounded up from %(needed)s to %(gpus)s GPUs = %(nodes)s of %(name)s "
                "(%(per_node)s GPUs each): nodes are rented whole."
            )
            % params,
            "estimate",
        )
    return None


def _reason_if_none(inp: SizingInput, plans: Sequence[OptionPlan]) -> str:
    size_text = fmt(inp.params_billion)
    if not plans:
        return _("No node types were offered to size a %(size)s B-parameter model on.") % {
            "size": size_text
        }
    # Translators: the separator between two problems of one node type.
    problem_separator = _("; ")
    # Translators: the separator between two node types' problems (a sentence each).
    option_separator = _(". ")
    parts = [
        # Translators: a node type's name, then why it does not qualify.
        _("%(name)s: %(problems)s")
        % {"name": p.option.name, "problems": problem_separator.join(p.problems)}
        for p in plans
    ]
    return _("No node type qualifies for a %(size)s B-parameter model. %(details)s.") % {
        "size": size_text,
        "details": option_separator.join(parts),
    }
