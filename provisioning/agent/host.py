"""Host facts: hostname, CPU, GPUs, driver, CUDA, NICs and links (what is readable)."""

from __future__ import annotations

import csv
import os
import platform
import re
import socket
from pathlib import Path
from typing import Any

from . import gpu
from .runner import run_cmd, which

try:
    import pynvml
except ImportError:  # pragma: no cover - nvidia-ml-py is optional on a node
    pynvml = None


def _numpy_version() -> str | None:
    try:
        import numpy
    except ImportError:  # pragma: no cover
        return None
    return str(numpy.__version__)


SMI_GPU_FIELDS = (
    "index,name,uuid,pci.bus_id,memory.total,driver_version,"
    "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max"
)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def nics(root: Path = Path("/sys/class/net")) -> list[dict[str, Any]]:
    """Network interfaces (not ``lo``) with speed in Mb/s where the kernel reports it."""
    out = []
    for dev in sorted(root.glob("*")) if root.is_dir() else []:
        if dev.name == "lo":
            continue
        out.append(
            {
                "name": dev.name,
                "speed_mbps": _int_or_none(_read(dev / "speed")),
                "operstate": _read(dev / "operstate"),
                "mtu": _int_or_none(_read(dev / "mtu")),
            }
        )
    return out


def infiniband(root: Path = Path("/sys/class/infiniband")) -> list[dict[str, Any]]:
    """InfiniBand/RoCE ports: rate (e.g. ``400 Gb/sec (4X NDR)``), state, link layer."""
    out = []
    for dev in sorted(root.glob("*")) if root.is_dir() else []:
        for port in sorted((dev / "ports").glob("*")):
            rate = _read(port / "rate")
            m = re.match(r"([\d.]+)\s*Gb/sec", rate or "")
            out.append(
                {
                    "device": dev.name,
                    "port": port.name,
                    "rate": rate,
                    "rate_gbps": float(m.group(1)) if m else None,
                    "state": _read(port / "state"),
                    "link_layer": _read(port / "link_layer"),
                }
            )
    return out


def nvidia_pcie(root: Path = Path("/sys/bus/pci/devices")) -> list[dict[str, Any]]:
    """PCIe link speed/width of NVIDIA display/3D controllers, from sysfs."""
    out = []
    for dev in sorted(root.glob("*")) if root.is_dir() else []:
        if _read(dev / "vendor") != "0x10de" or not (_read(dev / "class") or "").startswith("0x03"):
            continue
        out.append(
            {
                "bus_id": dev.name,
                "current_link_speed": _read(dev / "current_link_speed"),
                "current_link_width": _int_or_none(_read(dev / "current_link_width")),
                "max_link_speed": _read(dev / "max_link_speed"),
                "max_link_width": _int_or_none(_read(dev / "max_link_width")),
            }
        )
    return out


def _cpu_model() -> str | None:
    text = _read(Path("/proc/cpuinfo")) or ""
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return m.group(1).strip() if m else platform.processor() or None


def _mem_total_kib() -> int | None:
    text = _read(Path("/proc/meminfo")) or ""
    m = re.search(r"^MemTotal:\s*(\d+)\s*kB", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def _gpus_nvml() -> tuple[list[dict[str, Any]], str | None, str | None]:
    pynvml.nvmlInit()
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            gpus.append(
                {
                    "index": i,
                    "name": name.decode() if isinstance(name, bytes) else name,
                    "memory_total_mib": int(mem.total // (1024 * 1024)),
                }
            )
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        return gpus, driver, f"{cuda // 1000}.{cuda % 1000 // 10}"
    finally:
        pynvml.nvmlShutdown()


def _gpus_smi(timeout: float) -> tuple[list[dict[str, Any]], str | None, str | None]:
    res = run_cmd(["nvidia-smi", f"--query-gpu={SMI_GPU_FIELDS}", "--format=csv,noheader"], timeout)
    if res.return_code != 0:
        return [], None, None
    gpus = []
    driver = None
    keys = SMI_GPU_FIELDS.split(",")
    for row in csv.reader(res.output.splitlines(), skipinitialspace=True):
        if len(row) != len(keys):
            continue
        d = dict(zip(keys, row, strict=True))
        driver = d["driver_version"]
        gpus.append(
            {
                "index": _int_or_none(d["index"]),
                "name": d["name"],
                "uuid": d["uuid"],
                "pci_bus_id": d["pci.bus_id"],
                "memory_total_mib": _int_or_none(d["memory.total"].split()[0]),
                "pcie_gen": [d["pcie.link.gen.current"], d["pcie.link.gen.max"]],
                "pcie_width": [d["pcie.link.width.current"], d["pcie.link.width.max"]],
            }
        )
    header = run_cmd(["nvidia-smi"], timeout)
    m = re.search(r"CUDA Version:\s*([\d.]+)", header.output)
    return gpus, driver, m.group(1) if m else None


def gpu_inventory(timeout: float) -> dict[str, Any]:
    """GPUs as NVML, nvidia-smi or torch see them (first that works)."""
    errors = []
    if pynvml is not None:
        try:
            gpus, driver, cuda = _gpus_nvml()
            return {"source": "nvml", "gpus": gpus, "driver": driver, "cuda": cuda}
        except Exception as exc:
            errors.append(f"nvml: {exc}")
    if which("nvidia-smi"):
        gpus, driver, cuda = _gpus_smi(timeout)
        if gpus:
            return {"source": "nvidia-smi", "gpus": gpus, "driver": driver, "cuda": cuda}
        errors.append("nvidia-smi listed no GPU")
    if gpu.cuda_available():
        gpus = gpu.cuda_devices()
        return {"source": "torch", "gpus": gpus, "driver": None, "cuda": gpu.cuda_runtime()}
    return {"source": None, "gpus": [], "driver": None, "cuda": None, "errors": errors}


def facts(device: str, inventory: dict[str, Any]) -> dict[str, Any]:
    gpus = inventory["gpus"]
    return {
        "hostname": socket.gethostname(),
        "device": device,
        "os": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_total_kib": _mem_total_kib(),
        "gpu_model": gpus[0]["name"] if gpus else None,
        "gpu_count": len(gpus),
        "gpus": gpus,
        "gpu_source": inventory["source"],
        "driver_version": inventory["driver"],
        "cuda_version": inventory["cuda"],
        "torch_version": gpu.torch_version(),
        "numpy_version": _numpy_version() if device == "cpu" else None,
        "nics": nics(),
        "infiniband": infiniband(),
        "pcie": nvidia_pcie(),
    }
