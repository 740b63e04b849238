"""The seed acceptance rules (VALIDATION.md), pure data with no Django: the portal stores
rules as rows (``ValidationRule``, staff-editable) and these seed them.

Every metric a rule reads is derived from a tool's raw output in one place
(``provisioning.validation.metrics``); ``metrics.table_problems(DEFAULT_RULES)`` is empty
(a test keeps it so). The GEMM, HBM, memory and NVLink-link figures come from the one
table of GPU facts (``inventory.gpus.BY_KEY``); the others are validation's own and live
here, each with its source. GUESS marks a figure with no public source (to calibrate on a
golden node). Thresholds that depend on the GPU count (P2P, all-reduce, NVLink links)
are keyed by it (``Rule.gpu_count``); all-reduce figures name the message size they hold
at (``message_size_bytes``: the size the nccl-tests rows show).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from core.i18n_hook import gettext_noop as N_
from inventory.gpus import BY_KEY
from provisioning.validation.rules import BASELINE, GIB, IB_FABRICS, MEDIAN_TOLERANCE, Rule

__all__ = ["DEFAULT_RULES", "NODE_SHAPES", "SOURCE_TEMPLATES"]

_SRC_GEMM = N_(
    # xgettext:no-python-format
    "GEMM TFLOPS: torch.matmul 8192³ bf16 (V100S fp16), sustained (acceptance ≥ 60 s), all "
    "GPUs at once; ≥ 90% of reference, and no GPU > 5% below the node median (SuperBench "
    "quickscan rule `x < -0.1`; stas00/ml-engineering). Reference TFLOPS (measured, not "
    "spec): {ref}"
)
_SRC_GEMM_ERR = N_(
    # xgettext:no-python-format
    "GEMM correctness: a 256-row slice of C recomputed in float64 from the same inputs; "
    "relative Frobenius error ≤ 0.01 (GUESS: bf16 keeps 8 significant bits, unit roundoff "
    "2⁻⁹ ≈ 0.002; a wrong result is off by orders of magnitude)"
)
_SRC_HBM = N_(
    # xgettext:no-python-format
    "HBM bandwidth: device-to-device copy (read + write); ≥ 85% of spec (GUESS, about 5% "
    "below what a copy reaches on an H200) and no GPU > 5% below the node median: {spec}"
)
_SRC_MEM = N_(
    # xgettext:no-python-format
    "GPU memory: nvidia-smi memory.total within ±3% of the card as sold ({gib} GiB; the "
    "driver reserves a little: 81559 MiB on an H100 80GB); a 40G card in an 80G node "
    "passes GEMM, only this catches it (VALIDATION.md)"
)
_SRC_NVB = N_(
    # xgettext:no-python-format
    "nvbandwidth host_to_device/device_to_host_memcpy_ce per GPU, device_to_device_memcpy_"
    "read_ce per pair, every value ≥ the figure (Azure azurehpc-health-checks @0e0a1ac, "
    "customTests/azure_gpu_bandwidth.nhc `check_gpu_bw H2D P2P`): "
    "conf/nd96isr_h100_v5.conf:49 and conf/nd96isr_h200_v5.conf:50 `check_gpu_bw 48 335`; "
    "conf/nd96asr_v4.conf:54 (A100 40G) `check_gpu_bw 21 235`; "
    "conf/nd96amsr_a100_v4.conf:54 (A100 80G) `check_gpu_bw 21 238`; V100S: "
    "conf/nc6s_v3.conf:38 `check_gpu_bw 10` (a 1× V100 PCIe card on PCIe 3.0 x16, as the "
    "V100S is; conf/nd40rs_v2.conf:40, eight V100 SXM2 sharing PCIe switches, has 9 since "
    "5f53bcc); RTX 3090 24 (GUESS: PCIe 4.0 x16); no GPU > 5% below the node median "
    "(SuperBench)"
)
_SRC_P2P_4 = N_(
    # xgettext:no-python-format
    "P2P on a 4-GPU A100 HGX board: GUESS 80 GB/s (4 NVLink3 links per pair × 25 GB/s = "
    "100 GB/s per direction, − 20%); to calibrate on a golden node"
)
_SRC_AR = N_(
    # xgettext:no-python-format
    "NVLink all-reduce: `all_reduce_perf -b S -e S -g N -c 1`, busbw at the size the rows "
    "show (lower of in-place and out-of-place); Azure azurehpc-health-checks @0e0a1ac: "
    "conf/nd96isr_h100_v5.conf:52 `check_nccl_allreduce 460.0 1 16G` (nd96isr_h100_v5 460 "
    "at 16G), conf/nd96isr_h200_v5.conf:53 `431.0 1 16G`, conf/nd96amsr_a100_v4.conf:57 "
    "(A100 80G) `228.0 1 16G`, conf/nd96asr_v4.conf:57 (A100 40G) `228.0 1 8G`; all 8-GPU "
    "figures"
)
_SRC_AR_4 = N_(
    # xgettext:no-python-format
    "NVLink all-reduce on a 4-GPU A100 40G board at 8G: GUESS 180 GB/s busbw (no public "
    "4-GPU figure; 8-GPU figure 228 − about 20%); to calibrate on a golden node"
)
_SRC_WRONG = N_(
    # xgettext:no-python-format
    "nccl-tests data check: every `#wrong` 0 and `# Out of bounds values : 0 OK`, whatever "
    "the exit status (forks and -c 0 exit 0 on wrong data; VALIDATION.md)"
)
_SRC_IB = N_(
    # xgettext:no-python-format
    "IB GPUDirect loopback per InfiniBand NIC: `ib_write_bw -s 8388608 -x 0 -F "
    "--report_gbits --use_cuda=i` server and client on the device, BW average in Gb/s "
    "(Azure azurehpc-health-checks @0e0a1ac customTests/azure_ib_write_bw_gdr.nhc:27-29, "
    "every NIC at once; Azure runs 5000 iterations after --perform_warm_up, here -D "
    "seconds, whose 2 s margin is the warm-up); conf/nd96isr_h100_v5.conf:60 "
    "`check_ib_bw_gdr 380`, conf/nd96isr_h200_v5.conf:61 `check_ib_bw_gdr 360`, "
    "conf/nd96asr_v4.conf:65 and conf/nd96amsr_a100_v4.conf:65 `check_ib_bw_gdr 180.0` "
    "(VALIDATION.md's 375 and 185 are these files' 2023 figures: 380 since c674250, 180 "
    "since d6dde21)"
)
_SRC_NIC_COUNT = N_(
    # xgettext:no-python-format
    "Fabric NICs on an InfiniBand fabric: the RDMA devices `ibstat` lists with `Link "
    "layer: InfiniBand` at least the node type's NIC count, each measured by ib_write_bw; "
    "a NIC that is missing (not cabled, not enumerated, driver down) is never measured, so "
    "the per-NIC figure alone cannot catch it (Azure azurehpc-health-checks "
    "azure_ib_write_bw_gdr.nhc tests only the devices it finds: customTests/"
    "azure_common.nhc:126-150 `determine_IB_devices`, `ibstat -l` kept where ports/1/"
    "link_layer is InfiniBand, as here). An Ethernet RDMA device "
    "(a RoCE front-end or storage port, such as a BlueField bond) is not a fabric NIC: "
    "neither counted nor measured. On RoCE fabrics no NIC count is judged: every port "
    "there is Ethernet and ibstat cannot tell a fabric port from a front-end one; the "
    "multi-node all-reduce judges the fabric"
)
# xgettext:no-python-format
_SRC_COUNT = N_("GPU count: equals the node type (Azure azurehpc-health-checks `check_gpu_count`)")
# xgettext:no-python-format
_SRC_MODEL = N_(
    "GPU model: every GPU's nvidia-smi name maps to the node type's model (VALIDATION.md)"
)
# xgettext:no-python-format
_SRC_MIG = N_("MIG mode: off (the node types sell whole GPUs; VALIDATION.md)")
_SRC_NVLINK = N_(
    # xgettext:no-python-format
    'NVLink state: `nvidia-smi nvlink -s`: no `<inactive>` link, no GPU with "all links '
    'are inactive" (Azure azurehpc-health-checks azure_gpu_nvlink.nhc fails on both), and links '
    "counted = GPUs × "
    "links per GPU (18 H100/H200 SXM, 12 A100 SXM): an empty output fails (the Azure check "
    "passes it; VALIDATION.md)"
)
_SRC_XID = N_(
    # xgettext:no-python-format
    "XID errors: kernel log; none of 48 56 57 58 62 63 64 65 68 69 73 74 79 80 81 92 119 120 "
    "(Azure azurehpc-health-checks azure_gpu_xid.nhc) nor 95 (NVIDIA XID catalogue: uncontained "
    "ECC error, reset "
    "the GPU); 94 (contained ECC error) is noted and judged by the row-remap rules"
)
_SRC_ECC = N_(
    # xgettext:no-python-format
    "ECC: Azure azurehpc-health-checks azure_gpu_ecc.nhc `check_gpu_ecc 20000000 10000` (conf "
    "nd96isr_h100_v5, "
    "nd96isr_h200_v5, nd96asr_v4, nd96amsr_a100_v4): no pending or failed row remap, "
    "remapped-uncorrectable rows ≤ 512, SRAM uncorrectable (volatile and aggregate) 0, "
    "SRAM correctable ≤ 10,000, DRAM counters ≤ 20,000,000"
)
_SRC_ECC_MODE = N_(
    # xgettext:no-python-format
    "ECC mode: `nvidia-smi --query-gpu=ecc.mode.current` Enabled on every GPU of a model "
    "that has ECC memory (data-centre cards ship with it on); with ECC off errors are "
    "neither corrected nor counted and every ECC rule would pass on nothing, and `[N/A]` "
    "on such a model is missing data (fail closed, VALIDATION.md). GeForce cards (RTX "
    "3090, GDDR6X) have no ECC: nvidia-smi prints `[N/A]` and no ECC rule judges them"
)
_SRC_RETIRED = N_(
    # xgettext:no-python-format
    "Page retirement (Volta: V100/V100S retire pages instead of remapping rows): Azure "
    "azurehpc-health-checks "
    "azure_gpu_ecc.nhc `check_SDBE_ecc` (used for V100) fails a GPU whose single- plus "
    "double-bit retired pages reach 62 with a retirement pending; here, stricter for a "
    "node before hand-over, a pending retirement fails by itself (the page is still in "
    "use until the next driver load, as a pending row remap is on A100/H100) and the "
    "retired pages must stay ≤ 61. The SRAM/DRAM counters are Turing and newer (NVML "
    "memory locations), so `[N/A]` on a V100S"
)
_SRC_THROTTLE = N_(
    # xgettext:no-python-format
    "Clock throttling during the sustained GEMM: `nvidia-smi --query-gpu=clocks_event_"
    "reasons.active` (clocks_throttle_reasons before driver 535) sampled; any reason other "
    "than none (0x0), idle (0x1) or SW power cap (0x4) fails (Azure azurehpc-health-checks "
    "azure_gpu_clock_throttling.nhc, which only warns; VALIDATION.md fails)"
)
_SRC_DCGM = N_(
    # xgettext:no-python-format
    "DCGM diagnostics: `dcgmi diag -r 3 -j` in acceptance (`-r 1` quick; GeForce: `-r 1`); "
    "every result Pass; Skip is not Pass (DCGM issues #55, #139, #284)"
)
_SRC_RING = N_(
    # xgettext:no-python-format
    "Multi-node all-reduce with `NCCL_ALGO=RING`: busbw ≥ 0.9 × NICs × per-NIC figure "
    "(0.9 GUESS); per NIC 46–48 GB/s for NDR 400G, 24 for HDR 200G, 12 for 100G (nccl-tests "
    "issues #290, #119); the lower figure of the range is used"
)
_SRC_CPU = N_(
    # xgettext:no-python-format
    "CPU profile (simulated nodes only, `device: cpu`): a path check, not a performance "
    "claim; the agent must have completed the check and measured a positive figure"
)
_SRC_BURN_IN_HOURS = N_(
    # xgettext:no-python-format
    "Burn-in (the price book's add-on, before hand-over): the 24-hour stability the seeds "
    "sell as an acceptance metric (004 §6); the burn-in must have run its whole length "
    "(`burn_in_hours` of the order, less 0.1%): cut short is not passed"
)
_SRC_BURN_IN_SLOW = N_(
    # xgettext:no-python-format
    "Burn-in slow-down: the median of the last third of the rounds against the first "
    "third, per GPU for the GEMM and for the all-reduce; more than 5% slower fails (GUESS, "
    "SuperBench's 5% per-GPU variance tolerance applied over time: a GPU that heats, "
    "throttles or degrades over a day loses more)"
)
_SRC_BURN_IN_THROTTLE = N_(
    # xgettext:no-python-format
    "Burn-in throttling: `nvidia-smi --query-gpu=clocks_event_reasons.active` sampled "
    "throughout the 24 hours; any reason other than none (0x0), idle (0x1) or SW power cap "
    "(0x4) fails (Azure azurehpc-health-checks azure_gpu_clock_throttling.nhc; VALIDATION.md "
    "clocks and thermals)"
)
_SRC_BURN_IN_CPU = N_(
    # xgettext:no-python-format
    "Burn-in, CPU path (simulated nodes): a path check; the rounds ran their whole length "
    "and gave figures, not a performance claim"
)

# Every source text above, for the reports to show it in the reader's language
# (``provisioning.validation.report.localized_source``; translations in the .po files).
SOURCE_TEMPLATES: tuple[str, ...] = (
    _SRC_GEMM,
    _SRC_GEMM_ERR,
    _SRC_HBM,
    _SRC_MEM,
    _SRC_NVB,
    _SRC_P2P_4,
    _SRC_AR,
    _SRC_AR_4,
    _SRC_WRONG,
    _SRC_IB,
    _SRC_NIC_COUNT,
    _SRC_COUNT,
    _SRC_MODEL,
    _SRC_MIG,
    _SRC_NVLINK,
    _SRC_XID,
    _SRC_ECC,
    _SRC_ECC_MODE,
    _SRC_RETIRED,
    _SRC_THROTTLE,
    _SRC_DCGM,
    _SRC_RING,
    _SRC_CPU,
    _SRC_BURN_IN_HOURS,
    _SRC_BURN_IN_SLOW,
    _SRC_BURN_IN_THROTTLE,
    _SRC_BURN_IN_CPU,
)

#: The GPU models with rules of their own (``inventory.gpus`` keys).
_GPU_MODELS = ("H100", "H200", "A100-80G", "A100-40G", "V100S", "RTX3090")
#: (GPU model, GPUs per node) shapes with node-count-dependent figures; the demo sells
#: 8×H100, 8×H200, 4×A100 40G, 1×RTX 3090 and 1×V100S.
NODE_SHAPES = (
    ("H100", 8),
    ("H200", 8),
    ("A100-80G", 8),
    ("A100-40G", 8),
    ("A100-40G", 4),
    ("RTX3090", 1),
    ("V100S", 1),
)
_H2D = {"H100": 48, "H200": 48, "A100-80G": 21, "A100-40G": 21, "V100S": 10, "RTX3090": 24}
_P2P = {("H100", 8): 335, ("H200", 8): 335, ("A100-80G", 8): 238, ("A100-40G", 8): 235}
#: (model, GPUs) → (busbw GB/s, message size, source)
_ALLREDUCE = {
    ("H100", 8): (460, 16 * GIB, _SRC_AR),
    ("H200", 8): (431, 16 * GIB, _SRC_AR),
    ("A100-80G", 8): (228, 16 * GIB, _SRC_AR),
    ("A100-40G", 8): (228, 8 * GIB, _SRC_AR),
    ("A100-40G", 4): (180, 8 * GIB, _SRC_AR_4),
}
_IB = {
    ("H100", "ndr400"): 380,
    ("H200", "ndr400"): 360,
    ("A100-80G", "hdr200"): 180,
    ("A100-40G", "hdr200"): 180,
}
_ECC_MODELS = ("H100", "H200", "A100-80G", "A100-40G")
_RING_PER_NIC = (("ndr400", 46), ("hdr200", 24), ("100g", 12))


def _compute_rules() -> Iterator[Rule]:
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
        yield Rule(
            metric="hbm_bandwidth_gbps",
            gpu_model=model,
            baseline=facts.hbm_gbps,
            min_variance=-0.15,
            max_below_median=MEDIAN_TOLERANCE,
            check="memory_bandwidth",
            unit="GB/s",
            source=_SRC_HBM.format(spec=facts.hbm_source),
        )
        mib = facts.memory_gib * 1024
        yield Rule(
            metric="gpu_memory_mib",
            gpu_model=model,
            min_value=round(mib * 0.97),
            max_value=round(mib * 1.03),
            check="gpu_inventory",
            unit="MiB",
            source=_SRC_MEM.format(gib=facts.memory_gib),
        )
    yield Rule(
        metric="gemm_rel_error",
        gpu_model="*",
        min_value=0,
        max_value=0.01,
        check="gemm",
        source=_SRC_GEMM_ERR,
    )
    yield Rule(metric="throttled_gpus", gpu_model="*", equals=0, check="gemm", source=_SRC_THROTTLE)


def _interconnect_rules() -> Iterator[Rule]:
    for model, figure in _H2D.items():
        for metric in ("h2d_bandwidth_gbps", "d2h_bandwidth_gbps"):
            yield Rule(
                metric=metric,
                gpu_model=model,
                min_value=figure,
                max_below_median=MEDIAN_TOLERANCE,
                check="nvbandwidth",
                unit="GB/s",
                source=_SRC_NVB,
            )
    for (model, count), figure in _P2P.items():
        yield Rule(
            metric="p2p_bandwidth_gbps",
            gpu_model=model,
            gpu_count=count,
            min_value=figure,
            check="nvbandwidth",
            unit="GB/s",
            source=_SRC_NVB,
        )
    yield Rule(
        metric="p2p_bandwidth_gbps",
        gpu_model="A100-40G",
        gpu_count=4,
        min_value=80,
        check="nvbandwidth",
        unit="GB/s",
        source=_SRC_P2P_4,
    )
    for (model, count), (busbw, size, source) in _ALLREDUCE.items():
        yield Rule(
            metric="allreduce_busbw_gbps",
            gpu_model=model,
            gpu_count=count,
            min_value=busbw,
            message_size_bytes=size,
            check="allreduce",
            unit="GB/s",
            source=source,
        )
        yield Rule(
            metric="allreduce_wrong_count",
            gpu_model=model,
            gpu_count=count,
            equals=0,
            check="allreduce",
            source=_SRC_WRONG,
        )
    for fabric in IB_FABRICS:
        yield Rule(
            metric="ib_nic_count",
            gpu_model="*",
            fabric=fabric,
            baseline_from="nics_per_node",
            min_variance=0.0,
            check="ib_write_bw",
            unit="NICs",
            source=_SRC_NIC_COUNT,
        )
    for (model, fabric), figure in _IB.items():
        yield Rule(
            metric="ib_write_bw_gbps",
            gpu_model=model,
            fabric=fabric,
            min_value=figure,
            check="ib_write_bw",
            unit="Gb/s",
            source=_SRC_IB,
        )


def _health_rules() -> Iterator[Rule]:
    yield Rule(
        metric="gpu_count",
        gpu_model="*",
        equals=BASELINE,
        baseline_from="gpu_count",
        check="gpu_inventory",
        source=_SRC_COUNT,
    )
    yield Rule(
        metric="gpu_model_mismatch_count",
        gpu_model="*",
        equals=0,
        check="gpu_inventory",
        source=_SRC_MODEL,
    )
    yield Rule(
        metric="mig_enabled_gpus", gpu_model="*", equals=0, check="gpu_inventory", source=_SRC_MIG
    )
    yield Rule(metric="xid_critical_count", gpu_model="*", equals=0, check="xid", source=_SRC_XID)
    for metric in ("dcgm_fail_count", "dcgm_skip_count"):
        yield Rule(metric=metric, gpu_model="*", equals=0, check="dcgm_diag", source=_SRC_DCGM)
    for model, count in NODE_SHAPES:
        if BY_KEY[model].nvlink_links is None:
            continue
        for metric in ("nvlink_inactive_links", "nvlink_all_inactive_gpus"):
            yield Rule(
                metric=metric,
                gpu_model=model,
                gpu_count=count,
                equals=0,
                check="nvlink",
                source=_SRC_NVLINK,
            )
        yield Rule(
            metric="nvlink_links_total",
            gpu_model=model,
            gpu_count=count,
            equals=BASELINE,
            baseline=count * (BY_KEY[model].nvlink_links or 0),
            check="nvlink",
            unit="links",
            source=_SRC_NVLINK,
        )
    for model in _ECC_MODELS:
        for metric in ("remapped_rows_pending", "remapped_rows_failure", "ecc_sram_uncorrectable"):
            yield Rule(
                metric=metric, gpu_model=model, equals=0, check=_ecc_check(metric), source=_SRC_ECC
            )
        for metric, limit in (
            ("remapped_rows_uncorrectable", 512),
            ("ecc_sram_correctable", 10_000),
            ("ecc_dram_errors", 20_000_000),
        ):
            yield Rule(
                metric=metric,
                gpu_model=model,
                min_value=0,
                max_value=limit,
                check=_ecc_check(metric),
                source=_SRC_ECC,
            )


def _ecc_mode_rules() -> Iterator[Rule]:
    for model in (*_ECC_MODELS, "V100S"):
        yield Rule(
            metric="ecc_off_gpus", gpu_model=model, equals=0, check="ecc", source=_SRC_ECC_MODE
        )
    yield Rule(
        metric="retired_pages_pending",
        gpu_model="V100S",
        equals=0,
        check="ecc",
        source=_SRC_RETIRED,
    )
    yield Rule(
        metric="retired_pages_total",
        gpu_model="V100S",
        min_value=0,
        max_value=61,
        check="ecc",
        unit="pages",
        source=_SRC_RETIRED,
    )


def _ecc_check(metric: str) -> str:
    return "ecc_remap" if metric.startswith("remapped_rows") else "ecc"


def _cluster_rules() -> Iterator[Rule]:
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


def _cpu_rules() -> Iterator[Rule]:
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
        metric="cluster_allreduce_ring_busbw_gbps",
        gpu_model="cpu",
        scope="cluster",
        min_value=0,
        min_inclusive=False,
        required=False,
        unit="GB/s",
        source=_SRC_CPU,
    )


def _burn_in_rules() -> Iterator[Rule]:
    """Only where a burn-in was ordered (``rules.EXPECTED_BY_CHECK``: the measurement
    expects ``burn_in_hours``); there, a missing figure fails like any other."""
    for model in ("*", "cpu"):
        yield Rule(
            metric="burn_in_hours",
            gpu_model=model,
            baseline_from="burn_in_hours",
            min_variance=-0.001,
            check="burn_in",
            unit="h",
            source=_SRC_BURN_IN_HOURS,
        )
    for metric in ("burn_in_gemm_slowdown", "burn_in_allreduce_slowdown"):
        yield Rule(
            metric=metric, gpu_model="*", max_value=0.05, check="burn_in", source=_SRC_BURN_IN_SLOW
        )
        yield Rule(
            metric=metric, gpu_model="cpu", min_value=0, check="burn_in", source=_SRC_BURN_IN_CPU
        )
    yield Rule(
        metric="burn_in_allreduce_wrong_count",
        gpu_model="*",
        equals=0,
        check="burn_in",
        source=_SRC_WRONG,
    )
    yield Rule(
        metric="burn_in_throttled_gpus",
        gpu_model="*",
        equals=0,
        check="burn_in",
        source=_SRC_BURN_IN_THROTTLE,
    )


#: The seed rule set (VALIDATION.md). The portal stores rules as data; these seed it.
DEFAULT_RULES: tuple[Rule, ...] = (
    *_compute_rules(),
    *_interconnect_rules(),
    *_health_rules(),
    *_ecc_mode_rules(),
    *_cluster_rules(),
    *_cpu_rules(),
    *_burn_in_rules(),
)
