"""The sizing wizard's calculator: a pure package, no Django.

A model (a known architecture or a size and shape), how it is trained or served, and
the node types on offer (``NodeOption``, built by the caller from the inventory) go in;
plans that can run come out: TP × PP × DP (× EP), nodes, memory per GPU part by part
with its formula, fabric, the seeds' band rule, price and time. The page
(portal.shop.wizard) and the command (``manage.py size_model``) both call ``size()``
or ``evaluate()`` here. GPU facts come from the node options (built from the ``GPUModel``
rows) and, where an option leaves a figure empty, from ``inventory.gpus``.

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
- ZeRO-3's gather/prefetch buffer on its own line (two layers' 16-bit weights, 2·w·Ψ/L),
  none where the data-parallel degree is 1 (ZeRO has nothing to partition there).
- everything per GPU is in GiB (2^30 bytes), as the cards have it ("80G" is 80 GiB); a
  plan over 90% of it is flagged.
- headroom: a fixed 2 GiB for the CUDA context, cuBLAS workspace and NCCL buffers plus
  10% of the rest for allocator fragmentation (our estimate).

Compute: 6 × N × D FLOPs to train (Kaplan et al. 2020), 2 × N per generated token,
over the measured bf16 GEMM reference of VALIDATION.md × an MFU (assumed 40% unless the
customer says otherwise); MoE counts active parameters. Training time adds the
communication the compute cannot hide, from the fabric's bandwidth (``network``); a plan
whose traffic between nodes outlasts its compute is network-bound. Inference: replicas
share the concurrent sequences; an MoE decode reads only the routed experts' weights.

The seeds' rule of thumb (parameters × bytes × 3.5, ZeRO-3 "cuts 4–8×") is shown beside
the real estimate, never used to decide a plan. The seeds' fabric rules stay rules.

Every user-facing string goes through ``_()`` from ``core.i18n_hook``; numbers are
formatted here and passed in as named placeholders.

Modules, bottom first: ``formatting`` (numbers, labels), ``architectures`` (published
model shapes), ``hardware`` (``NodeOption``, what a GPU runs), ``inputs``
(``SizingInput``, ``validate``), ``shape`` (the model as sized, size bands), ``memory``
(the formulas above, memory per GPU), ``network`` (bandwidths, one step's communication),
``plans`` (one layout, the search), ``explain``
(the rule of thumb, the memory and compute notes), ``advice`` (parallelism, fabric, what
would fit), ``result`` (``size``, ``evaluate``), ``serialise`` (JSON, the seeds' examples).
"""

from __future__ import annotations

from inventory.sizing.advice import shortfall_text
from inventory.sizing.architectures import ARCHITECTURES, Architecture
from inventory.sizing.explain import Note, RuleOfThumb, rule_of_thumb
from inventory.sizing.hardware import (
    NodeOption,
    gpu_architecture,
    precision_problem,
    reference_tflops,
)
from inventory.sizing.inputs import (
    DEFAULT_MFU,
    INFER_PRECISIONS,
    KV_PRECISIONS,
    MODES,
    OFFLOADS,
    OPTIMIZERS,
    PRECISIONS,
    ZERO_STAGES,
    SizingError,
    SizingInput,
    validate,
)
from inventory.sizing.memory import (
    WEIGHT_BYTES,
    Memory,
    activation_bytes,
    activation_bytes_per_layer,
    gather_buffer_bytes,
    kv_bytes_per_value,
    kv_cache_bytes,
    memory_per_gpu,
    model_states_bytes,
    model_states_gb,
    state_bytes,
)
from inventory.sizing.network import StepTime, inter_node_busbw, intra_node_busbw
from inventory.sizing.plans import MAX_NODES, OptionOutcome, Plan
from inventory.sizing.result import SizingResult, evaluate, size
from inventory.sizing.serialise import SeedExample, plan_json, result_json, seed_examples
from inventory.sizing.shape import Band, Shape, shape_of, size_band

__all__ = [
    "ARCHITECTURES",
    "DEFAULT_MFU",
    "INFER_PRECISIONS",
    "KV_PRECISIONS",
    "MAX_NODES",
    "MODES",
    "OFFLOADS",
    "OPTIMIZERS",
    "PRECISIONS",
    "WEIGHT_BYTES",
    "ZERO_STAGES",
    "Architecture",
    "Band",
    "Memory",
    "NodeOption",
    "Note",
    "OptionOutcome",
    "Plan",
    "RuleOfThumb",
    "SeedExample",
    "Shape",
    "SizingError",
    "SizingInput",
    "SizingResult",
    "StepTime",
    "activation_bytes",
    "activation_bytes_per_layer",
    "evaluate",
    "gather_buffer_bytes",
    "gpu_architecture",
    "inter_node_busbw",
    "intra_node_busbw",
    "kv_bytes_per_value",
    "kv_cache_bytes",
    "memory_per_gpu",
    "model_states_bytes",
    "model_states_gb",
    "plan_json",
    "precision_problem",
    "reference_tflops",
    "result_json",
    "rule_of_thumb",
    "seed_examples",
    "shape_of",
    "shortfall_text",
    "size",
    "size_band",
    "state_bytes",
    "validate",
]
