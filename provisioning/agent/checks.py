"""The checks. Each returns a CheckResult with the tool's raw output; none decides pass or
fail, and none derives the metrics the rules read: the portal does both, from the raw
outputs, with its parsers (``provisioning.validation.metrics``). ``metric``/``value`` on
a check are the agent's own summary, for people reading a document; the portal ignores
them on the GPU path.

Nothing is imported from the portal: the agent travels alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from . import gpu
from .profiles import BURN_IN_ROUNDS, PROFILES, nccl_message_bytes
from .runner import (
    COMPLETED,
    FAILED,
    CheckResult,
    from_cmd,
    guarded,
    run_cmd,
    skipped,
    tool_missing,
    which,
)


def _numpy() -> Any:
    """numpy, imported only by the CPU path (a GPU run does not pay for it); None when
    it is not installed."""
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is optional on a node
        return None
    return numpy


GIB = 1024**3
MIB = 1024**2

#: ``nvidia-smi --query-gpu`` fields of the inventory check (model, memory, MIG).
INVENTORY_FIELDS = "index,name,memory.total,mig.mode.current,pci.bus_id,driver_version"
#: ECC mode and counters: the SRAM/DRAM counters as azurehpc-health-checks
#: azure_gpu_ecc.nhc reads them (NVML's SRAM/DRAM locations exist from Turing on), and
#: the page-retirement counts that Volta uses instead of row remapping (azure_gpu_ecc.nhc
#: reads them for V100 from ``nvidia-smi -q -d PAGE_RETIREMENT``). A GPU without ECC
#: (GeForce) prints ``[N/A]`` for all of them; each model's rules read what it has.
ECC_FIELDS = (
    "index,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.sram,ecc.errors.uncorrected.aggregate.sram,"
    "ecc.errors.uncorrected.volatile.dram,ecc.errors.uncorrected.aggregate.dram,"
    "ecc.errors.corrected.volatile.sram,ecc.errors.corrected.aggregate.sram,"
    "ecc.errors.corrected.volatile.dram,ecc.errors.corrected.aggregate.dram,"
    "retired_pages.sbe,retired_pages.dbe,retired_pages.pending"
)
REMAP_FIELDS = (
    "gpu_bus_id,remapped_rows.correctable,remapped_rows.uncorrectable,"
    "remapped_rows.pending,remapped_rows.failure"
)
#: Sampled during the sustained GEMM (driver ≥ 535: clocks_event_reasons; older:
#: clocks_throttle_reasons, as azure_gpu_clock_throttling.nhc does).
SAMPLE_FIELDS = "index,clocks.sm,temperature.gpu,power.draw,{reasons}"


@dataclass
class Settings:
    """What to run and how big (profile defaults, overridden by --sizes/--timeout)."""

    profile: str
    device: str
    timeout: float
    gemm_n: int
    gemm_warmup: int
    gemm_iters: int
    gemm_seconds: float
    copy_bytes: int
    copy_warmup: int
    copy_iters: int
    allreduce_bytes: int | None  # None: chosen by GPU memory (profiles.nccl_message_bytes)
    allreduce_warmup: int
    allreduce_iters: int
    allreduce_procs: int
    dcgm_level: int
    ib_seconds: int
    burn_in_seconds: int = 0  # 0: no burn-in (the profile's, or --sizes burn_in=SECONDS)
    inventory: dict[str, Any] = field(default_factory=dict)

    @property
    def gpu_names(self) -> list[str]:
        return [str(g.get("name") or "") for g in self.inventory.get("gpus", [])]

    @property
    def gpu_memory_mib(self) -> int | None:
        mems = [g.get("memory_total_mib") for g in self.inventory.get("gpus", [])]
        known = [m for m in mems if isinstance(m, int)]
        return min(known) if known and len(known) == len(mems) else None


def make_settings(profile: str, device: str, timeout: float | None) -> Settings:
    cpu = device == "cpu"
    acceptance = profile in ("acceptance", "burn_in")
    prof = PROFILES[profile]
    return Settings(
        profile=profile,
        device=device,
        timeout=timeout or (1800.0 if acceptance else 300.0),
        gemm_n=(2048 if acceptance else 1024) if cpu else 8192,
        gemm_warmup=(5 if acceptance else 3) if cpu else 50,
        gemm_iters=(20 if acceptance else 10) if cpu else 100,
        gemm_seconds=0.0 if cpu else prof.gemm_seconds,
        copy_bytes=(256 * MIB if acceptance else 64 * MIB) if cpu else 1 * GIB,
        copy_warmup=3 if cpu else 5,
        copy_iters=(20 if acceptance else 10) if cpu else 20,
        allreduce_bytes=(64 * MIB if acceptance else 8 * MIB) if cpu else None,
        allreduce_warmup=2 if cpu else 5,
        allreduce_iters=(10 if acceptance else 5) if cpu else 20,
        allreduce_procs=max(2, min(4, os.cpu_count() or 2)),
        dcgm_level=prof.dcgm_level,
        ib_seconds=prof.ib_seconds,
        burn_in_seconds=int(prof.burn_in_seconds),
    )


def _gpu_only(name: str, s: Settings) -> CheckResult | None:
    if s.device == "cpu":
        return skipped(name, "cpu", "no NVIDIA GPU on this host (device cpu)")
    return None


def _tool(name: str, tool: str, s: Settings) -> CheckResult | None:
    """A GPU check whose tool is absent fails (``tool_missing``): never a silent skip."""
    if not which(tool):
        return tool_missing(name, s.device, tool)
    return None


def _smi_query(name: str, s: Settings, query: str, fields: str, **kw: Any) -> CheckResult:
    if pre := _gpu_only(name, s) or _tool(name, "nvidia-smi", s):
        return pre
    return from_cmd(
        name,
        s.device,
        ["nvidia-smi", f"{query}={fields}", "--format=csv"],
        s.timeout,
        raw_format="nvidia-smi-csv",
        **kw,
    )


# ------------------------------------------------------------------------------ checks


def check_gpu_inventory(s: Settings) -> CheckResult:
    """GPU count, model, memory and MIG mode (``nvidia-smi --query-gpu``)."""
    check = _smi_query("gpu_inventory", s, "--query-gpu", INVENTORY_FIELDS, metric="gpu_count")
    if check.status == COMPLETED:
        check.value = max(0, len([ln for ln in check.raw.splitlines() if ln.strip()]) - 1)
    return check


def check_ecc(s: Settings) -> CheckResult:
    """ECC mode, SRAM/DRAM counters (volatile and aggregate, azure_gpu_ecc.nhc's query)
    and retired pages (Volta)."""
    return _smi_query("ecc", s, "--query-gpu", ECC_FIELDS)


def check_ecc_remap(s: Settings) -> CheckResult:
    """Row remapping: pending, failure, uncorrectable (Ampere and newer; older GPUs say
    "not supported": skipped, and no rule asks for it on those models)."""
    check = _smi_query("ecc_remap", s, "--query-remapped-rows", REMAP_FIELDS)
    if check.status == FAILED and "not supported" in check.raw.lower():
        return skipped("ecc_remap", s.device, "row remapping not supported on this GPU")
    return check


class _Sampler:
    """``nvidia-smi`` clocks, temperature, power and throttle reasons every ``interval``
    seconds while the GEMM runs; the CSV outputs are the raw samples."""

    def __init__(self, interval: float, timeout: float) -> None:
        self.interval = interval
        self.timeout = timeout
        self.samples: list[dict[str, Any]] = []
        self.fields = SAMPLE_FIELDS.format(reasons="clocks_event_reasons.active")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        argv = ["nvidia-smi", f"--query-gpu={self.fields}", "--format=csv"]
        res = run_cmd(argv, min(self.timeout, 30.0))
        if res.return_code != 0 and "clocks_event_reasons" in self.fields:  # driver < 535
            self.fields = SAMPLE_FIELDS.format(reasons="clocks_throttle_reasons.active")
            argv = ["nvidia-smi", f"--query-gpu={self.fields}", "--format=csv"]
            res = run_cmd(argv, min(self.timeout, 30.0))
        self.samples.append(
            {"t": round(time.monotonic(), 3), "return_code": res.return_code, "csv": res.output}
        )

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> _Sampler:
        if which("nvidia-smi"):
            self.sample()
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.timeout)
        if which("nvidia-smi"):
            self.sample()


def check_gemm(s: Settings) -> CheckResult:
    if s.device == "cpu":
        return _cpu_gemm(s)
    interval = max(0.05, min(5.0, s.gemm_seconds / 12 if s.gemm_seconds else 1.0))
    with _Sampler(interval, s.timeout) as sampler:
        res = gpu.gemm_sustained(s.gemm_n, s.gemm_warmup, s.gemm_iters, s.gemm_seconds, s.timeout)
    doc = {
        "tool": "torch.matmul",
        "n": s.gemm_n,
        "warmup": s.gemm_warmup,
        "iters_per_batch": s.gemm_iters,
        **res,
        "samples": sampler.samples,
        "sample_fields": sampler.fields,
    }
    return CheckResult(
        name="gemm",
        device="cuda",
        metric=f"gemm_tflops_{res['dtype']}",
        unit="TFLOPS",
        value=[round(float(v), 3) for v in res["tflops"]],
        return_code=0,
        raw=json.dumps(doc, indent=1),
        raw_format="agent-gemm-json",
        details={"n": s.gemm_n, "seconds": s.gemm_seconds, "samples": len(sampler.samples)},
    )


def _cpu_gemm(s: Settings) -> CheckResult:
    np = _numpy()
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


def check_memory_bandwidth(s: Settings) -> CheckResult:
    if s.device == "cpu":
        np = _numpy()
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
    doc = {
        "tool": "torch copy_ (device to device)",
        "bytes": s.copy_bytes,
        "iters": s.copy_iters,
        "counts": "read+write",
        "hbm_gbps": values,
    }
    return CheckResult(
        name="memory_bandwidth",
        device="cuda",
        metric="hbm_bandwidth_gbps",
        unit="GB/s",
        value=values,
        return_code=0,
        raw=json.dumps(doc, indent=1),
        raw_format="agent-copy-json",
        details={"bytes": s.copy_bytes, "iters": s.copy_iters, "counts": "read+write"},
    )


def check_nvbandwidth(s: Settings) -> CheckResult:
    if pre := _gpu_only("nvbandwidth", s) or _tool("nvbandwidth", "nvbandwidth", s):
        return pre
    tests = ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    if len(s.gpu_names) > 1:
        tests.append("device_to_device_memcpy_read_ce")
    return from_cmd(
        "nvbandwidth", s.device, ["nvbandwidth", "-t", *tests], s.timeout, raw_format="nvbandwidth"
    )


def check_allreduce(s: Settings) -> CheckResult:
    if s.device == "cpu":
        return _cpu_allreduce(s)
    ngpu = len(s.gpu_names)
    if ngpu < 2:
        return skipped("allreduce", s.device, f"intra-node all-reduce needs 2 GPUs, found {ngpu}")
    if pre := _tool("allreduce", "all_reduce_perf", s):
        return pre  # no fallback: torch-NCCL figures are not nccl-tests figures
    size = s.allreduce_bytes or nccl_message_bytes(s.gpu_memory_mib)
    if size is None:
        return CheckResult(
            name="allreduce",
            device=s.device,
            status=FAILED,
            reason="GPU memory unknown or below 4 GiB: no nccl-tests message size fits",
            details={"reason_code": "no_message_size", "memory_mib": s.gpu_memory_mib},
        )
    # One process, one thread per GPU (-g N); data check on (-c 1, the default).
    check = from_cmd(
        "allreduce",
        s.device,
        ["all_reduce_perf", "-b", str(size), "-e", str(size), "-g", str(ngpu), "-c", "1"],
        s.timeout,
        raw_format="nccl-tests",
    )
    check.details.update({"backend": "nccl-tests", "message_size_bytes": size})
    return check


def _cpu_allreduce(s: Settings) -> CheckResult:
    from . import ring  # numpy/torch: the CPU path only

    res = ring.cpu_allreduce(
        s.allreduce_bytes or 8 * MIB,
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
    return from_cmd(
        "nvlink",
        s.device,
        ["nvidia-smi", "nvlink", "-s"],
        s.timeout,
        raw_format="nvidia-smi-nvlink",
    )


def check_xid(s: Settings) -> CheckResult:
    """The kernel log's ``NVRM: Xid`` lines (the raw output keeps only those lines)."""
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
            return CheckResult(
                name="xid",
                device=s.device,
                return_code=0,
                raw="\n".join(lines),
                raw_format="kernel-log-xid",
                details={"source": argv[0], "log_lines": len(res.output.splitlines())},
            )
        attempts.append(f"{argv[0]}: {res.error or res.output.strip()[:200] or 'no output'}")
    return CheckResult(
        name="xid",
        device=s.device,
        status=FAILED,
        reason="kernel log unreadable: " + "; ".join(attempts),
        details={"reason_code": "kernel_log_unreadable"},
    )


_CA_LINE = re.compile(r"^CA '([^']+)'\s*$")
_LINK_LAYER_LINE = re.compile(r"^Link layer:\s*(\S+)\s*$")
_SYSFS = Path("/sys/class/infiniband")


def rdma_listing(timeout: float) -> tuple[str, str, dict[str, str]]:
    """The RDMA devices and the link layer of each one's first port (the port
    ``ib_write_bw`` measures): ``ibstat`` where present, else the sysfs files as ``grep -H
    . /sys/class/infiniband/*/ports/*/link_layer`` prints them. Returns the listing's
    section title and raw text (kept in the check's raw output: the portal counts the
    fabric NICs from it, ``parsers.parse_ibstat``) and ``{device: link layer}`` (the
    agent's own reading, only to choose what to measure)."""
    layers: dict[str, str] = {}
    if which("ibstat"):
        res = run_cmd(["ibstat"], timeout)
        device = None
        for line in res.output.splitlines():
            if m := _CA_LINE.match(line.strip()):
                device = m.group(1)
            elif (m := _LINK_LAYER_LINE.match(line.strip())) and device not in (None, *layers):
                layers[str(device)] = m.group(1)
        return f"ibstat exit {res.return_code}", res.output, layers
    lines = []
    for path in sorted(_SYSFS.glob("*/ports/*/link_layer")) if _SYSFS.is_dir() else []:
        value = path.read_text(errors="replace").strip()
        lines.append(f"{path}:{value}")
        layers.setdefault(path.parts[-4], value)
    return "sysfs link_layer", "\n".join(lines), layers


def fabric_devices(layers: dict[str, str]) -> list[str]:
    """What ``ib_write_bw`` measures: the devices whose link layer is InfiniBand; on a
    node with none (a RoCE fabric), every Ethernet RDMA device, for the report (ibstat
    cannot tell a RoCE fabric port from a front-end or storage one: no rule counts them).
    A front-end Ethernet RDMA NIC on an InfiniBand node is never measured nor counted."""
    ib = [d for d, layer in layers.items() if layer == "InfiniBand"]
    return ib or [d for d, layer in layers.items() if layer == "Ethernet"]


#: The client retries while the server is not listening yet (it opens the device and,
#: with ``--use_cuda``, a CUDA context first: seconds on a real node; azure_ib_write_bw_
#: gdr.nhc sleeps 5 s before starting the client).
IB_CONNECT_RETRY_S = 0.5
#: The message size of azure_ib_write_bw_gdr.nhc (``MESSAGE_SIZE=8388608``, lines 27-29),
#: at which its per-SKU thresholds hold.
IB_MESSAGE_BYTES = 8 * 1024 * 1024
IB_CONNECT_WINDOW_S = 30.0
_IB_NOT_LISTENING = ("couldn't connect", "unable to open file descriptor", "failed to connect")


def _ib_loopback(s: Settings, dev: str, port: int, gpu_index: int) -> tuple[str, int | None]:
    """One NIC's loopback: a server and a client ``ib_write_bw`` on ``dev``; the client's
    output and exit status (None: timed out)."""
    common = ["-d", dev, "-p", str(port), "-s", str(IB_MESSAGE_BYTES), "-D", str(s.ib_seconds)]
    common += ["-x", "0", "-F", "--report_gbits", f"--use_cuda={gpu_index}"]
    server = subprocess.Popen(  # noqa: S603 - fixed argv, the tool found on PATH
        ["ib_write_bw", *common],  # noqa: S607
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + IB_CONNECT_WINDOW_S
        time.sleep(0.05)
        while True:
            res = run_cmd(["ib_write_bw", *common, "localhost"], s.ib_seconds + 60.0)
            waiting = res.return_code not in (0, None) and any(
                w in res.output.lower() for w in _IB_NOT_LISTENING
            )
            if not waiting or server.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(IB_CONNECT_RETRY_S)
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return res.output, res.return_code


def check_ib_write_bw(s: Settings) -> CheckResult:
    """GPUDirect RDMA loopback per NIC (azure_ib_write_bw_gdr.nhc): a server and a client
    ``ib_write_bw`` on the same device, buffers on GPU ``i % GPUs``; every NIC at once,
    as the Azure check runs them (its thresholds are measured that way). Only the fabric
    NICs are measured (:func:`fabric_devices`: InfiniBand link layer). The raw output is
    the RDMA listing (``### ibstat exit N``) then one section per NIC measured, in device
    order (``### device NAME exit N``)."""
    if pre := _gpu_only("ib_write_bw", s):
        return pre
    title, listing, layers = rdma_listing(min(s.timeout, 30.0))
    if not layers:  # where a rule needs the check (InfiniBand node types) skipped fails
        said = f" ({title}: {listing.strip()[:200]})" if listing.strip() else ""
        return skipped("ib_write_bw", s.device, "no InfiniBand/RoCE device on this host" + said)
    devices = fabric_devices(layers)
    if pre := _tool("ib_write_bw", "ib_write_bw", s):
        return pre
    ngpu = max(1, len(s.gpu_names))
    with ThreadPoolExecutor(max_workers=max(1, len(devices)), thread_name_prefix="ib") as pool:
        runs = list(
            pool.map(
                lambda item: _ib_loopback(s, item[1], 18515 + item[0], item[0] % ngpu),
                enumerate(devices),
            )
        )
    sections = [f"### {title}\n{listing}"]
    worst = 0
    for dev, (output, rc) in zip(devices, runs, strict=True):
        sections.append(f"### device {dev} exit {rc}\n{output}")
        if rc != 0:
            worst = rc if rc is not None else 124
    check = CheckResult(
        name="ib_write_bw",
        device=s.device,
        raw="\n".join(sections),
        raw_format="ib-write-bw-per-nic",
        return_code=worst,
        details={"devices": devices, "link_layers": layers},
    )
    if worst:
        check.status = FAILED
        check.reason = "ib_write_bw failed on at least one device"
    return check


def check_burn_in(s: Settings) -> CheckResult:
    """The burn-in: ``burn_in_seconds`` of rounds, each a sustained GEMM on every GPU then
    an all-reduce, with clocks, temperature, power and clock event reasons sampled by
    nvidia-smi throughout (GPU path). The raw output is a JSON document of the rounds'
    figures (per GPU TFLOPS; the all-reduce's nccl-tests output) and the samples: the
    portal derives the slow-down from the first rounds to the last and the throttling
    from it, and judges (a node that slows or throttles fails)."""
    seconds = float(s.burn_in_seconds)
    round_s = max(1.0, seconds / BURN_IN_ROUNDS)
    gemm_s = round_s * 0.8  # the rest of the round: the all-reduce
    started = time.monotonic()
    rounds: list[dict[str, Any]] = []
    interval = max(0.5, min(60.0, seconds / 120))
    with _Sampler(interval, s.timeout) if s.device != "cpu" else _NoSampler() as sampler:
        while not rounds or time.monotonic() - started < seconds:
            at = round(time.monotonic() - started, 3)
            if s.device == "cpu":
                gemm_value = _cpu_gemm_for(s, gemm_s)
                ar = _cpu_allreduce(s)
                rounds.append(
                    {"t": at, "gflops": gemm_value, "allreduce_busbw_gbps": ar.value,
                     "allreduce_status": ar.status}
                )  # fmt: skip
                continue
            res = gpu.gemm_sustained(s.gemm_n, s.gemm_warmup, s.gemm_iters, gemm_s, s.timeout)
            ar = check_allreduce(s)
            rounds.append(
                {"t": at, "tflops": res["tflops"], "dtype": res["dtype"],
                 "allreduce_status": ar.status, "allreduce_return_code": ar.return_code,
                 "allreduce_raw": ar.raw}
            )  # fmt: skip
    elapsed = time.monotonic() - started
    doc = {
        "tool": "burn-in: torch.matmul + all_reduce_perf"
        if s.device != "cpu"
        else "burn-in: numpy.matmul + ring all-reduce",
        "planned_seconds": seconds,
        "seconds": round(elapsed, 3),
        "round_seconds": round_s,
        "rounds": rounds,
        "samples": sampler.samples,
        "sample_fields": sampler.fields,
    }
    return CheckResult(
        name="burn_in",
        device=s.device,
        metric="burn_in_hours",
        unit="h",
        value=round(elapsed / 3600, 4),
        return_code=0,
        raw=json.dumps(doc, indent=1),
        raw_format="agent-burn-in-json",
        details={"rounds": len(rounds), "seconds": round(elapsed, 3)},
    )


class _NoSampler:
    """The CPU path: nothing to sample (no nvidia-smi)."""

    samples: list[dict[str, Any]] = []
    fields = ""

    def __enter__(self) -> _NoSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _cpu_gemm_for(s: Settings, seconds: float) -> float:
    """The CPU path's GEMM repeated for ``seconds``: the mean GFLOPS of the repeats."""
    values: list[float] = []
    until = time.monotonic() + seconds
    while not values or time.monotonic() < until:
        check = _cpu_gemm(s)
        values.append(float(check.value))  # type: ignore[arg-type]
    return round(sum(values) / len(values), 3)


def planned_checks(s: Settings, only: list[str] | None = None) -> list[str]:
    """The checks this run makes, in order: the burn-in only where one was asked for."""
    return [
        name
        for name in CHECKS
        if (not only or name in only) and (name != "burn_in" or s.burn_in_seconds > 0)
    ]


CHECKS: dict[str, Callable[[Settings], CheckResult]] = {
    "gpu_inventory": check_gpu_inventory,
    "ecc": check_ecc,
    "ecc_remap": check_ecc_remap,
    "nvlink": check_nvlink,
    "xid": check_xid,
    "gemm": check_gemm,
    "memory_bandwidth": check_memory_bandwidth,
    "nvbandwidth": check_nvbandwidth,
    "allreduce": check_allreduce,
    "ib_write_bw": check_ib_write_bw,
    "dcgm_diag": check_dcgm_diag,  # the longest of the acceptance checks (-r 3 ≈ 15 min)
    "burn_in": check_burn_in,  # last: the add-on's 24 hours, after every acceptance check
}


def run_checks(
    s: Settings,
    only: list[str] | None = None,
    emit: Callable[[CheckResult], None] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> list[CheckResult]:
    """Run the checks in order; ``on_start`` gets each name as it starts, ``emit`` each
    result as soon as it finished."""
    results = []
    for name in planned_checks(s, only):
        if on_start is not None:
            on_start(name)
        result = guarded(name, s.device, partial(CHECKS[name], s))
        results.append(result)
        if emit is not None:
            emit(result)
    return results
