"""Explanations beside a plan: the seeds' rule of thumb (parameters × bytes × 3.5,
ZeRO-3 "cuts 4–8×", shown beside the real estimate, never used to decide a plan), and
each part of the memory and compute with its formula and its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from core.i18n_hook import _, ngettext
from inventory.sizing.formatting import (
    BILLION,
    GB,
    GIB,
    OPTIMIZER_LABELS,
    billions,
    fabric_label,
    fmt,
    fmt_gb,
    fmt_sci,
    percent,
    round_gb,
    then,
)
from inventory.sizing.hardware import reference_tflops
from inventory.sizing.inputs import SizingInput
from inventory.sizing.memory import (
    HEADROOM_FIXED_GB,
    HEADROOM_FRACTION,
    INFER_CHUNK_TOKENS,
    WEIGHT_BYTES,
    kv_bytes_per_value,
    kv_cache_bytes,
    state_bytes,
)
from inventory.sizing.plans import SECONDS_PER_DAY, Plan
from inventory.sizing.shape import Shape

Source = Literal["seeds", "estimate", "paper"]


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


@dataclass(frozen=True)
class Note:
    """One line of explanation and where its rule comes from."""

    text: str
    source: Source

    def __str__(self) -> str:
        if self.source == "seeds":
            label = _("provider's sizing rule")
        elif self.source == "paper":
            label = _("published formula")
        else:
            label = _("our estimate")
        # Translators: a note followed by where its rule comes from ("provider's sizing
        # rule" or "our estimate").
        return _("%(text)s (%(source)s)") % {"text": self.text, "source": label}


@dataclass(frozen=True)
class RuleOfThumb:
    """The seeds' estimate: parameters × bytes × 3.5, ZeRO-3 ÷ 4–8."""

    total_gb: Decimal
    needed_gb: Decimal
    range_gb: tuple[Decimal, Decimal] | None
    formula: str


def rule_of_thumb(inp: SizingInput, shape: Shape) -> RuleOfThumb:
    """The seeds' formula: parameters × bytes × 3.5, ZeRO-3 ÷ 4 (÷ 8 at best)."""
    params_b = Decimal(repr(shape.params_total / BILLION)).quantize(Decimal("0.01"))
    nbytes = RULE_BYTES.get(inp.precision, 2)
    total = round_gb(params_b * nbytes * RULE_FACTOR)
    divisor = RULE_ZERO_DIVISOR[inp.zero_stage]
    needed = round_gb(total / divisor)
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
        best = round_gb(total / RULE_ZERO3_OPTIMISTIC)
        low = (best, needed)
        text = _("%(formula)s (÷ %(divisor)s = %(best)s GB at best)") % {
            "formula": text,
            "divisor": fmt(RULE_ZERO3_OPTIMISTIC),
            "best": fmt(best),
        }
    return RuleOfThumb(total, needed, low, text)


def rule_comparison_text(
    inp: SizingInput, shape: Shape, rule: RuleOfThumb, plan: Plan | None
) -> str:
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
        text = then(
            text,
            _(
                "Real estimate: %(per_gpu)s GiB (%(per_gpu_gb)s GB) per GPU on %(gpus)s × "
                "%(gpu)s (%(layout)s, %(zero)s), against %(rule)s GB by the rule."
            )
            % {
                "per_gpu": fmt_gb(plan.memory.total),
                "per_gpu_gb": fmt_gb(plan.memory.total * GIB / GB),
                "gpus": plan.gpus,
                "gpu": plan.option.gpu_model,
                "layout": plan.layout,
                "zero": plan.zero_label,
                "rule": fmt(rule.needed_gb),
            },
        )
    return text


# --- Explanations ---------------------------------------------------------------------------


def _inference_memory_notes(inp: SizingInput, shape: Shape) -> list[Note]:
    """Serving: the weights, the KV cache and the working activations."""
    lines: list[Note] = []
    nbytes = WEIGHT_BYTES[inp.precision]
    lines.append(
        Note(
            _(
                "Weights: %(params)s B parameters × %(bytes)s bytes (%(precision)s) = "
                "%(total)s GiB, split by TP × PP."
            )
            % {
                "params": billions(shape.params_total),
                "bytes": fmt(nbytes, Decimal("0.001")),
                "precision": inp.precision,
                "total": fmt_gb(shape.params_total * nbytes / GIB),
            },
            "paper",
        )
    )
    kv_bytes = int(kv_bytes_per_value(inp))
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
                    "%(total)s GiB (grouped-query attention: %(kv_heads)s KV heads, not "
                    "%(heads)s attention heads), shared by the replicas' sequences and "
                    "split by TP and PP."
                )
                % {
                    "layers": shape.layers,
                    "kv_heads": shape.kv_heads,
                    "head_dim": shape.head_dim,
                    "bytes": kv_bytes,
                    "context": fmt(inp.context),
                    "seqs": fmt(inp.concurrency),
                    "total": fmt_gb(kv / GIB),
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
                    "%(seqs)s sequences = %(total)s GiB, shared by the replicas' sequences."
                )
                % {
                    "layers": shape.layers,
                    "elems": shape.kv_elems,
                    "bytes": kv_bytes,
                    "context": fmt(inp.context),
                    "seqs": fmt(inp.concurrency),
                    "total": fmt_gb(kv / GIB),
                },
                "paper",
            )
        )
    if inp.kv_precision == "fp8":
        kv_text = _(
            "KV cache in fp8 (--kv-cache-dtype fp8), 1 byte per value, whatever the weights "
            "are stored in."
        )
    else:
        kv_text = _(
            "KV cache kept in %(kind)s (%(bytes)s bytes per value), as vLLM and SGLang do "
            "unless fp8 KV is set, whatever the weights are stored in."
        ) % {"kind": "fp32" if inp.precision == "fp32" else "bf16/fp16", "bytes": kv_bytes}
    lines.append(Note(kv_text, "estimate"))
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
    return lines


