"""The one path from the agent's raw outputs to the metrics the rules read (pure: no
Django). ``derive(document, gpu_model=…, expected=…)`` parses each check's raw output with
the parsers in ``parsers/`` and returns a ``rules.Measurement``: the metrics, each check's
outcome (a damaged output is a ``parse_error``), and the problems the outputs showed
(XID 79, every NVLink inactive, ``-nan`` from nccl-tests, an unfinished agent …), each with
its own reason code.

:data:`METRICS` is the table of every metric: unit, the check that produces it, and
whether it is informational (shown in the report, read by no rule). ``table_problems``
says where the table, the rules and this module disagree (a test and ``make test`` keep
it empty; the README prints the table: ``metric_table_markdown``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inventory.gpus import BY_KEY
from provisioning.validation.parsers import (
    parse_dcgmi,
    parse_ib_write_bw,
    parse_ibstat,
    parse_nccl_tests,
    parse_nvbandwidth,
    parse_nvidia_smi_csv,
)
from provisioning.validation.rules import (
    IB_FABRICS,
    XID_CRITICAL,
    XID_NOTED,
    CheckOutcome,
    Measurement,
    Reason,
    Rule,
    metric_key,
    normalize_gpu_model,
)

__all__ = ["METRICS", "MetricSpec", "derive", "metric_table_markdown", "table_problems"]


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


def _reason(code: str, text: str, **params: Any) -> Reason:
    return Reason(code=code, params=params, text=text)


class _Out:
    """What derivation collects (a metric outside :data:`METRICS` is a programming error)."""

    def __init__(self) -> None:
        self.metrics: dict[str, Any] = {}
        self.problems: list[Reason] = []
        self.observations: list[Reason] = []
        self.parse_errors: dict[str, str] = {}

    def put(self, name: str, value: Any, size: int | None = None) -> None:
        if name not in METRICS:
            raise KeyError(f"metric {name!r} is not in metrics.METRICS")
        self.metrics[metric_key(name, size)] = value


def _finite_list(values: Iterable[Any]) -> list[float] | None:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return None
        out.append(float(v))
    return out


# --------------------------------------------------------------------- per check


def _smi_rows(check: dict[str, Any], out: _Out) -> list[dict[str, Any]] | None:
    parsed = parse_nvidia_smi_csv(check.get("raw") or "")
    if parsed["damaged"]:
        out.parse_errors[check["name"]] = "; ".join(parsed["errors"])
        return None
    rows: list[dict[str, Any]] = parsed["rows"]
    return rows


def _inventory(check: dict[str, Any], out: _Out, gpu_model: str) -> None:
    rows = _smi_rows(check, out)
    if rows is None:
        return
    out.put("gpu_count", len(rows))
    want = normalize_gpu_model(gpu_model)
    names = [str(r.get("name") or "") for r in rows]
    wrong = [i for i, n in enumerate(names) if normalize_gpu_model(n) != want]
    out.put("gpu_model_mismatch_count", len(wrong))
    if wrong:
        out.problems.append(
            _reason(
                "gpu_model_mismatch",
                f"GPU {wrong[0]} is {names[wrong[0]]}, the node type sells {gpu_model}",
                gpu=wrong[0],
                found=names[wrong[0]],
                expected=gpu_model,
            )
        )
    mems = [r.get("memory_total_mib") for r in rows]
    if all(isinstance(m, int) for m in mems):
        out.put("gpu_memory_mib", mems)
    mig = [str(r.get("mig_mode_current") or "").strip().lower() for r in rows]
    out.put("mig_enabled_gpus", sum(m == "enabled" for m in mig))
    if "enabled" in mig:
        gpu = mig.index("enabled")
        out.problems.append(_reason("mig_enabled", f"GPU {gpu} has MIG mode enabled", gpu=gpu))


def _ecc(check: dict[str, Any], out: _Out) -> None:
    rows = _smi_rows(check, out)
    if rows is None:
        return

    def per_gpu(*keys: str) -> list[int] | None:
        values: list[int] = []
        for r in rows:
            got = [r.get(k) for k in keys]
            ints = [v for v in got if isinstance(v, int)]
            if len(ints) != len(got):
                return None  # [N/A]: this GPU reports no such counter
            values.append(max(ints))
        return values

    for metric, keys in (
        ("ecc_sram_uncorrectable", ("uncorrected_volatile_sram", "uncorrected_aggregate_sram")),
        ("ecc_sram_correctable", ("corrected_volatile_sram", "corrected_aggregate_sram")),
        (
            "ecc_dram_errors",
            (
                "uncorrected_volatile_dram",
                "uncorrected_aggregate_dram",
                "corrected_volatile_dram",
                "corrected_aggregate_dram",
            ),
        ),
    ):
        values = per_gpu(*(f"ecc_errors_{k}" for k in keys))
        if values is not None:
            out.put(metric, values)
    modes = [r.get("ecc_mode_current") for r in rows]
    out.put("ecc_off_gpus", sum(str(m or "").strip().lower() != "enabled" for m in modes))
    pending = [r.get("retired_pages_pending") for r in rows]
    if all(isinstance(p, str | int) for p in pending):  # [N/A] on a GPU that has none
        out.put("retired_pages_pending", sum(_yes(p) for p in pending))
    retired = [(r.get("retired_pages_sbe"), r.get("retired_pages_dbe")) for r in rows]
    if all(isinstance(sbe, int) and isinstance(dbe, int) for sbe, dbe in retired):
        out.put("retired_pages_total", [sbe + dbe for sbe, dbe in retired])
    sram = out.metrics.get("ecc_sram_uncorrectable")
    if isinstance(sram, list) and any(sram):
        gpu = next(i for i, v in enumerate(sram) if v)
        out.problems.append(
            _reason(
                "ecc_uncorrectable",
                f"GPU {gpu}: {sram[gpu]} uncorrectable SRAM ECC errors",
                gpu=gpu,
                count=sram[gpu],
            )
        )


def _yes(value: Any) -> bool:
    if isinstance(value, int):
        return value > 0
    return str(value or "").strip().lower() in ("yes", "true")


def _remap(check: dict[str, Any], out: _Out) -> None:
    rows = _smi_rows(check, out)
    if rows is None:
        return
    for metric in ("remapped_rows_pending", "remapped_rows_failure"):
        values = [r.get(metric) for r in rows]
        if all(isinstance(v, str | int) for v in values):  # [N/A]: not measured, not 0
            out.put(metric, sum(_yes(v) for v in values))
    unc = [r.get("remapped_rows_uncorrectable") for r in rows]
    if all(isinstance(v, int) for v in unc):
        out.put("remapped_rows_uncorrectable", unc)


_NVLINK_GPU_RE = re.compile(r"^GPU (\d+):")
_NVLINK_LINK_RE = re.compile(r"^\s*Link (\d+):\s*(.*)$")


def _nvlink(check: dict[str, Any], out: _Out, gpu_model: str) -> None:
    raw = check.get("raw") or ""
    links = inactive = 0
    all_inactive: list[int] = []
    gpu: int | None = None
    for line in raw.splitlines():
        if m := _NVLINK_GPU_RE.match(line.strip()):
            gpu = int(m.group(1))
        elif "all links are inactive" in line.lower():
            all_inactive.append(gpu if gpu is not None else -1)
        elif m := _NVLINK_LINK_RE.match(line):
            links += 1
            if "inactive" in m.group(2).lower():
                inactive += 1
    out.put("nvlink_inactive_links", inactive)
    out.put("nvlink_links_total", links)
    out.put("nvlink_all_inactive_gpus", len(all_inactive))
    facts = BY_KEY.get(normalize_gpu_model(gpu_model))
    if facts is None or facts.nvlink_links is None:
        return  # a PCIe card: no NVLink expected (no rule reads these either)
    if all_inactive:
        out.problems.append(
            _reason(
                "nvlink_all_inactive",
                f"GPU {all_inactive[0]}: NVML says all NVLinks are inactive",
                gpu=all_inactive[0],
            )
        )
    elif links == 0:
        out.problems.append(
            _reason(
                "nvlink_no_links",
                "nvidia-smi nvlink -s listed no link (an empty output is not a pass)",
                check="nvlink",
            )
        )
    elif inactive:
        out.problems.append(
            _reason("nvlink_inactive", f"{inactive} NVLinks are inactive", count=inactive)
        )


_XID_RE = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+)")


def _xid(check: dict[str, Any], out: _Out) -> None:
    codes = [
        int(m.group(2)) for ln in (check.get("raw") or "").splitlines() if (m := _XID_RE.search(ln))
    ]
    critical = sorted({c for c in codes if c in XID_CRITICAL})
    out.put("xid_critical_count", sum(c in XID_CRITICAL for c in codes))
    out.put("xid_codes", sorted(set(codes)))
    if critical:
        out.problems.append(
            _reason(
                "xid_critical",
                "kernel log shows XID " + ", ".join(map(str, critical)),
                xids=", ".join(map(str, critical)),
            )
        )
    noted = sorted({c for c in codes if c in XID_NOTED})
    if noted:
        out.observations.append(
            _reason(
                "xid_noted",
                "kernel log shows XID " + ", ".join(map(str, noted)) + " (contained ECC error)",
                xids=", ".join(map(str, noted)),
            )
        )


def _dcgm(check: dict[str, Any], out: _Out) -> None:
    parsed = parse_dcgmi(check.get("raw") or "")
    if parsed["damaged"]:
        out.parse_errors["dcgm_diag"] = "; ".join(parsed["errors"])
        return
    results = parsed["results"]
    out.put("dcgm_fail_count", sum(r["result"] == "fail" for r in results))
    out.put("dcgm_skip_count", sum(r["result"] == "skip" for r in results))
    out.put("dcgm_warn_count", sum(r["result"] == "warn" for r in results))


def _nvbandwidth(check: dict[str, Any], out: _Out) -> None:
    parsed = parse_nvbandwidth(check.get("raw") or "")
    if parsed["damaged"]:
        out.parse_errors["nvbandwidth"] = "; ".join(parsed["errors"])
        return
    tests = parsed["tests"]
    for metric, name in (
        ("h2d_bandwidth_gbps", "host_to_device_memcpy_ce"),
        ("d2h_bandwidth_gbps", "device_to_host_memcpy_ce"),
    ):
        if name in tests and tests[name]["matrix"]:
            row = tests[name]["matrix"][0]
            if all(v is not None for v in row):
                out.put(metric, row)
    p2p = tests.get("device_to_device_memcpy_read_ce")
    if p2p:
        mins = []
        for row in p2p["matrix"]:
            peers = [v for v in row if v is not None]
            mins.append(min(peers) if peers else 0.0)
        out.put("p2p_bandwidth_gbps", mins)


_NCCL_DATA_ROW = re.compile(r"^\s*\d+\s+\d+\s+\S+")


def _allreduce(check: dict[str, Any], out: _Out) -> None:
    raw = check.get("raw") or ""
    parsed = parse_nccl_tests(raw)
    data_rows = [
        ln
        for ln in raw.splitlines()
        if not ln.lstrip().startswith("#") and _NCCL_DATA_ROW.match(ln)
    ]
    if parsed["damaged"]:
        errors = "; ".join(parsed["errors"])
        out.parse_errors["allreduce"] = errors
        if not data_rows:
            out.problems.append(
                _reason(
                    "nccl_no_rows",
                    "nccl-tests ran no row (the message size did not fit in GPU memory?): "
                    + errors,
                    check="allreduce",
                )
            )
        elif "finite" in errors or "not a number" in errors:
            token = re.search(r"'([^']*)' is not a (?:finite )?number", errors)
            out.problems.append(
                _reason(
                    "not_finite",
                    f"nccl-tests printed a value that is not a finite number: {errors}",
                    check="allreduce",
                    token=token.group(1) if token else "",
                )
            )
        return
    rows = parsed["rows"]
    size = max(r["size_bytes"] for r in rows)
    at = [r for r in rows if r["size_bytes"] == size]
    busbw = min(min(r["out_of_place"]["busbw_gbps"], r["in_place"]["busbw_gbps"]) for r in at)
    out.put("allreduce_busbw_gbps", busbw, size)
    out.put("allreduce_message_size_bytes", size)
    wrong = sum((r[k]["wrong"] or 0) for r in rows for k in ("out_of_place", "in_place"))
    wrong += parsed["out_of_bounds"] or 0
    if any(r[k]["wrong"] is None for r in rows for k in ("out_of_place", "in_place")):
        if parsed["check_column"] == "#wrong":  # N/A: run with -c 0, nothing was checked
            out.problems.append(
                _reason(
                    "nccl_not_checked",
                    "nccl-tests ran without data checking (#wrong N/A)",
                    check="allreduce",
                )
            )
    out.put("allreduce_wrong_count", wrong)
    if wrong:
        out.problems.append(
            _reason(
                "nccl_wrong_values",
                f"nccl-tests reported {wrong} wrong values (exit status "
                f"{check.get('return_code')})",
                check="allreduce",
                count=wrong,
            )
        )


def _gemm(check: dict[str, Any], out: _Out) -> None:
    try:
        doc = json.loads(check.get("raw") or "")
    except json.JSONDecodeError as exc:
        out.parse_errors["gemm"] = f"GEMM output is not JSON: {exc}"
        return
    if not isinstance(doc, dict):
        out.parse_errors["gemm"] = "GEMM output is not a JSON object"
        return
    dtype = str(doc.get("dtype") or "")
    tflops = _finite_list(doc.get("tflops") or [])
    if dtype not in ("bf16", "fp16"):
        out.parse_errors["gemm"] = f"unknown GEMM dtype {dtype!r}"
        return
    if tflops is None:
        out.problems.append(
            _reason(
                "not_finite",
                "the GEMM gave a figure that is not a finite number",
                check="gemm",
                token=str(doc.get("tflops")),
            )
        )
    elif tflops:
        out.put(f"gemm_tflops_{dtype}", tflops)
    errs = doc.get("max_rel_error")
    rel = _finite_list(errs) if isinstance(errs, list) else None
    if rel is not None and rel:
        out.put("gemm_rel_error", rel)
    fp8 = doc.get("fp8_tflops")
    if isinstance(fp8, list) and fp8 and all(isinstance(v, int | float) for v in fp8):
        out.put("gemm_tflops_fp8", fp8)
    if isinstance(doc.get("seconds"), int | float):
        out.put("gemm_sustained_s", doc["seconds"])
    _samples(doc, out)


_IDLE_OR_SW_CAP = 0x1 | 0x4  # azure_gpu_clock_throttling.nhc: idle, none, SW power cap pass


def _samples(doc: dict[str, Any], out: _Out, prefix: str = "", during: str = "the GEMM") -> None:
    samples = [s for s in doc.get("samples") or [] if isinstance(s, dict) and s.get("csv")]
    per_gpu: dict[int, dict[str, list[float]]] = {}
    throttled: set[int] = set()
    reasons_seen: dict[int, str] = {}
    for sample in samples:
        if sample.get("return_code") != 0:
            continue
        parsed = parse_nvidia_smi_csv(sample["csv"])
        if parsed["damaged"]:
            continue
        for row in parsed["rows"]:
            idx = row.get("index")
            if not isinstance(idx, int):
                continue
            slot = per_gpu.setdefault(idx, {"temp": [], "power": [], "clock": []})
            for key, name in (
                ("temperature_gpu", "temp"),
                ("power_draw_w", "power"),
                ("clocks_sm_mhz", "clock"),
            ):
                if isinstance(row.get(key), int | float):
                    slot[name].append(float(row[key]))
            reason = next(
                (v for k, v in row.items() if k.startswith("clocks_") and k.endswith("_active")),
                None,
            )
            try:
                mask = int(str(reason), 16)
            except ValueError:
                continue
            if mask & ~_IDLE_OR_SW_CAP:
                throttled.add(idx)
                reasons_seen.setdefault(idx, str(reason))
    if not per_gpu:
        return  # no sample: throttled_gpus missing, the rule fails closed
    gpus = sorted(per_gpu)
    out.put(prefix + "throttled_gpus", len(throttled))
    for metric, name, pick in (
        ("gpu_temperature_max_c", "temp", max),
        ("gpu_power_max_w", "power", max),
        ("gpu_sm_clock_min_mhz", "clock", min),
    ):
        if all(per_gpu[g][name] for g in gpus):
            out.put(prefix + metric, [pick(per_gpu[g][name]) for g in gpus])
    if throttled:
        gpu = min(throttled)
        out.problems.append(
            _reason(
                "gpu_throttled",
                f"GPU {gpu} throttled during {during} (reasons {reasons_seen[gpu]})",
                gpu=gpu,
                reasons=reasons_seen[gpu],
            )
        )


def _slowdown(series: list[float]) -> float | None:
    """1 − (median of the last third) / (median of the first third) of a round series;
    0 when it did not slow (a node that got faster did not slow down)."""
    if not series:
        return None
    third = max(1, len(series) // 3)
    first = sorted(series[:third])[(third - 1) // 2]
    last = sorted(series[-third:])[(third - 1) // 2]
    if first <= 0:
        return 1.0
    return round(max(0.0, 1.0 - last / first), 4)


def _burn_in(check: dict[str, Any], out: _Out) -> None:
    """The burn-in's rounds (GEMM per GPU, all-reduce) and samples: how long it ran, how
    much each GPU and the all-reduce slowed from the first third of the rounds to the last,
    and the throttling seen (GPU path). A round that failed is a problem."""
    try:
        doc = json.loads(check.get("raw") or "")
    except json.JSONDecodeError as exc:
        out.parse_errors["burn_in"] = f"burn-in output is not JSON: {exc}"
        return
    rounds = doc.get("rounds") if isinstance(doc, dict) else None
    seconds = doc.get("seconds") if isinstance(doc, dict) else None
    if not isinstance(rounds, list) or not rounds or not isinstance(seconds, int | float):
        out.parse_errors["burn_in"] = "burn-in output has no rounds or no duration"
        return
    out.put("burn_in_hours", round(float(seconds) / 3600, 6))
    cpu = check.get("device") == "cpu"
    busbw: list[float] = []
    wrong = 0
    gemm: list[list[float]] = []
    for i, r in enumerate(rounds):
        if r.get("allreduce_status") != "completed":
            out.problems.append(
                _reason("burn_in_round_failed", f"burn-in round {i + 1}: the all-reduce failed",
                        check="burn_in", round=i + 1)
            )  # fmt: skip
            continue
        if cpu:
            values = _finite_list([r.get("gflops"), r.get("allreduce_busbw_gbps")])
            if values is None:
                out.parse_errors["burn_in"] = f"round {i + 1}: a figure is not a number"
                return
            gemm.append([values[0]])
            busbw.append(values[1])
            continue
        tflops = _finite_list(r.get("tflops") or [])
        sub = _Out()
        _allreduce({"raw": r.get("allreduce_raw") or ""}, sub)
        figure = next((v for k, v in sub.metrics.items() if k.startswith("allreduce_busbw")), None)
        if tflops is None or not tflops or sub.parse_errors or figure is None:
            out.parse_errors["burn_in"] = f"round {i + 1}: GEMM or all-reduce figures unreadable"
            return
        gemm.append(tflops)
        busbw.append(float(figure))
        wrong += int(sub.metrics.get("allreduce_wrong_count") or 0)
    if gemm and len({len(g) for g in gemm}) == 1:
        per_gpu = [_slowdown([g[i] for g in gemm]) for i in range(len(gemm[0]))]
        out.put("burn_in_gemm_slowdown", per_gpu[0] if cpu else per_gpu)
    if busbw:
        out.put("burn_in_allreduce_slowdown", _slowdown(busbw))
    if not cpu:
        out.put("burn_in_allreduce_wrong_count", wrong)
        _samples(doc, out, prefix="burn_in_", during="the burn-in")


def _copy(check: dict[str, Any], out: _Out) -> None:
    try:
        doc = json.loads(check.get("raw") or "")
    except json.JSONDecodeError as exc:
        out.parse_errors["memory_bandwidth"] = f"copy output is not JSON: {exc}"
        return
    values = _finite_list(doc.get("hbm_gbps") or []) if isinstance(doc, dict) else None
    if values is None:
        out.problems.append(
            _reason("not_finite", "a copy figure is not a finite number", check="memory_bandwidth")
        )
    elif values:
        out.put("hbm_bandwidth_gbps", values)


_IB_SECTION = re.compile(r"^### (.+)$", re.MULTILINE)
_IB_DEVICE = re.compile(r"^device (\S+) exit (\S+)$")


def _ib(check: dict[str, Any], out: _Out, fabric: str | None) -> None:
    """The RDMA listing (``ibstat``) and one ``ib_write_bw`` section per NIC measured.

    ``ib_nic_count`` counts the devices whose link layer is InfiniBand: a front-end or
    storage Ethernet RDMA NIC (RoCE) on an InfiniBand node is not a fabric NIC, so it is
    neither counted nor judged (the agent does not measure it). On an InfiniBand fabric
    every InfiniBand device must have been measured. Elsewhere (RoCE, Ethernet) the
    Ethernet RDMA devices are counted (``rdma_ethernet_nic_count``, informational: ibstat
    cannot tell a RoCE fabric port from a front-end one) and their figures recorded."""
    parts = _IB_SECTION.split(check.get("raw") or "")
    listing: dict[str, Any] | None = None
    measured: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        title, body = parts[i].strip(), parts[i + 1]
        if m := _IB_DEVICE.match(title):
            measured[m.group(1)] = body
        elif listing is None:
            listing = parse_ibstat(body)
    if listing is None or listing["damaged"]:
        why = "; ".join(listing["errors"]) if listing else "no RDMA device listing (ibstat)"
        out.parse_errors["ib_write_bw"] = f"RDMA device listing: {why}"
        return
    layers = {d["name"]: d["link_layer"] for d in listing["devices"]}
    infiniband = [d for d, layer in layers.items() if layer == "InfiniBand"]
    ethernet = [d for d, layer in layers.items() if layer == "Ethernet"]
    out.put("ib_nic_count", len(infiniband))
    out.put("rdma_ethernet_nic_count", len(ethernet))
    if fabric in IB_FABRICS:
        fabric_nics = infiniband
    else:
        fabric_nics = infiniband or ethernet
    values = []
    for device in fabric_nics:
        if device not in measured:
            out.problems.append(
                _reason(
                    "ib_nic_not_measured",
                    f"{device} (link layer {layers[device]}) was listed but not measured",
                    device=device,
                )
            )
            continue
        parsed = parse_ib_write_bw(measured[device])
        if parsed["damaged"]:
            out.parse_errors["ib_write_bw"] = f"{device}: " + "; ".join(parsed["errors"])
            return
        values.append(parsed["bw_avg_gbps"])
    if values and len(values) == len(fabric_nics):
        out.put("ib_write_bw_gbps", values)
        out.put("ib_write_bw_devices", fabric_nics)


_CPU_METRICS = {
    "gemm": "gemm_gflops_cpu",
    "memory_bandwidth": "memcopy_bandwidth_gbps_cpu",
    "allreduce": "allreduce_busbw_gbps_cpu",
}
_DERIVE = {
    "ecc": _ecc,
    "ecc_remap": _remap,
    "xid": _xid,
    "dcgm_diag": _dcgm,
    "nvbandwidth": _nvbandwidth,
    "allreduce": _allreduce,
    "gemm": _gemm,
    "memory_bandwidth": _copy,
}


def derive(
    document: Mapping[str, Any],
    *,
    node: str,
    gpu_model: str,
    fabric: str | None = None,
    expected: Mapping[str, Any] | None = None,
    allow_injected: bool = False,
) -> Measurement:
    """The rules' view of an agent document: metrics derived from the raw outputs, each
    check's outcome, and the problems found. Never raises on a bad document: what cannot
    be read is a parse error or a problem (fail closed)."""
    out = _Out()
    host = document.get("host") if isinstance(document.get("host"), dict) else {}
    device = str((host or {}).get("device", ""))
    checks = [c for c in document.get("checks", []) if isinstance(c, dict) and c.get("name")]
    for check in checks:
        name = str(check["name"])
        if check.get("status") != "completed":
            continue
        if name == "burn_in":  # both paths: the CPU path's rounds are judged too
            try:
                _burn_in(check, out)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                out.parse_errors[name] = f"unexpected output ({type(exc).__name__}: {exc})"
            continue
        if device == "cpu":
            metric = _CPU_METRICS.get(name)
            if metric and isinstance(check.get("value"), int | float):
                out.put(metric, check["value"])
            continue
        try:
            if name == "gpu_inventory":
                _inventory(check, out, gpu_model)
            elif name == "nvlink":
                _nvlink(check, out, gpu_model)
            elif name == "ib_write_bw":
                _ib(check, out, fabric)
            elif name in _DERIVE:
                _DERIVE[name](check, out)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            out.parse_errors[name] = f"unexpected output ({type(exc).__name__}: {exc})"
    if document.get("complete") is False:
        done = {str(c["name"]) for c in checks}
        missing = [n for n in document.get("planned") or [] if n not in done]
        out.problems.append(
            _reason(
                "agent_incomplete",
                "the agent stopped before finishing: "
                + (", ".join(missing) if missing else "its last line is missing"),
                checks=", ".join(missing),
            )
        )
        for name in missing:
            out.problems.append(
                _reason("check_not_finished", f"check {name} did not finish", check=name)
            )
    if (host or {}).get("injected_figures") and not allow_injected:
        out.problems.append(
            _reason(
                "injected_figures",
                "the GEMM and copy figures were injected (a test document), not measured",
            )
        )
    outcomes = [
        CheckOutcome(
            str(c.get("name")),
            str(c.get("status")),
            c.get("return_code"),
            c.get("reason") or "",
            out.parse_errors.get(str(c.get("name"))),
            str((c.get("details") or {}).get("reason_code") or "")
            if isinstance(c.get("details"), dict)
            else "",
        )
        for c in checks
    ]
    return Measurement(
        node=node,
        gpu_model=gpu_model,
        device=device,
        fabric=fabric,
        metrics=out.metrics,
        checks=outcomes,
        expected=dict(expected or {}),
        problems=out.problems,
        observations=out.observations,
    )


# --------------------------------------------------------------------- the table


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
