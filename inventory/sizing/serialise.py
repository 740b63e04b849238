"""The result as JSON-ready data (the ``size_model`` command's ``--json``) and the
seeds' own examples sized for real.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from core.i18n_hook import _
from inventory.sizing.explain import rule_of_thumb
from inventory.sizing.formatting import GB, fmt, fmt_gb, rounded
from inventory.sizing.hardware import NodeOption, reference_tflops
from inventory.sizing.inputs import SizingInput, validate
from inventory.sizing.memory import state_bytes
from inventory.sizing.plans import Plan, search_option
from inventory.sizing.result import SizingResult
from inventory.sizing.shape import band_of, shape_of


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
        "zero_requested": plan.zero_requested,
        "offload": plan.offload,
        "frameworks": list(plan.frameworks),
        "fits": plan.fits,
        "problems": list(plan.problems),
        "per_gpu_gib": plan.memory.as_dict(),
        "gpu_memory_gib": rounded(plan.gpu_memory_gib),
        "memory_share": rounded(plan.memory_share, 4),
        "memory_warning": plan.memory_warning,
        "host_ram": {
            "needed_gb_per_node": rounded(plan.host_needed_gb),
            "node_gb": plan.option.host_ram_gb,
            "offloaded_gb_per_gpu": rounded(plan.memory.host_per_gpu),
        },
        "monthly_price": None if plan.monthly_total is None else str(plan.monthly_total),
        "band_rule": {"text": plan.band_rule, "met": plan.band_rule_met},
        "compute": {
            "reference_tflops": reference_tflops(plan.option),
            "sustained_tflops_per_gpu": rounded(plan.sustained_tflops),
            "mfu_assumed": True,
            "train_days": None if plan.train_days is None else rounded(plan.train_days),
            "tokens_per_s_estimate": None
            if plan.tokens_per_s is None
            else rounded(plan.tokens_per_s, 0),
            "sequences_per_replica": plan.sequences_per_replica or None,
        },
        "step": None
        if plan.step is None
        else {
            "compute_s": rounded(plan.step.compute, 3),
            "data_parallel_s": rounded(plan.step.data_parallel, 3),
            "tensor_parallel_s": rounded(plan.step.tensor_parallel, 3),
            "expert_parallel_s": rounded(plan.step.expert_parallel, 3),
            "pipeline_s": rounded(plan.step.pipeline, 3),
            "total_s": rounded(plan.step.total, 3),
            "data_parallel_gb_per_gpu": rounded(plan.step.dp_bytes / GB, 2),
            "data_parallel_busbw_gbs": rounded(plan.step.dp_bandwidth, 1),
            "network_bound": plan.network_bound,
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
            "kv_precision": inp.kv_precision,
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
        "frameworks": result.frameworks,
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
        outcome = search_option(inp, shape, band_of(shape), option)
        w, g, k = state_bytes(inp.precision, inp.optimizer)
        states = (w + g + k) * shape.params_total / GB
        if outcome.plan is not None:
            plan = outcome.plan
            real = _("%(gpus)s × %(gpu)s (%(layout)s), %(per_gpu)s GiB per GPU") % {
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
