"""The table of every metric (:data:`METRICS`: unit, the check that produces it, whether it
is informational), and where the table and the rules disagree (``table_problems``; the
README prints it: ``metric_table_markdown``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from provisioning.validation.rules import (
    Rule,
)


@dataclass(frozen=True)
class MetricSpec:
    unit: str
    check: str  # the agent check (or cluster check) whose raw output gives it
    description: str
    informational: bool = False  # shown, read by no rule
    sized: bool = False  # keyed ``name@message_size_bytes`` (the size read from the output)
    #: What a list's items are: ``gpu`` (index = GPU index) or ``nic``; ``names`` is the
    #: metric listing the items' names (the reasons say "on NIC mlx5_6", not "on GPU 4").
    per: str = "gpu"
    names: str | None = None


METRICS: dict[str, MetricSpec] = {
    # gpu_inventory: nvidia-smi --query-gpu=index,name,memory.total,mig.mode.current,…
    "gpu_count": MetricSpec("GPUs", "gpu_inventory", "GPUs listed by nvidia-smi"),
    "gpu_model_mismatch_count": MetricSpec(
        "GPUs", "gpu_inventory", "GPUs whose name is not the node type's model"
    ),
    "gpu_memory_mib": MetricSpec("MiB", "gpu_inventory", "memory.total per GPU"),
    "mig_enabled_gpus": MetricSpec("GPUs", "gpu_inventory", "GPUs with MIG mode Enabled"),
    # ecc: nvidia-smi --query-gpu=ecc.errors.… (azure_gpu_ecc.nhc's fields)
    "ecc_sram_uncorrectable": MetricSpec(
        "errors", "ecc", "per GPU, max of volatile and aggregate SRAM uncorrected"
    ),
    "ecc_sram_correctable": MetricSpec(
        "errors", "ecc", "per GPU, max of volatile and aggregate SRAM corrected"
    ),
    "ecc_dram_errors": MetricSpec(
        "errors", "ecc", "per GPU, max of the DRAM corrected/uncorrected counters"
    ),
    "ecc_off_gpus": MetricSpec(
        "GPUs", "ecc", "GPUs whose ecc.mode.current is not Enabled ([N/A]: no ECC)"
    ),
    "retired_pages_pending": MetricSpec(
        "GPUs", "ecc", "GPUs with a page retirement pending (Volta: retired_pages.pending)"
    ),
    "retired_pages_total": MetricSpec(
        "pages", "ecc", "per GPU, pages retired for single- plus double-bit errors (Volta)"
    ),
    # ecc_remap: nvidia-smi --query-remapped-rows=…
    "remapped_rows_pending": MetricSpec("GPUs", "ecc_remap", "GPUs with a pending row remap"),
    "remapped_rows_failure": MetricSpec("GPUs", "ecc_remap", "GPUs with a failed row remap"),
    "remapped_rows_uncorrectable": MetricSpec(
        "rows", "ecc_remap", "per GPU, rows remapped for uncorrectable errors"
    ),
    # nvlink: nvidia-smi nvlink -s
    "nvlink_inactive_links": MetricSpec("links", "nvlink", "links shown <inactive>"),
    "nvlink_links_total": MetricSpec("links", "nvlink", "link lines counted"),
    "nvlink_all_inactive_gpus": MetricSpec(
        "GPUs", "nvlink", "GPUs for which NVML says all links are inactive"
    ),
    # xid: the kernel log
    "xid_critical_count": MetricSpec("events", "xid", "NVRM Xid lines with a critical XID"),
    "xid_codes": MetricSpec("", "xid", "every XID seen", informational=True),
    # gemm: torch.matmul sustained, sampled with nvidia-smi
    "gemm_tflops_bf16": MetricSpec("TFLOPS", "gemm", "per GPU, sustained bf16 8192³"),
    "gemm_tflops_fp16": MetricSpec("TFLOPS", "gemm", "per GPU, sustained fp16 8192³ (Volta)"),
    "gemm_tflops_fp8": MetricSpec(
        "TFLOPS", "gemm", "per GPU, fp8 e4m3 (Hopper), recorded", informational=True
    ),
    "gemm_rel_error": MetricSpec(
        "", "gemm", "per GPU, relative error of a 256-row slice against float64"
    ),
    "gemm_sustained_s": MetricSpec("s", "gemm", "sustained GEMM duration", informational=True),
    "throttled_gpus": MetricSpec(
        "GPUs", "gemm", "GPUs with a throttle reason other than idle / SW power cap"
    ),
    "gpu_temperature_max_c": MetricSpec(
        "°C", "gemm", "per GPU, hottest sample during the GEMM", informational=True
    ),
    "gpu_power_max_w": MetricSpec(
        "W", "gemm", "per GPU, highest power sample during the GEMM", informational=True
    ),
    "gpu_sm_clock_min_mhz": MetricSpec(
        "MHz", "gemm", "per GPU, lowest SM clock sample during the GEMM", informational=True
    ),
    # burn_in: rounds of sustained GEMM + all-reduce, sampled with nvidia-smi (the add-on)
    "burn_in_hours": MetricSpec("h", "burn_in", "how long the burn-in ran"),
    "burn_in_gemm_slowdown": MetricSpec(
        "", "burn_in", "per GPU, 1 − GEMM of the last third of rounds / of the first third"
    ),
    "burn_in_allreduce_slowdown": MetricSpec(
        "", "burn_in", "1 − all-reduce busbw of the last third of rounds / of the first third"
    ),
    "burn_in_allreduce_wrong_count": MetricSpec(
        "values", "burn_in", "wrong values over every round's all-reduce"
    ),
    "burn_in_throttled_gpus": MetricSpec(
        "GPUs", "burn_in", "GPUs with a throttle reason other than idle / SW power cap"
    ),
    "burn_in_gpu_temperature_max_c": MetricSpec(
        "°C", "burn_in", "per GPU, hottest sample of the burn-in", informational=True
    ),
    "burn_in_gpu_power_max_w": MetricSpec(
        "W", "burn_in", "per GPU, highest power sample of the burn-in", informational=True
    ),
    "burn_in_gpu_sm_clock_min_mhz": MetricSpec(
        "MHz", "burn_in", "per GPU, lowest SM clock sample of the burn-in", informational=True
    ),
    # memory_bandwidth: torch device-to-device copy
    "hbm_bandwidth_gbps": MetricSpec("GB/s", "memory_bandwidth", "per GPU, read + write"),
    # nvbandwidth
    "h2d_bandwidth_gbps": MetricSpec("GB/s", "nvbandwidth", "per GPU, host_to_device_memcpy_ce"),
    "d2h_bandwidth_gbps": MetricSpec("GB/s", "nvbandwidth", "per GPU, device_to_host_memcpy_ce"),
    "p2p_bandwidth_gbps": MetricSpec(
        "GB/s", "nvbandwidth", "per GPU, slowest peer in device_to_device_memcpy_read_ce"
    ),
    # allreduce: all_reduce_perf -b S -e S -g N -c 1
    "allreduce_busbw_gbps": MetricSpec(
        "GB/s", "allreduce", "busbw at the size run (lower of in/out-of-place)", sized=True
    ),
    "allreduce_wrong_count": MetricSpec(
        "values", "allreduce", "sum of #wrong over rows + out-of-bounds values"
    ),
    "allreduce_message_size_bytes": MetricSpec(
        "B", "allreduce", "the size the rows show", informational=True
    ),
    # ib_write_bw per NIC
    "ib_write_bw_gbps": MetricSpec(
        "Gb/s",
        "ib_write_bw",
        "per fabric NIC (InfiniBand link layer), BW average",
        per="nic",
        names="ib_write_bw_devices",
    ),
    "ib_write_bw_devices": MetricSpec(
        "", "ib_write_bw", "the NICs measured, in ib_write_bw_gbps's order", informational=True
    ),
    "ib_nic_count": MetricSpec(
        "NICs", "ib_write_bw", "RDMA devices whose link layer is InfiniBand (ibstat)"
    ),
    "rdma_ethernet_nic_count": MetricSpec(
        "NICs",
        "ib_write_bw",
        "RDMA devices whose link layer is Ethernet (RoCE: fabric, front-end and storage "
        "ports alike; ibstat cannot tell them apart)",
        informational=True,
    ),
    # dcgm_diag
    "dcgm_fail_count": MetricSpec("results", "dcgm_diag", "DCGM results Fail"),
    "dcgm_skip_count": MetricSpec("results", "dcgm_diag", "DCGM results Skip (not Pass)"),
    "dcgm_warn_count": MetricSpec("results", "dcgm_diag", "DCGM results Warn", informational=True),
    # the CPU path (simulated nodes; the agent's own figure: a path check, no claim)
    "gemm_gflops_cpu": MetricSpec("GFLOPS", "gemm", "CPU path: numpy matmul"),
    "memcopy_bandwidth_gbps_cpu": MetricSpec("GB/s", "memory_bandwidth", "CPU path: copy"),
    "allreduce_busbw_gbps_cpu": MetricSpec("GB/s", "allreduce", "CPU path: ring all-reduce"),
    # cluster scope (provisioning.validation.cluster / interface.local_cluster_measurement)
    "cluster_allreduce_ring_busbw_gbps": MetricSpec(
        "GB/s", "cluster", "multi-node all_reduce_perf, NCCL_ALGO=RING"
    ),
    "allreduce_throughput_scaling": MetricSpec(
        "",
        "cluster",
        "all-reduce throughput(2N) / (2 × throughput(N)); not a training-step scaling "
        "efficiency (VALIDATION.md), so informational",
        informational=True,
    ),
}
#: Produced by the cluster check for the report's charts only.
CLUSTER_INFORMATIONAL = frozenset(
    {
        "cluster_ranks_n",
        "cluster_throughput_n_gbps",
        "cluster_throughput_2n_gbps",
        "cluster_message_size_bytes",
        "cluster_busbw_n_gbps",
        "cluster_busbw_2n_gbps",
        "cluster_nodes_n",
        "cluster_step_time_n_s",
        "cluster_step_time_2n_s",
    }
)


def table_problems(rules: Iterable[Rule], metrics: Mapping[str, MetricSpec] = METRICS) -> list[str]:
    """Where rules and the table disagree: a rule reading a metric the table lacks, or a
    rule naming another check than the table's; a metric no rule reads that is not
    informational."""
    problems = []
    read: set[str] = set()
    for rule in rules:
        read.add(rule.metric)
        spec = metrics.get(rule.metric)
        if spec is None:
            problems.append(f"rule {rule.key} ({rule.gpu_model}) reads a metric no check produces")
        elif rule.check and rule.check != spec.check:
            problems.append(
                f"rule {rule.key} ({rule.gpu_model}) names check {rule.check}, "
                f"the metric comes from {spec.check}"
            )
    for name, spec in metrics.items():
        if not spec.informational and name not in read:
            problems.append(f"metric {name} ({spec.check}) is read by no rule")
    return problems


def metric_table_markdown(rules: Iterable[Rule]) -> str:
    """The table as README prints it: metric, unit, check, the rules that read it."""
    by_metric: dict[str, list[str]] = {}
    for rule in rules:
        label = rule.gpu_model + (f"×{rule.gpu_count}" if rule.gpu_count else "")
        if rule.message_size_bytes:
            label += f"@{rule.message_size_bytes // 1024**3}G"
        if rule.fabric:
            label += f"/{rule.fabric}"
        by_metric.setdefault(rule.metric, []).append(label)
    lines = ["| metric | unit | check | read by rules (GPU model×count@size/fabric) |"]
    lines.append("|---|---|---|---|")
    for name, spec in METRICS.items():
        readers = ", ".join(sorted(set(by_metric.get(name, [])))) or (
            "informational" if spec.informational else "—"
        )
        lines.append(f"| `{name}` | {spec.unit} | {spec.check} | {readers} |")
    return "\n".join(lines)
