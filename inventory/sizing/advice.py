"""Advice on a result: the parallelism and fabric to use (by the seeds' rules), why
nothing qualifies, and the nearest change that would fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal

from core.i18n_hook import _, ngettext
from inventory.sizing.formatting import (
    BILLION,
    billions,
    fabric_label,
    fmt,
    percent,
    percent_range,
    then,
)
from inventory.sizing.hardware import NodeOption
from inventory.sizing.inputs import SizingInput
from inventory.sizing.memory import WEIGHT_BYTES
from inventory.sizing.plans import (
    CLOS_MIN_GPUS,
    MAX_NODES,
    NVLINK_KINDS,
    ROCE_MAX_GPUS,
    OptionOutcome,
    Plan,
    search_option,
)
from inventory.sizing.shape import Band, Shape, band_rule, size_band


def parallelism_text(band: Band, plan: Plan | None, mode: str) -> str:
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
        "zero": plan.zero_label,
        "nodes": plan.nodes,
        "gpus": plan.gpus,
    }
    if band_rule(band) == "3d_parallel":
        return (
            _(
                "Multi-node 3D parallel: tensor parallel inside the node, pipeline parallel across "
                "nodes, data parallel with ZeRO on top; expert parallel for MoE models. Use "
                "topology-aware placement (as few leaf switches as possible) and automatic "
                "recovery with regular checkpoints; 400 Gb/s between nodes."
            )
            + " "
            + ngettext(
                "This plan: %(layout)s, %(zero)s, %(gpus)s GPUs on %(nodes)s node.",
                "This plan: %(layout)s, %(zero)s, %(gpus)s GPUs on %(nodes)s nodes.",
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
                "This plan: %(layout)s, %(zero)s, %(gpus)s GPUs on %(nodes)s node.",
                "This plan: %(layout)s, %(zero)s, %(gpus)s GPUs on %(nodes)s nodes.",
                plan.nodes,
            )
            % parts
        )
    if plan.zero is None:
        return _("One GPU: no parallelism, so no ZeRO stage applies.")
    return (
        ngettext(
            "Data parallel (PyTorch DDP, or ZeRO/FSDP to shard) across %(gpus)s GPUs on %(nodes)s "
            "node, %(zero)s.",
            "Data parallel (PyTorch DDP, or ZeRO/FSDP to shard) across %(gpus)s GPUs on %(nodes)s "
            "nodes, %(zero)s.",
            plan.nodes,
        )
        % parts
    )


def zero_note(plan: Plan | None, requested: int) -> str:
    """Why the plan carries no ZeRO stage although one was asked for ("" otherwise)."""
    if plan is None or plan.zero is not None or requested == 0:
        return ""
    return _(
        "ZeRO-%(stage)s was asked for, but this plan is %(layout)s: with a data-parallel "
        "degree of 1 there is nothing for ZeRO to partition, so no ZeRO stage applies; "
        "tensor and pipeline parallelism split the model instead."
    ) % {"stage": requested, "layout": plan.layout}


def frameworks_text(plan: Plan | None) -> str:
    if plan is None or not plan.frameworks:
        return ""
    # Translators: the separator between two framework names.
    return _("Runs on: %(names)s.") % {"names": _(", ").join(plan.frameworks)}


def fabric_advice(band: Band, plan: Plan | None) -> tuple[str, str]:
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
            "InfiniBand NDR 400G required: at %(gpus)s GPUs (64 or more) our sizing rules make IB "
            "NDR 400 Gb/s mandatory so that AllReduce does not hold training back."
        ) % {"gpus": gpus}
        topology = then(
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
            "at 32 nodes in the provider's test)."
        ) % {"gpus": gpus, "ib": percent(Decimal("0.98")), "roce": percent(Decimal("0.82"))}
        topology = then(_("Leaf-spine (2 tiers)."), placement)
    else:
        fabric = _(
            "RoCE v2 is acceptable at %(gpus)s GPUs (32 or fewer): it costs %(saving)s less "
            "than InfiniBand and its head-of-line blocking only hurts larger clusters; "
            "InfiniBand works too."
        ) % {"gpus": gpus, "saving": percent_range(Decimal("0.30"), Decimal("0.50"))}
        topology = then(
            _(
                "Leaf-spine (2 tiers) is enough for 8–32 GPUs, each server dual-homed to two "
                "switches for redundancy."
            ),
            placement,
        )
    if band_rule(band) == "3d_parallel" and gpus < CLOS_MIN_GPUS:
        fabric = _(
            "InfiniBand NDR 400G: 100B+ models need 400 Gb/s RDMA between nodes, even "
            "though at %(gpus)s GPUs the cluster size alone would allow RoCE v2."
        ) % {"gpus": gpus}
    nics = _("%(name)s has %(nics)s× %(speed)s Gb/s %(fabric)s = %(total)s Gb/s per node.") % {
        "name": option.name,
        "nics": option.nic_count,
        "speed": option.nic_speed_gbps,
        "fabric": fabric_label(option.fabric),
        "total": fmt(option.inter_node_gbps),
    }
    return then(fabric, nics), topology


def reason_if_none_text(shape: Shape, outcomes: Sequence[OptionOutcome]) -> str:
    if not outcomes:
        return _("No node types were offered to size a %(size)s B-parameter model on.") % {
            "size": billions(shape.params_total)
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
        "size": billions(shape.params_total),
        "details": option_separator.join(parts),
    }


def what_would_fit_text(inp: SizingInput, shape: Shape, options: Sequence[NodeOption]) -> str:
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
            outcome = search_option(changed, shape, band, option)
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
