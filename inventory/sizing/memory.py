"""Memory per GPU, part by part (bytes; each one a published formula), in GiB.

Training: model states under ZeRO (Rajbhandari et al. 2019, §3 and Fig. 1), the ZeRO-3
gather/prefetch buffer on a line of its own (the paper's 16Ψ/N_d counts none), offload
(ZeRO-Offload, ZeRO-Infinity), activations (Korthikanti et al. 2022, §4). Inference:
weights × bytes per parameter and the KV cache of the sequences one replica serves.
Headroom: a fixed 2 GiB for the CUDA context, cuBLAS workspace and NCCL buffers plus 10%
of the rest (our estimate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inventory.sizing.formatting import GB, GIB, rounded
from inventory.sizing.inputs import SizingInput
from inventory.sizing.shape import Shape

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


HEADROOM_FIXED_GB = 2.0  # GiB: CUDA context + cuBLAS workspace + NCCL buffers (estimate)
HEADROOM_FRACTION = 0.10  # allocator fragmentation (estimate)
HOST_RESERVE_FRACTION = 0.10  # host RAM kept for the OS, dataloaders, pinned buffers


INFER_CHUNK_TOKENS = 8192  # prefill chunk (vLLM's default max batched tokens)


@dataclass(frozen=True)
class Memory:
    """Memory per GPU in GiB (2^30 bytes), as the cards have it.

    ``model_states`` is the ZeRO paper's figure (its 16Ψ/N_d at stage 3);
    ``gather_buffer`` is what ZeRO-3 gathers on top of it (a layer in use and the next
    one prefetched), 0 below stage 3 or with nothing to gather (DP 1)."""

    model_states: float
    activations: float
    kv_cache: float
    headroom: float
    host_per_gpu: float = 0.0  # offloaded to host RAM (or NVMe)
    gather_buffer: float = 0.0

    @property
    def total(self) -> float:
        return (
            self.model_states
            + self.gather_buffer
            + self.activations
            + self.kv_cache
            + self.headroom
        )

    def as_dict(self) -> dict[str, float]:
        return {
            "model_states": rounded(self.model_states),
            "gather_buffer": rounded(self.gather_buffer),
            "activations": rounded(self.activations),
            "kv_cache": rounded(self.kv_cache),
            "headroom": rounded(self.headroom),
            "total": rounded(self.total),
        }


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
    """In the paper's GB (10^9 bytes), as its Fig. 1 prints them."""
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


def kv_bytes_per_value(inp: SizingInput) -> float:
    """The KV cache's own precision: engines keep it in the activations' 16-bit type
    (fp32 for an fp32 model), whatever the weights are stored in, unless fp8 KV is set
    (vLLM and SGLang ``--kv-cache-dtype fp8``)."""
    if inp.kv_precision == "fp8":
        return 1.0
    return 4.0 if inp.precision == "fp32" else 2.0


def sequences_per_replica(inp: SizingInput, replicas: int) -> int:
    """The requested concurrent sequences shared out over the replicas (rounded up)."""
    return max(1, math.ceil(inp.concurrency / max(1, replicas)))


def _headroom(used: float) -> float:
    return HEADROOM_FIXED_GB + HEADROOM_FRACTION * used


def memory_per_gpu(
    inp: SizingInput, shape: Shape, *, tp: int, pp: int, dp: int, ep: int = 1
) -> Memory:
    """Memory per GPU of one layout (GiB), part by part. For inference ``dp`` is the
    number of replicas, which share the requested concurrent sequences."""
    if inp.mode == "infer":
        nbytes = WEIGHT_BYTES[inp.precision]
        weights = shape.params_total * nbytes / (tp * pp)
        seqs = sequences_per_replica(inp, dp)
        kv = kv_cache_bytes(
            layers=shape.layers,
            kv_heads=shape.kv_heads,
            head_dim=shape.head_dim,
            bytes_per_value=kv_bytes_per_value(inp),
            context=inp.context,
            concurrency=seqs,
            tp=tp,
            pp=pp,
            kv_elems=shape.kv_elems
            if shape.kv_elems != 2 * shape.kv_heads * shape.head_dim
            else None,
        )
        chunk = min(INFER_CHUNK_TOKENS, inp.context * seqs)
        acts = chunk * (4 * shape.hidden + 2 * shape.ffn) * 2 / tp
        used = (weights + kv + acts) / GIB
        return Memory(weights / GIB, acts / GIB, kv / GIB, _headroom(used))

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
    gather = gather_buffer_bytes(
        shape, w=w, stage=stage, dense=dense, experts=experts, dp=dp, expert_dp=expert_dp, pp=pp
    )
    acts = activation_bytes(
        shape,
        seq=inp.seq_len,
        batch=inp.micro_batch,
        tp=tp,
        ckpt=inp.checkpointing,
        flash=inp.flash_attention,
    )
    used = (states + gather + acts) / GIB
    return Memory(
        states / GIB,
        acts / GIB,
        0.0,
        _headroom(used),
        host_per_gpu=host / GIB,
        gather_buffer=gather / GIB,
    )


def gather_buffer_bytes(
    shape: Shape,
    *,
    w: float,
    stage: int,
    dense: float,
    experts: float,
    dp: int,
    expert_dp: int,
    pp: int,
) -> float:
    """ZeRO-3 gathers a layer's full 16-bit weights before using it and prefetches the
    next (DeepSpeed's prefetch bucket, FSDP's forward prefetch): two layers of this
    stage's shard, 2·w·Ψ/L. Nothing is gathered where nothing is partitioned (DP 1)."""
    if stage != 3:
        return 0.0
    gathered = (dense if dp > 1 else 0.0) + (experts if expert_dp > 1 else 0.0)
    return 2 * w * gathered / max(1, math.ceil(shape.layers / pp))
