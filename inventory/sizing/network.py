"""Communication time of one training step and the bandwidths it runs at: pure, no Django.

A step here is one micro-batch on every GPU, with no gradient accumulation (ZeRO-3 pays
its traffic every micro-batch anyway; stages 0–2 would pay theirs once per accumulated
step, so for them this is the conservative case).

Traffic per GPU (bytes of the ring; ZeRO paper §7, Rajbhandari et al. 2019): stages 0–2
move 2Ψ (the gradient all-reduce, or its reduce-scatter + all-gather), ZeRO-3 moves 3Ψ
(the weights all-gathered for the forward and again for the backward, the gradients
reduce-scattered), each × w bytes × (N_d − 1)/N_d, Ψ the parameters of one TP × PP shard.
Tensor parallelism (Megatron-LM, Korthikanti et al. 2022 §3) all-reduces b·s·h 16-bit
activations 4 times per layer (2 forward, 2 backward; 6 with recomputation), over NVLink
inside the node, on the critical path. Expert parallelism all-to-alls each token's hidden
state to its k experts and back, forward and backward. Pipeline parallelism sends one
micro-batch's activations forward and its gradients back per stage boundary.

Bandwidths (bus bandwidth, nccl-tests' busbw, so that time = volume ÷ busbw): inside a
node the golden all-reduce busbw of ../shared/VALIDATION.md (8×H100 460 GB/s, 8×A100 228);
across nodes a ring crosses each node boundary once per chunk, so a node's NICs together
carry it: 0.92 × NICs × line rate for RDMA (VALIDATION.md: 46 of 50 GB/s per NDR NIC),
0.5 × for plain Ethernet/TCP (our guess). Data-parallel groups that run side by side (one
per TP rank) share the node's NICs. DP traffic overlaps the compute (ZeRO-3 prefetch, DDP
buckets); TP, EP and PP traffic do not. Everything here is our estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inventory.gpus import gpu_facts
from inventory.sizing.hardware import NodeOption

NVLINK_BUSBW_GBS: dict[int, float] = {4: 460.0, 3: 228.0}  # VALIDATION.md golden nodes
PCIE_BUSBW_GBS = 20.0  # PCIe 4.0 x16 through the host bridge (our guess)
RDMA_EFFICIENCY = 0.92  # VALIDATION.md: 46 of 50 GB/s per NDR 400G NIC
TCP_EFFICIENCY = 0.5  # NCCL over sockets on plain Ethernet (our guess)
RDMA = frozenset({"ib_ndr", "ib_hdr", "roce_v2"})
NVLINK = frozenset({"nvswitch", "nvlink"})


def intra_node_busbw(option: NodeOption) -> float:
    """GB/s of an all-reduce among the node's GPUs."""
    if option.intra_node in NVLINK:
        facts = gpu_facts(option.gpu_model)
        generation = facts.nvlink_generation if facts is not None else None
        return NVLINK_BUSBW_GBS.get(generation or 3, NVLINK_BUSBW_GBS[3])
    return PCIE_BUSBW_GBS


def inter_node_busbw(option: NodeOption) -> float:
    """GB/s a ring across nodes reaches: all of a node's NICs together."""
    efficiency = RDMA_EFFICIENCY if option.fabric in RDMA else TCP_EFFICIENCY
    return efficiency * option.inter_node_gbps / 8


@dataclass(frozen=True)
class StepTime:
    """Seconds per step (one micro-batch on every GPU), part by part."""

    compute: float
    data_parallel: float  # overlaps the compute
    tensor_parallel: float
    expert_parallel: float
    pipeline: float
    dp_bandwidth: float  # GB/s the data-parallel traffic runs at
    dp_bytes: float  # per GPU per step
    across_nodes: bool  # the data-parallel traffic crosses the network

    @property
    def total(self) -> float:
        exposed = max(0.0, self.data_parallel - self.compute)
        return self.compute + exposed + self.tensor_parallel + self.expert_parallel + self.pipeline

    @property
    def communication(self) -> float:
        return self.data_parallel + self.tensor_parallel + self.expert_parallel + self.pipeline

    @property
    def bound(self) -> bool:
        """The data-parallel traffic alone takes longer than the compute it hides behind."""
        return self.data_parallel > self.compute


def step_time(
    *,
    option: NodeOption,
    nodes: int,
    tp: int,
    pp: int,
    dp: int,
    ep: int,
    zero: int,
    w: float,
    dense_shard: float,
    expert_shard: float,
    active_params: float,
    layers: int,
    hidden: int,
    experts_active: int,
    tokens: int,
    recompute: bool,
    rate_tflops: float,
) -> StepTime:
    """One step's compute and communication (seconds); ``tokens`` = b × s per GPU."""
    per_node = max(1, int(option.gpus_per_node))
    compute = 6 * active_params * tokens / (tp * pp) / (rate_tflops * 1e12) if rate_tflops else 0.0
    intra = intra_node_busbw(option) * 1e9
    inter = inter_node_busbw(option) * 1e9
    # Data parallel: Megatron's rank order puts TP innermost, then DP, then PP, so a DP
    # group stays inside a node while TP × DP fits in one.
    factor = 3 if zero == 3 else 2
    expert_dp = max(1, dp // max(1, ep))
    dp_bytes = (
        factor * w * (dense_shard * (dp - 1) / dp + expert_shard * (expert_dp - 1) / expert_dp)
    )
    across = nodes > 1 and tp * dp > per_node
    if across:
        groups_per_node = max(1, min(tp, per_node))
        dp_bw = min(intra, inter / groups_per_node)
    else:
        dp_bw = intra
    data_parallel = dp_bytes / dp_bw if dp_bytes else 0.0
    layers_here = math.ceil(layers / pp)
    activation = tokens * hidden * 2  # one micro-batch's 16-bit hidden states
    tensor = 0.0
    if tp > 1:
        passes = 6 if recompute else 4
        tensor = passes * layers_here * 2 * (tp - 1) / tp * activation / intra
    expert = 0.0
    if ep > 1:
        spans = nodes > 1 and tp * ep > per_node
        a2a_bw = min(intra, inter / max(1, min(tp, per_node))) if spans else intra
        expert = 4 * layers_here * experts_active * activation / tp * (ep - 1) / ep / a2a_bw
    pipeline = 0.0
    if pp > 1:
        spans = nodes > 1 and tp * dp * pp > per_node
        link = inter / per_node if spans else intra
        pipeline = 2 * activation / tp / link
    return StepTime(
        compute=compute,
        data_parallel=data_parallel,
        tensor_parallel=tensor,
        expert_parallel=expert,
        pipeline=pipeline,
        dp_bandwidth=dp_bw / 1e9,
        dp_bytes=dp_bytes,
        across_nodes=across,
    )
