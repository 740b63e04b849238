"""What a node's exporters say, in Prometheus' text format (pure: no Django).

Real nodes run NVIDIA's ``dcgm-exporter`` (with ``dcgm-counters.csv`` from this package,
because SM activity and the ECC counters are off in its default set) and the Prometheus
``node_exporter`` whose ``infiniband`` collector reads the sysfs port counters
(``port_xmit_data`` → ``node_infiniband_port_data_transmitted_bytes_total``,
``port_rcv_data`` → ``..._received_bytes_total``, ``link_downed`` →
``node_infiniband_link_downed_total``, ``symbol_error`` →
``node_infiniband_symbol_error_total``). Simulated nodes get the same series from
``simulated_exposition``: values that follow the workload (a rented node trains, an idle
node idles) and the faults injected on it (``Fault``), so Prometheus, the health rules and
the panel cannot tell the difference.

The numbers are deterministic in (hostname, GPU, time): two scrapes at the same second
agree, counters only grow while the workload does not change.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

# The dcgm-exporter metric names this product reads (one source: the health rules, the
# panel and the tests use these constants).
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
SM_ACTIVE = "DCGM_FI_PROF_SM_ACTIVE"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
POWER = "DCGM_FI_DEV_POWER_USAGE"
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
XID = "DCGM_FI_DEV_XID_ERRORS"
ECC_SBE = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
ECC_DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
UNCORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
CORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"
NVLINK_BANDWIDTH = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
PCIE_REPLAY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
CLOCK_EVENTS = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
IB_XMIT = "node_infiniband_port_data_transmitted_bytes_total"
IB_RCV = "node_infiniband_port_data_received_bytes_total"
IB_LINK_DOWNED = "node_infiniband_link_downed_total"
IB_SYMBOL_ERROR = "node_infiniband_symbol_error_total"
IB_STATE = "node_infiniband_state_id"

# Clock event reasons (DCGM's bit mask, nvml's nvmlClocksEventReasons).
CLOCK_SW_POWER_CAP = 0x4
CLOCK_HW_SLOWDOWN = 0x8
CLOCK_SW_THERMAL = 0x20
CLOCK_HW_THERMAL = 0x40
CLOCK_HW_POWER_BRAKE = 0x80

IB_ACTIVE = 4  # ib port state "ACTIVE"
IB_DOWN = 1

FAULT_KINDS: tuple[str, ...] = (
    "xid",  # value: the XID code
    "ecc_sbe",  # value: correctable errors added
    "ecc_dbe",  # value: uncorrectable errors added
    "row_remap_failure",
    "nvlink_down",
    "ib_down",  # value: port index
    "ib_flap",  # value: link_downed count added
    "throttle",  # value: clock event bit mask (default HW slowdown)
    "gpu_missing",
    "node_silent",
    "util_dip",  # value: utilisation fraction while it lasts
)


@dataclass(frozen=True)
class Fault:
    kind: str
    start: float  # epoch seconds
    end: float | None = None  # None: until cleared
    gpu: int | None = None  # None: every GPU (or the node)
    value: float = 0.0

    def active(self, at: float) -> bool:
        return self.start <= at and (self.end is None or at < self.end)

    def applies(self, gpu: int) -> bool:
        return self.gpu is None or self.gpu == gpu


@dataclass(frozen=True)
class NodeShape:
    hostname: str
    gpu_count: int
    gpu_model: str = "NVIDIA H100 80GB HBM3"
    memory_mib: int = 81559
    tdp_w: float = 700.0
    nic_count: int = 8
    nic_gbps: int = 400
    nvlink: bool = True


HELP: dict[str, tuple[str, str]] = {
    GPU_UTIL: ("gauge", "GPU utilization (in %)."),
    SM_ACTIVE: ("gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    FB_USED: ("gauge", "Framebuffer memory used (in MiB)."),
    FB_FREE: ("gauge", "Framebuffer memory free (in MiB)."),
    GPU_TEMP: ("gauge", "GPU temperature (in C)."),
    POWER: ("gauge", "Power draw (in W)."),
    ENERGY: ("counter", "Total energy consumption since boot (in mJ)."),
    SM_CLOCK: ("gauge", "SM clock frequency (in MHz)."),
    XID: ("gauge", "Value of the last XID error encountered."),
    ECC_SBE: ("counter", "Total number of single-bit volatile ECC errors."),
    ECC_DBE: ("counter", "Total number of double-bit volatile ECC errors."),
    CORRECTABLE_REMAPPED_ROWS: ("counter", "Number of remapped rows for correctable errors"),
    UNCORRECTABLE_REMAPPED_ROWS: ("counter", "Number of remapped rows for uncorrectable errors"),
    ROW_REMAP_FAILURE: ("gauge", "Whether remapping of rows has failed"),
    NVLINK_BANDWIDTH: ("counter", "Total number of NVLink bandwidth counters for all lanes."),
    PCIE_REPLAY: ("counter", "Total number of PCIe retries."),
    CLOCK_EVENTS: ("gauge", "Current clock throttle reasons."),
    IB_XMIT: ("counter", "Number of data octets transmitted on all links"),
    IB_RCV: ("counter", "Number of data octets received on all links"),
    IB_LINK_DOWNED: (
        "counter",
        "Number of times the link failed to recover from an error state and went down",
    ),
    IB_SYMBOL_ERROR: (
        "counter",
        "Number of minor link errors detected on one or more physical lanes.",
    ),
    IB_STATE: (
        "gauge",
        "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, "
        "5: act defer)",
    ),
}


@dataclass
class _Lines:
    """Samples grouped by metric family (the text format wants each family together)."""

    families: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, labels: str, value: float) -> None:
        text = f"{value:.0f}" if float(value).is_integer() else f"{value:.6g}"
        self.families.setdefault(name, []).append(f"{name}{{{labels}}} {text}")

    def render(self) -> str:
        out: list[str] = []
        for name, samples in self.families.items():
            kind, help_text = HELP[name]
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
        return "\n".join(out) + "\n"


def _noise(*parts: object) -> float:
    """A repeatable number in [0, 1) from its inputs."""
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def gpu_uuid(hostname: str, gpu: int) -> str:
    h = hashlib.blake2b(f"{hostname}/{gpu}".encode(), digest_size=16).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def gpu_serial(hostname: str, gpu: int) -> str:
    return f"{int(_noise('serial', hostname, gpu) * 10**13):013d}"


def _count(faults: Sequence[Fault], kind: str, gpu: int, at: float) -> float:
    """Errors a counter fault added up to ``at`` (a counter never goes back)."""
    return sum(
        f.value or 1.0 for f in faults if f.kind == kind and f.start <= at and f.applies(gpu)
    )


def simulated_exposition(
    shape: NodeShape, *, at: float, busy: bool, faults: Sequence[Fault] = ()
) -> str | None:
    """The node's dcgm-exporter and node_exporter (InfiniBand) series at ``at``; ``None``
    when the node does not answer (a ``node_silent`` fault)."""
    live = [f for f in faults if f.active(at)]
    if any(f.kind == "node_silent" for f in live):
        return None
    lines = _Lines()
    minute = int(at // 60)
    dip = next((f for f in live if f.kind == "util_dip"), None)
    for gpu in range(shape.gpu_count):
        if any(f.kind == "gpu_missing" and f.applies(gpu) for f in live):
            continue  # fell off the bus: dcgm no longer lists it
        labels = (
            f'gpu="{gpu}",UUID="{gpu_uuid(shape.hostname, gpu)}",'
            f'pci_bus_id="00000000:{0x18 + gpu * 0x10:02X}:00.0",device="nvidia{gpu}",'
            f'modelName="{shape.gpu_model}",Hostname="{shape.hostname}",'
            f'serial="{gpu_serial(shape.hostname, gpu)}"'
        )
        wave = 0.5 + 0.5 * math.sin(at / 600.0 + gpu)  # a ten-minute training rhythm
        jitter = _noise(shape.hostname, gpu, minute)
        if busy:
            sm = 0.80 + 0.12 * wave + 0.05 * jitter
        else:
            sm = 0.0
        if dip is not None and dip.applies(gpu):
            sm = min(sm, dip.value)
        throttle = next((f for f in live if f.kind == "throttle" and f.applies(gpu)), None)
        reasons = 0
        clock = 1980.0 if sm > 0.05 else 345.0
        if throttle is not None:
            reasons = int(throttle.value) or CLOCK_HW_SLOWDOWN
            clock = 1050.0
            sm *= 0.6
        util = min(100.0, round(sm * 100 + 4 * jitter)) if sm > 0 else 0.0
        used = shape.memory_mib * (0.62 + 0.3 * wave) if busy else 512.0
        temp = 34.0 + 40.0 * sm + 3 * jitter + (18.0 if reasons & CLOCK_HW_THERMAL else 0.0)
        power = 70.0 + (shape.tdp_w - 90.0) * sm + 10 * jitter
        energy_mj = (70.0 + (shape.tdp_w - 90.0) * (0.86 if busy else 0.0)) * at * 1000
        xid = next((f for f in reversed(live) if f.kind == "xid" and f.applies(gpu)), None)
        # Counters grow at a rate set by the workload only, so they never go back.
        nvlink_rate = 150e9 if busy and shape.nvlink else 0.0
        if any(f.kind == "nvlink_down" and f.applies(gpu) for f in live):
            nvlink_rate = 0.0
        lines.add(GPU_UTIL, labels, util)
        lines.add(SM_ACTIVE, labels, round(sm, 4))
        lines.add(FB_USED, labels, round(used))
        lines.add(FB_FREE, labels, round(shape.memory_mib - used))
        lines.add(GPU_TEMP, labels, round(temp))
        lines.add(POWER, labels, round(power, 3))
        lines.add(ENERGY, labels, round(energy_mj))
        lines.add(SM_CLOCK, labels, clock)
        lines.add(XID, labels, xid.value if xid else 0)
        lines.add(ECC_SBE, labels, _count(faults, "ecc_sbe", gpu, at))
        lines.add(ECC_DBE, labels, _count(faults, "ecc_dbe", gpu, at))
        lines.add(CORRECTABLE_REMAPPED_ROWS, labels, 0)
        lines.add(UNCORRECTABLE_REMAPPED_ROWS, labels, _count(faults, "ecc_dbe", gpu, at))
        lines.add(
            ROW_REMAP_FAILURE,
            labels,
            1 if any(f.kind == "row_remap_failure" and f.applies(gpu) for f in live) else 0,
        )
        lines.add(NVLINK_BANDWIDTH, labels, round(nvlink_rate * (at % 86400)))
        lines.add(PCIE_REPLAY, labels, 0)
        lines.add(CLOCK_EVENTS, labels, reasons)
    for port in range(shape.nic_count):
        ib = f'device="mlx5_{port}",port="1"'
        down = any(f.kind == "ib_down" and int(f.value) == port for f in live)
        flaps = sum(
            f.value or 1.0
            for f in faults
            if f.kind == "ib_flap" and f.start <= at and (f.gpu is None or f.gpu == port)
        )
        rate = 0.0 if down or not busy else shape.nic_gbps / 8 * 1e9 * 0.55
        since = at % 86400
        lines.add(IB_XMIT, ib, round(rate * since))
        lines.add(IB_RCV, ib, round(rate * 0.98 * since))
        lines.add(IB_LINK_DOWNED, ib, (1 if down else 0) + flaps)
        lines.add(IB_SYMBOL_ERROR, ib, 0)
        lines.add(IB_STATE, ib, IB_DOWN if down else IB_ACTIVE)
    return lines.render()
