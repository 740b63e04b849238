"""The checks. Each returns a CheckResult; none decides pass or fail (the portal does).

Metric names match the portal's rules (provisioning/validation/rules.py), but nothing is
imported from there: the agent travels alone.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from . import gpu, ring
from .runner import COMPLETED, FAILED, CheckResult, from_cmd, guarded, run_cmd, skipped, which

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is optional on a node
    np = None  # type: ignore[assignment]

GIB = 1024**3
MIB = 1024**2
#: XIDs that fail a node (azurehpc-health-checks azure_gpu_xid.nhc); the portal re-judges.
XID_CRITICAL = frozenset({48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120})
_XID_RE = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+)")


@dataclass
class Settings:
    """What to run and how big (profile defaults, overridden by --sizes/--timeout)."""

    profile: str
    device: str
    timeout: float
    gemm_n: int
    gemm_warmup: int
    gemm_iters: int
    copy_bytes: int
    copy_warmup: int
    copy_iters: int
    allreduce_bytes: int
    allreduce_warmup: int
    allreduce_iters: int
    allreduce_procs: int
    dcgm_level: int
    inventory: dict[str, Any] = field(default_factory=dict)

    @property
    def gpu_names(self) -> list[str]:
        return [str(g.get("name") or "") for g in self.inventory.get("gpus", [])]


def make_settings(profile: str, device: str, timeout: float | None) -> Settings:
    cpu = device == "cpu"
    acceptance = profile == "acceptance"
    return Settings(
        profile=profile,
        device=device,
        timeout=timeout or (1800.0 if acceptance else 300.0),
        gemm_n=(2048 if acceptance else 1024) if cpu else 8192,
        gemm_warmup=(5 if acceptance else 3) if cpu else 50,
        gemm_iters=(20 if acceptance else 10) if cpu else 100,
        copy_bytes=(256 * MIB if acceptance else 64 * MIB) if cpu else 1 * GIB,
        copy_warmup=3 if cpu else 5,
        copy_iters=(20 if acceptance else 10) if cpu else 20,
        allreduce_bytes=(64 * MIB if acceptance else 8 * MIB) if cpu else 16 * GIB,
        allreduce_warmup=2 if cpu else 5,
        allreduce_iters=(10 if acceptance else 5) if cpu else 20,
        allreduce_procs=max(2, min(4, os.cpu_count() or 2)),
        dcgm_level=3 if acceptance else 1,
    )


def _gpu_only(name: str, s: Settings) -> CheckResult | None:
    if s.device == "cpu":
        return skipped(name, "cpu", "no NVIDIA GPU on this host (device cpu)")
    return None


def _tool(name: str, tool: str, s: Settings) -> CheckResult | None:
    if not which(tool):
        return skipped(name, s.device, f"{tool} not found on PATH")
    return None


# ------------------------------------------------------------------------------ checks


def check_gpu_inventory(s: Settings) -> CheckResult:
    if pre := _gpu_only("gpu_inventory", s):
        return pre
    gpus = s.inventory.get("gpus", [])
    if which("nvidia-smi"):
        fields = (
            "index,name,uuid,pci.bus_id,memory.total,driver_version,"
            "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max"
        )
        check = from_cmd(
            "gpu_inventory",
            s.device,
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv"],
            s.timeout,
            raw_format="nvidia-smi-csv",
            metric="gpu_count",
        )
        if check.status == COMPLETED:
            check.value = max(0, len([ln for ln in check.raw.splitlines() if ln.strip()]) - 1)
        return check
    return CheckResult(
        name="gpu_inventory",
        device=s.device,
        metric="gpu_count",
        value=len(gpus),
        return_code=0,
        raw="\n".join(s.gpu_names),
        details={"source": s.inventory.get("source")},
    )


def check_gemm(s: Settings) -> CheckResult:
    if s.device == "cpu":
        if np is None:
            raise RuntimeError("numpy is not importable: cannot measure the CPU GEMM")
        n = s.gemm_n
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        c = np.empty((n, n), dtype=np.float32)
        for _ in range(s.gemm_warmup):
            np.matmul(a, b, out=c)
        started = time.perf_counter()
        for _ in range(s.gemm_iters):
            np.matmul(a, b, out=c)
        elapsed = time.perf_counter() - started
        gflops = 2 * n**3 * s.gemm_iters / elapsed / 1e9
        if not np.isfinite(c).all():
            raise RuntimeError("GEMM produced non-finite values")
        return CheckResult(
            name="gemm",
            device="cpu",
            metric="gemm_gflops_cpu",
            unit="GFLOPS",
            value=round(gflops, 3),
            return_code=0,
            raw=f"numpy.matmul float32 {n}x{n}x{n}, {s.gemm_warmup} warm-up + "
            f"{s.gemm_iters} timed: {elapsed:.6f} s, {gflops:.3f} GFLOPS",
            details={
                "n": n,
                "dtype": "float32",
                "warmup": s.gemm_warmup,
                "iters": s.gemm_iters,
                "numpy": np.__version__,
            },
        )
    res = gpu.gemm_all_gpus(s.gemm_n, s.gemm_warmup, s.gemm_iters, s.timeout)
    values = [round(v, 3) for v in res["tflops"]]
    return CheckResult(
        name="gemm",
        device="cuda",
        metric=f"gemm_tflops_{res['dtype']}",
        unit="TFLOPS",
        value=values,
        return_code=0,
        raw="\n".join(f"GPU {i}: {v:.3f} TFLOPS {res['dtype']}" for i, v in enumerate(values)),
        details={
            "n": s.gemm_n,
            "warmup": s.gemm_warmup,
            "iters": s.gemm_iters,
            **{k: v for k, v in res.items() if k != "tflops"},
        },
    )


def check_memory_bandwidth(s: Settings) -> CheckResult:
    if s.device == "cpu":
        if np is None:
            raise RuntimeError("numpy is not importable: cannot measure memory bandwidth")
        n = s.copy_bytes // 8
        src = np.ones(n, dtype=np.float64)
        dst = np.empty_like(src)
        for _ in range(s.copy_warmup):
            np.copyto(dst, src)
        started = time.perf_counter()
        for _ in range(s.copy_iters):
            np.copyto(dst, src)
        elapsed = time.perf_counter() - started
        gbps = 2 * n * 8 * s.copy_iters / elapsed / 1e9
        return CheckResult(
            name="memory_bandwidth",
            device="cpu",
            metric="memcopy_bandwidth_gbps_cpu",
            unit="GB/s",
            value=round(gbps, 3),
            return_code=0,
            raw=f"numpy.copyto {n * 8} bytes x {s.copy_iters}: {elapsed:.6f} s, "
            f"{gbps:.3f} GB/s (read + write)",
            details={"bytes": n * 8, "iters": s.copy_iters, "counts": "read+write"},
        )
    values = [round(v, 3) for v in gpu.hbm_bandwidth(s.copy_bytes, s.copy_warmup, s.copy_iters)]
    return CheckResult(
        name="memory_bandwidth",
        device="cuda",
        metric="hbm_bandwidth_gbps",
        unit="GB/s",
        value=values,
        return_code=0,
        raw="\n".join(f"GPU {i}: {v:.3f} GB/s" for i, v in enumerate(values)),
        details={"bytes": s.copy_bytes, "iters": s.copy_iters, "counts": "read+write"},
    )


def check_nvbandwidth(s: Settings) -> CheckResult:
    if pre := _gpu_only("nvbandwidth", s) or _tool("nvbandwidth", "nvbandwidth", s):
        return pre
    tests = ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    if len(s.gpu_names) > 1:
        tests.append("device_to_device_memcpy_read_ce")
    check = from_cmd(
        "nvbandwidth",
        s.device,
        ["nvbandwidth", "-t", *tests],
        s.timeout,
        raw_format="nvbandwidth",
        metric="h2d_bandwidth_sum_gbps",
        unit="GB/s",
    )
    if m := re.search(r"^SUM host_to_device_memcpy_ce\s+([\d.]+)", check.raw, re.MULTILINE):
        check.value = float(m.group(1))
    return check


def check_allreduce(s: Settings) -> CheckResult:
    if s.device == "cpu":
        res = ring.cpu_allreduce(
            s.allreduce_bytes,
            s.allreduce_procs,
            s.allreduce_warmup,
            s.allreduce_iters,
            timeout=min(s.timeout, 120.0),
        )
        check = CheckResult(
            name="allreduce",
            device="cpu",
            metric="allreduce_busbw_gbps_cpu",
            unit="GB/s",
            value=round(res["busbw_gbps"], 4),
            return_code=0,
            raw=(
                f"{res['backend']} all-reduce, {res['ranks']} processes, {res['bytes']} bytes, "
                f"{res['iters']} iters: {res['time_s'] * 1e6:.1f} us, algbw "
                f"{res['algbw_gbps']:.4f} GB/s, busbw {res['busbw_gbps']:.4f} GB/s, "
                f"correct={res['correct']}"
            ),
            details={**res, "message_size_bytes": res["bytes"]},
        )
        if not res["correct"]:
            check.status = FAILED
            check.reason = "all-reduce produced wrong values"
        return check
    ngpu = len(s.gpu_names)
    if ngpu < 2:
        return skipped("allreduce", s.device, f"intra-node all-reduce needs 2 GPUs, found {ngpu}")
    if which("all_reduce_perf"):
        size = s.allreduce_bytes
        check = from_cmd(
            "allreduce",
            s.device,
            ["all_reduce_perf", "-b", str(size), "-e", str(size), "-g", str(ngpu)],
            s.timeout,
            raw_format="nccl-tests",
            metric="allreduce_busbw_gbps",
            unit="GB/s",
        )
        check.details.update({"backend": "nccl-tests", "message_size_bytes": size})
        if m := re.search(r"^#\s*Avg bus bandwidth\s*:\s*([\d.eE+-]+)", check.raw, re.MULTILINE):
            check.value = float(m.group(1))
        return check
    res = gpu.nccl_allreduce(s.allreduce_bytes, s.allreduce_warmup, s.allreduce_iters, s.timeout)
    check = CheckResult(
        name="allreduce",
        device="cuda",
        metric="allreduce_busbw_gbps",
        unit="GB/s",
        value=round(res["busbw_gbps"], 3),
        return_code=0,
        raw=f"torch-nccl all-reduce {res}",
        details={**res, "message_size_bytes": res["bytes"]},
    )
    if not res["correct"]:
        check.status = FAILED
        check.reason = "all-reduce produced wrong values"
    return check


def check_dcgm_diag(s: Settings) -> CheckResult:
    if pre := _gpu_only("dcgm_diag", s) or _tool("dcgm_diag", "dcgmi", s):
        return pre
    geforce = any("geforce" in n.lower() or "rtx 30" in n.lower() for n in s.gpu_names)
    level = 1 if geforce else s.dcgm_level
    check = from_cmd(
        "dcgm_diag",
        s.device,
        ["dcgmi", "diag", "-r", str(level), "-j"],
        s.timeout,
        raw_format="dcgmi",
    )
    check.details["level"] = level
    return check


def check_nvlink(s: Settings) -> CheckResult:
    if pre := _gpu_only("nvlink", s) or _tool("nvlink", "nvidia-smi", s):
        return pre
    check = from_cmd(
        "nvlink",
        s.device,
        ["nvidia-smi", "nvlink", "-s"],
        s.timeout,
        metric="nvlink_inactive_links",
    )
    if check.status == COMPLETED:
        links = re.findall(r"^\s*Link \d+:.*$", check.raw, re.MULTILINE)
        check.value = sum("<inactive>" in ln.lower() for ln in links)
        check.details["links_total"] = len(links)
    return check


def check_xid(s: Settings) -> CheckResult:
    if pre := _gpu_only("xid", s):
        return pre
    attempts = []
    for argv in (["dmesg"], ["journalctl", "-k", "--no-pager", "-q"]):
        if not which(argv[0]):
            attempts.append(f"{argv[0]} not found")
            continue
        res = run_cmd(argv, min(s.timeout, 120.0))
        if res.return_code == 0 and res.output.strip():
            lines = [ln for ln in res.output.splitlines() if "NVRM: Xid" in ln]
            codes = [int(m.group(2)) for ln in lines if (m := _XID_RE.search(ln))]
            return CheckResult(
                name="xid",
                device=s.device,
                metric="xid_critical_count",
                value=sum(c in XID_CRITICAL for c in codes),
                return_code=0,
                raw="\n".join(lines),
                details={"source": argv[0], "xids": sorted(set(codes))},
            )
        attempts.append(f"{argv[0]}: {res.error or res.output.strip()[:200] or 'no output'}")
    return skipped("xid", s.device, "kernel log unreadable: " + "; ".join(attempts))


def check_ecc_remap(s: Settings) -> CheckResult:
    if pre := _gpu_only("ecc_remap", s) or _tool("ecc_remap", "nvidia-smi", s):
        return pre
    fields = (
        "gpu_bus_id,remapped_rows.correctable,remapped_rows.uncorrectable,"
        "remapped_rows.pending,remapped_rows.failure"
    )
    check = from_cmd(
        "ecc_remap",
        s.device,
        ["nvidia-smi", f"--query-remapped-rows={fields}", "--format=csv"],
        s.timeout,
        raw_format="nvidia-smi-csv",
        metric="remap_problem_gpus",
    )
    if "not supported" in check.raw.lower() and check.status != COMPLETED:
        return skipped("ecc_remap", s.device, "row remapping not supported on this GPU")
    if check.status == COMPLETED:
        bad = 0
        for line in check.raw.splitlines()[1:]:
            parts = [p.strip().lower() for p in line.split(",")]
            if len(parts) == 5 and any(p not in ("0", "no") for p in parts[3:]):
                bad += 1
        check.value = bad
    return check


CHECKS: dict[str, Callable[[Settings], CheckResult]] = {
    "gpu_inventory": check_gpu_inventory,
    "gemm": check_gemm,
    "memory_bandwidth": check_memory_bandwidth,
    "nvbandwidth": check_nvbandwidth,
    "allreduce": check_allreduce,
    "dcgm_diag": check_dcgm_diag,
    "nvlink": check_nvlink,
    "xid": check_xid,
    "ecc_remap": check_ecc_remap,
}


def run_checks(s: Settings, only: list[str] | None = None) -> list[CheckResult]:
    names = [n for n in CHECKS if not only or n in only]
    return [guarded(name, s.device, partial(CHECKS[name], s)) for name in names]