def _training_memory_notes(inp: SizingInput, shape: Shape) -> list[Note]:
    """Training: model states under ZeRO, MoE experts, offload and activations."""
    lines: list[Note] = []
    w, g, k = state_bytes(inp.precision, inp.optimizer)
    lines.append(
        Note(
            _(
                "Model states: %(optimizer)s at %(precision)s keeps %(w)s bytes of weights + "
                "%(g)s of gradients + %(k)s of optimizer states = %(total)s bytes per "
                "parameter, %(gb)s GiB for %(params)s B parameters."
            )
            % {
                "optimizer": _(OPTIMIZER_LABELS[inp.optimizer]),
                "precision": inp.precision,
                "w": fmt(w),
                "g": fmt(g),
                "k": fmt(k),
                "total": fmt(w + g + k),
                "gb": fmt_gb((w + g + k) * shape.params_total / GIB),
                "params": billions(shape.params_total),
            },
            "paper",
        )
    )
    lines.append(
        Note(
            _(
                "ZeRO (Rajbhandari et al. 2019): stage 0 (w+g+K)Ψ; stage 1 (w+g)Ψ + "
                "KΨ/N_d; stage 2 wΨ + (g+K)Ψ/N_d; stage 3 (w+g+K)Ψ/N_d, with Ψ the "
                "parameters of one TP × PP shard and N_d the data-parallel degree. With "
                "N_d = 1 there is nothing to partition and the stage does nothing."
            ),
            "paper",
        )
    )
    if inp.zero_stage == 3:
        lines.append(
            Note(
                _(
                    "ZeRO-3 gather/prefetch buffer, on top of the paper's model states: the "
                    "full 16-bit weights of the layer in use and of the next one prefetched, "
                    "2 × w × Ψ/L (none where N_d = 1)."
                ),
                "estimate",
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
                    "total": billions(shape.params_total),
                    "experts": billions(shape.expert_params),
                    "n": shape.experts,
                    "active": billions(shape.params_active),
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
    return lines


def memory_notes(inp: SizingInput, shape: Shape, plan: Plan | None) -> list[Note]:
    """Each part of the memory per GPU with its formula and its source."""
    if inp.mode == "infer":
        lines = _inference_memory_notes(inp, shape)
    else:
        lines = _training_memory_notes(inp, shape)
    lines.append(
        Note(
            _(
                "Headroom: %(fixed)s GiB for the CUDA context, cuBLAS workspace and NCCL "
                "buffers + %(share)s of the rest for allocator fragmentation."
            )
            % {"fixed": fmt(HEADROOM_FIXED_GB), "share": percent(HEADROOM_FRACTION)},
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
                    "Per GPU on %(layout)s: %(states)s model states + %(gather)s ZeRO-3 "
                    "gather buffer + %(acts)s activations + %(kv)s KV cache + %(headroom)s "
                    "headroom = %(total)s GiB of %(have)s GiB (%(share)s)."
                )
                % {
                    "layout": plan.layout,
                    "states": fmt_gb(m.model_states),
                    "gather": fmt_gb(m.gather_buffer),
                    "acts": fmt_gb(m.activations),
                    "kv": fmt_gb(m.kv_cache),
                    "headroom": fmt_gb(m.headroom),
                    "total": fmt_gb(m.total),
                    "have": fmt(plan.gpu_memory_gib),
                    "share": percent(plan.memory_share, Decimal("0.1")),
                },
                "estimate",
            )
        )
        if plan.memory_warning:
            lines.append(
                Note(
                    _(
                        "This plan uses %(share)s of each GPU's memory (over 90%%): a longer "
                        "sequence, a bigger batch or a memory spike may not fit; the next "
                        "larger plan leaves room."
                    )
                    % {"share": percent(plan.memory_share, Decimal("0.1"))},
                    "estimate",
                )
            )
    return lines


def _step_notes(inp: SizingInput, plan: Plan) -> list[Note]:
    """One micro-batch's compute against its communication, and whether the network
    holds the plan back."""
    step = plan.step
    assert step is not None
    lines = [
        Note(
            _(
                "One step (micro-batch %(batch)s × %(seq)s tokens per GPU, no gradient "
                "accumulation): %(compute)s s of compute; data-parallel traffic "
                "%(traffic)s GB per GPU (%(what)s) at %(bandwidth)s GB/s = %(dp)s s, "
                "overlapped with the compute; tensor, expert and pipeline parallel traffic "
                "%(other)s s on top."
            )
            % {
                "batch": inp.micro_batch,
                "seq": fmt(inp.seq_len),
                "compute": fmt(step.compute, Decimal("0.01")),
                "traffic": fmt_gb(step.dp_bytes / GB),
                "what": _("ZeRO-3 re-gathers the weights every micro-batch: 3 × w × Ψ")
                if plan.zero == 3
                else _("gradients: 2 × w × Ψ"),
                "bandwidth": fmt(step.dp_bandwidth, Decimal(1)),
                "dp": fmt(step.data_parallel, Decimal("0.01")),
                "other": fmt(
                    step.tensor_parallel + step.expert_parallel + step.pipeline,
                    Decimal("0.01"),
                ),
            },
            "estimate",
        )
    ]
    if plan.network_bound:
        lines.append(
            Note(
                _(
                    "Network-bound: the traffic between nodes (%(dp)s s) takes longer than "
                    "the compute (%(compute)s s), so the GPUs wait on the %(fabric)s links. "
                    "A faster fabric, a bigger micro-batch, tensor parallel inside the node "
                    "or a lower ZeRO stage would help."
                )
                % {
                    "dp": fmt(step.data_parallel, Decimal("0.01")),
                    "compute": fmt(step.compute, Decimal("0.01")),
                    "fabric": fabric_label(plan.option.fabric),
                },
                "estimate",
            )
        )
    return lines


def compute_notes(inp: SizingInput, shape: Shape, plan: Plan | None) -> list[Note]:
    lines: list[Note] = []
    mfu = percent(inp.mfu)
    if inp.mode == "train" and inp.target_tokens_billion is not None:
        flops = 6 * shape.params_active * float(inp.target_tokens_billion) * BILLION
        lines.append(
            Note(
                _(
                    "Training compute: 6 × %(params)s B %(kind)s parameters × %(tokens)s B "
                    "tokens = %(flops)s FLOPs."
                )
                % {
                    "params": billions(shape.params_active),
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
                        "%(mfu)s MFU, assumed) = %(compute_days)s days of compute; with the "
                        "communication the compute cannot hide, %(days)s days."
                    )
                    % {
                        "flops": fmt_sci(flops),
                        "gpus": plan.gpus,
                        "tflops": fmt(reference_tflops(plan.option)),
                        "mfu": mfu,
                        "compute_days": fmt(
                            flops / (plan.gpus * plan.sustained_tflops * 1e12 * SECONDS_PER_DAY),
                            Decimal("0.1"),
                        ),
                        "days": fmt(plan.train_days, Decimal("0.1")),
                    },
                    "estimate",
                )
            )
    if inp.mode == "train" and plan is not None and plan.step is not None:
        lines.extend(_step_notes(inp, plan))
    if inp.mode == "infer":
        lines.append(
            Note(
                _(
                    "Throughput estimate: the replicas share the %(seqs)s concurrent "
                    "sequences; each decode step reads the weights (for an MoE model only "
                    "the experts the batch's tokens are routed to) and the KV cache once "
                    "(memory-bandwidth bound), capped by 2 × %(params)s B active parameters "
                    "FLOPs per token at the measured GEMM × %(mfu)s MFU (assumed)."
                )
                % {
                    "seqs": fmt(inp.concurrency),
                    "params": billions(shape.params_active),
                    "mfu": mfu,
                },
                "estimate",
            )
        )
        if plan is not None:
            lines.append(
                Note(
                    ngettext(
                        "This plan: %(replicas)s replica serving %(per)s sequences; each GPU "
                        "reads %(weights)s GiB of weights and %(kv)s GiB of KV cache per "
                        "step.",
                        "This plan: %(replicas)s replicas serving %(per)s sequences each; "
                        "each GPU reads %(weights)s GiB of weights and %(kv)s GiB of KV "
                        "cache per step.",
                        plan.dp,
                    )
                    % {
                        "replicas": plan.dp,
                        "per": fmt(plan.sequences_per_replica),
                        "weights": fmt_gb(plan.weights_read_gib),
                        "kv": fmt_gb(plan.memory.kv_cache),
                    },
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
