"""The seed acceptance rules (VALIDATION.md), pure data with no Django: the portal stores
rules as rows (``ValidationRule``, staff-editable) and these seed them.

The GEMM and HBM references come from the one table of GPU facts
(``inventory.gpus.BY_KEY``, keyed like ``rules.normalize_gpu_model``); the other figures
(copy bandwidth, NVLink all-reduce, InfiniBand, fabric) are validation's own and live
here, each with its source.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from inventory.gpus import BY_KEY
from provisioning.validation.rules import BASELINE, GIB, MEDIAN_TOLERANCE, Rule

__all__ = ["DEFAULT_RULES"]

_SRC_GEMM = (
    "GEMM TFLOPS: torch.matmul 8192³ bf16 (V100S fp16), 50 warm-up + 100 timed with CUDA "
    "events, all GPUs at once; ≥ 90% of reference, and no GPU > 5% below the node median "
    "(SuperBench quickscan rule `x < -0.1`; stas00/ml-engineering). Reference TFLOPS "
    "(measured, not spec): {ref}"
)
_SRC_HBM = (
    "HBM bandwidth: copy/triad kernel or DCGM memory_bandwidth; ≥ 85% of spec (GUESS): {spec}"
)
_SRC_NVB = (
    "host↔device and P2P copy bandwidth (nvbandwidth): H100/H200 ≥ 48 GB/s H2D and ≥ 335 "
    "GB/s P2P; A100 ≥ 24; V100 ≥ 10 (Azure conf/*.conf); RTX 3090 24 (GUESS)"
)
_SRC_AR = (
    "NVLink all-reduce: `all_reduce_perf -b 16G -e 16G -g 1`, one rank per GPU; 8×H100 ≥ "
    "460 GB/s busbw, 8×H200 ≥ 431, 8×A100 ≥ 228 (Azure conf); others: golden node − 10% "
    "(GUESS)"
)
_SRC_IB = (
    "IB loopback: `ib_write_bw ... --use_cuda`; NDR ≥ 380 Gb/s (H100), HDR ≥ 185 (Azure "
    "azure_ib_write_bw_gdr.nhc)"
)
_SRC_COUNT = (
    "GPU count and model: equals the node type (Azure azurehpc-health-checks check_gpu_count)"
)
_SRC_NVLINK = (
    "NVLink state: `nvidia-smi nvlink -s`; no `<inactive>` link (azurehpc-health-checks "
    "customTests/azure_gpu_nvlink.nhc)"
)
_SRC_XID = (
    "XID errors: kernel log; none of 48 56 57 58 62 63 64 65 68 69 73 74 79 80 81 92 119 "
    "120 (azure_gpu_xid.nhc)"
)
_SRC_ECC = (
    "ECC / row remap: `nvidia-smi --query-remapped-rows`, ecc counters; no pending/failed "
    "remap, SRAM uncorrectable 0 (azure_gpu_ecc.nhc)"
)
_SRC_DCGM = (
    "DCGM diagnostics: `dcgmi diag -r 3 -j` (GeForce: `-r 1`); every result Pass; Skip is "
    "not Pass (DCGM issues #55, #139, #284)"
)
_SRC_RING = (
    "Multi-node all-reduce with `NCCL_ALGO=RING`: busbw ≥ 0.9 × NICs × per-NIC figure "
    "(0.9 GUESS); per NIC 46–48 GB/s for NDR 400G, 24 for HDR 200G, 12 for 100G (nccl-tests "
    "issues #290, #119); the lower figure of the range is used"
)
_SRC_SCALING = (
    "Scaling efficiency = throughput(2N) / (2 × throughput(N)) on a fixed step; ≥ 0.9 (GUESS)"
)
_SRC_CPU = (
    "CPU profile (CI, `device: cpu`): a path check, not a performance claim; the agent must "
    "have completed the check and measured a positive figure; a missing metric fails"
)

#: The GPU models with GEMM and HBM rules (``inventory.gpus`` keys), in the seed's order.
_GPU_MODELS = ("H100", "H200", "A100-80G", "A100-40G", "V100S", "RTX3090")
_H2D = {"H100": 48, "H200": 48, "A100-80G": 24, "A100-40G": 24, "V100S": 10, "RTX3090": 24}
_AR_MIN = {"H100": 460, "H200": 431, "A100-80G": 228, "A100-40G": 228}
_NVLINK_MODELS = ("H100", "H200", "A100-80G", "A100-40G")
_REMAP_MODELS = ("H100", "H200", "A100-80G", "A100-40G")
_RING_PER_NIC = (("ndr400", 46), ("hdr200", 24), ("100g", 12))


def _compute_rules() -> Iterator[Rule]:
    """GEMM (≥ 90% of the measured reference, no GPU 5% below the median) and HBM
    (≥ 85% of the datasheet figure) per GPU model, from ``inventory.gpus``."""
    for model in _GPU_MODELS:
        facts = BY_KEY[model]
        yield Rule(
            metric=facts.gemm_metric,
            gpu_model=model,
            baseline=facts.gemm_tflops,
            min_variance=-0.10,
            max_below_median=MEDIAN_TOLERANCE,
            check="gemm",
            unit="TFLOPS",
            source=_SRC_GEMM.format(ref=facts.gemm_source),
        )
    for model in _GPU_MODELS:
        facts = BY_KEY[model]
        yield Rule(
            metric="hbm_bandwidth_gbps",
            gpu_model=model,
            baseline=facts.hbm_gbps,
            min_variance=-0.15,
            check="memory_bandwidth",
            unit="GB/s",
            source=_SRC_HBM.format(spec=facts.hbm_source),
        )


def _interconnect_rules() -> Iterator[Rule]:
    """Copy bandwidth (nvbandwidth), NVLink all-reduce and InfiniBand loopback."""
    for model, h2d in _H2D.items():
        yield Rule(
            metric="h2d_bandwidth_gbps",
            gpu_model=model,
            min_value=h2d,
            check="nvbandwidth",
            unit="GB/s",
            source=_SRC_NVB + (" — RTX 3090 figure is a GUESS" if model == "RTX3090" else ""),
        )
    for model in ("H100", "H200"):
        yield Rule(
            metric="p2p_bandwidth_gbps",
            gpu_model=model,
            min_value=335,
            check="nvbandwidth",
            unit="GB/s",
            source=_SRC_NVB,
        )
    for model, busbw in _AR_MIN.items():
        yield Rule(
            metric="allreduce_busbw_gbps",
            gpu_model=model,
            min_value=busbw,
            message_size_bytes=16 * GIB,
            check="allreduce",
            unit="GB/s",
            source=_SRC_AR + " — figure for 8 GPUs",
        )
    for model in ("V100S", "RTX3090"):
        yield Rule(
            metric="allreduce_busbw_gbps",
            gpu_model=model,
            baseline_from="golden_allreduce_busbw_gbps",
            min_variance=-0.10,
            message_size_bytes=16 * GIB,
            check="allreduce",
            unit="GB/s",
            required=False,
            source=_SRC_AR + " — golden node − 10% (GUESS); not required on PCIe nodes",
        )
    for fabric, min_value in (("ndr400", 380), ("hdr200", 185)):
        yield Rule(
            metric="ib_write_bw_gbps",
            gpu_model="*",
            fabric=fabric,
            min_value=min_value,
            check="ib_write_bw",
            unit="Gb/s",
            source=_SRC_IB,
        )


def _health_rules() -> Iterator[Rule]:
    """GPU count, XIDs, DCGM diagnostics, NVLink state and ECC / row remaps."""
    yield Rule(
        metric="gpu_count",
        gpu_model="*",
        equals=BASELINE,
        baseline_from="gpu_count",
        check="gpu_inventory",
        source=_SRC_COUNT,
    )
    yield Rule(metric="xid_critical_count", gpu_model="*", equals=0, check="xid", source=_SRC_XID)
    for metric in ("dcgm_fail_count", "dcgm_skip_count"):
        yield Rule(metric=metric, gpu_model="*", equals=0, check="dcgm_diag", source=_SRC_DCGM)
    for model in _NVLINK_MODELS:
        yield Rule(
            metric="nvlink_inactive_links",
            gpu_model=model,
            equals=0,
            check="nvlink",
            source=_SRC_NVLINK,
        )
    for model in _REMAP_MODELS:
        for metric in ("remapped_rows_pending", "remapped_rows_failure"):
            yield Rule(metric=metric, gpu_model=model, equals=0, check="ecc_remap", source=_SRC_ECC)
        yield Rule(
            metric="ecc_sram_uncorrectable",
            gpu_model=model,
            equals=0,
            check="ecc_remap",
            required=False,
            source=_SRC_ECC + " — optional: not every driver reports SRAM counters",
        )


def _cluster_rules() -> Iterator[Rule]:
    """Cluster scope: the multi-node ring all-reduce per fabric, and scaling efficiency."""
    for fabric, per_nic in _RING_PER_NIC:
        yield Rule(
            metric="cluster_allreduce_ring_busbw_gbps",
            gpu_model="*",
            fabric=fabric,
            scope="cluster",
            baseline=Decimal(per_nic),
            baseline_multiplier_from="nics_per_node",
            min_variance=-0.10,
            unit="GB/s",
            source=_SRC_RING,
        )
    yield Rule(
        metric="scaling_efficiency",
        gpu_model="*",
        scope="cluster",
        min_value=0.9,
        source=_SRC_SCALING,
    )


def _cpu_rules() -> Iterator[Rule]:
    """CPU profile: real measurements on the CPU, judged only as "it ran and measured"."""
    for metric, check, unit in (
        ("gemm_gflops_cpu", "gemm", "GFLOPS"),
        ("memcopy_bandwidth_gbps_cpu", "memory_bandwidth", "GB/s"),
        ("allreduce_busbw_gbps_cpu", "allreduce", "GB/s"),
    ):
        yield Rule(
            metric=metric,
            gpu_model="cpu",
            min_value=0,
            min_inclusive=False,
            check=check,
            unit=unit,
            source=_SRC_CPU,
        )
    yield Rule(
        metric="scaling_efficiency",
        gpu_model="cpu",
        scope="cluster",
        min_value=0,
        min_inclusive=False,
        required=False,
        source=_SRC_CPU,
    )


#: The seed rule set (VALIDATION.md). The portal stores rules as data; these seed it.
DEFAULT_RULES: tuple[Rule, ...] = (
    *_compute_rules(),
    *_interconnect_rules(),
    *_health_rules(),
    *_cluster_rules(),
    *_cpu_rules(),
)
