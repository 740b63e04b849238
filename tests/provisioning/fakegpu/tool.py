"""Fake GPU tools for the end-to-end validation tests: ``tool.py NAME ARGS…`` prints what
the real ``NAME`` prints on the node described by the JSON file in ``FAKE_NODE_SPEC``.

Every output is built from a real public sample in ``tests/provisioning/samples/`` (see its
SOURCES.md), cut to the node's GPU count, renamed to its GPUs and, where a figure must
differ (the node's H2D/P2P bandwidth, the all-reduce size and busbw), scaled or replaced
in the sample's own layout. Standard library only, started with ``python -I -S``: fast.
``ib_write_bw`` (one server and one client per NIC, all NICs at once) is the shell script
:data:`IB_WRITE_BW` instead, so that eight NICs do not cost sixteen interpreters.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def spec() -> dict:
    return json.loads(Path(os.environ["FAKE_NODE_SPEC"]).read_text())


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def bus(i: int) -> str:
    return f"00000000:{0x18 + 0x10 * i:02X}:00.0"


# ------------------------------------------------------------------------ nvidia-smi


def _gpus(s: dict) -> list[dict]:
    out = []
    for i in range(s["gpus"]):
        g = {"name": s["name"], "memory_mib": s["memory_mib"], "mig": s.get("mig", "Disabled")}
        g.update(s.get("gpu_overrides", {}).get(str(i), {}))
        out.append(g)
    return out


def _csv_value(field: str, i: int, g: dict, s: dict) -> str:
    ecc = s.get("ecc", {}).get(str(i), {})
    if field == "index":
        return str(i)
    if field == "name":
        return g["name"]
    if field == "uuid":
        return f"GPU-{i:08x}-0000-0000-0000-000000000000"
    if field in ("pci.bus_id", "gpu_bus_id"):
        return bus(i)
    if field == "memory.total":
        return f"{g['memory_mib']} MiB"
    if field == "mig.mode.current":
        return g["mig"]
    if field == "driver_version":
        return "550.54.15"
    if field.startswith("pcie.link.gen"):
        return "5"
    if field.startswith("pcie.link.width"):
        return "16"
    # ECC as each generation reports it: Ampere/Hopper SRAM/DRAM counters and row
    # remapping (retired pages [N/A]); Volta no SRAM/DRAM locations (NVML: Turing+) but
    # retired pages; GeForce no ECC at all ([N/A] everywhere, ECC mode included).
    kind = s.get("ecc_kind", "row_remap")
    if field == "ecc.mode.current":
        return "[N/A]" if kind == "none" else s.get("ecc_mode", "Enabled")
    if field.startswith("ecc.errors"):
        if kind != "row_remap" or field in s.get("ecc_na", ()):
            return "[N/A]"
        return str(ecc.get(field, 0))
    if field.startswith("retired_pages"):
        if kind != "volta":
            return "[N/A]"
        return str(ecc.get(field, "No" if field.endswith("pending") else 0))
    if field.startswith("remapped_rows"):
        if not s.get("has_remap", True):
            return "[N/A]"
        return str(ecc.get(field, 0))
    if field == "clocks.sm":
        return f"{s.get('sm_clock_mhz', 1980)} MHz"
    if field == "temperature.gpu":
        return str(62 + i)
    if field == "power.draw":
        return f"{s.get('power_w', 690.5):.2f} W"
    if field.startswith("clocks_event_reasons") or field.startswith("clocks_throttle_reasons"):
        return s.get("throttle", {}).get(str(i), "0x0000000000000000")
    raise SystemExit(f"nvidia-smi: field {field!r} is not a valid field to query")


_UNITS = {"memory.total": "MiB", "clocks.sm": "MHz", "power.draw": "W"}


def nvidia_smi(args: list[str], s: dict) -> int:
    if not args:
        print("| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |")
        return 0
    if args[0] == "nvlink":
        return nvlink(s)
    query = next((a for a in args if a.startswith("--query-")), "")
    fmt = next((a for a in args if a.startswith("--format=")), "--format=csv")
    fields = query.split("=", 1)[1].split(",")
    lines = []
    if "noheader" not in fmt:
        # The header as the H200 sample shows it: ", " separated, units in brackets.
        lines.append(", ".join(f"{f} [{_UNITS[f]}]" if f in _UNITS else f for f in fields))
    for i, g in enumerate(_gpus(s)):
        lines.append(", ".join(_csv_value(f, i, g, s) for f in fields))
    print("\n".join(lines))
    return 0


def nvlink(s: dict) -> int:
    mode = s.get("nvlink", "ok")
    links = s.get("nvlink_links", 0)
    if not links or mode == "none":
        return 0  # a PCIe card, or the "no link lines" variant: empty output, exit 0
    good = sample("nvidia-smi_nvlink-s_8xA100-80GB_azure-good.txt").splitlines()
    bad = sample("nvidia-smi_nvlink-s_8xA100-80GB_azure-bad.txt").splitlines()
    link_line = good[1]  # "\t Link 0: 25 GB/s"
    speed = s.get("nvlink_speed", "26.562 GB/s")
    out = []
    for i, g in enumerate(_gpus(s)):
        out.append(re.sub(r"^GPU \d+: .+ \(UUID", f"GPU {i}: {g['name']} (UUID", good[0]))
        if mode == "all_inactive" and i == 3:
            out.append(
                bad[1]
            )  # "NVML: Unable to retrieve NVLink information as all links are inactive"
            continue
        for k in range(links):
            line = link_line.replace("Link 0:", f"Link {k}:").replace("25 GB/s", speed)
            if mode == "one_inactive" and i == 1 and k == 5:
                line = line.replace(speed, "<inactive>")
            out.append(line)
    print("\n".join(out))
    return 0


# ------------------------------------------------------------------------ nvbandwidth

_TESTS = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce")


def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if m := re.match(r"Running (\S+)\.$", line):
            current = m.group(1)
            sections[current] = []
        if current:
            sections[current].append(line)
        if line.startswith("SUM "):
            current = None
    return sections


def nvbandwidth(args: list[str], s: dict) -> int:
    wanted = [a for a in args[1:] if not a.startswith("-")] if args[:1] == ["-t"] else list(_TESTS)
    n = s["gpus"]
    full = sample("nvbandwidth_all_8xH800_v0.2.txt")
    header = full.split("Running ", 1)[0]
    head_lines = [ln for ln in header.splitlines() if not ln.startswith("Device ")]
    out = [*head_lines[:-1]]
    out += [f"Device {i}: {s['name']}" for i in range(n)] + [""]
    sections = _sections(full)
    scale = s.get("nvb_scale", {})
    for test in wanted:
        lines = sections[test]
        factor = float(scale.get(test, 1.0))
        per_gpu = s.get("nvb_gpu_scale", {}).get(test, {})  # {"3": 0.9}: GPU 3's column
        out.append(lines[0])
        out.append(lines[1])
        cols = [f"{i:>10}" for i in range(n)]
        out.append("     " + "".join(cols))
        values = []
        for row_line in lines[3:]:
            if not row_line.strip() or row_line.startswith("SUM"):
                continue
            tokens = row_line.split()
            row_index = int(tokens[0])
            if row_index >= n:
                continue
            cells = []
            for column, tok in enumerate(tokens[1 : n + 1]):
                if tok == "N/A":
                    cells.append(f"{'N/A':>10}")
                else:
                    v = round(float(tok) * factor * float(per_gpu.get(str(column), 1.0)), 2)
                    values.append(v)
                    cells.append(f"{v:>10.2f}")
            out.append(f"{row_index:<5}" + "".join(cells))
        out += ["", f"SUM {test} {sum(values):.2f}", ""]
    print("\n".join(out))
    return 0


# ------------------------------------------------------------------------ all_reduce_perf


def all_reduce_perf(args: list[str], s: dict) -> int:
    size = int(args[args.index("-b") + 1])
    ngpu = int(args[args.index("-g") + 1])
    variant = s.get("nccl", "ok")
    busbw = float(s.get("busbw", 232.20))
    text = sample("nccl-tests_all_reduce_8xA100_collective-starting.txt")
    lines = text.splitlines()
    out = []
    for line in lines:
        if line.startswith("# nThread"):
            line = re.sub(r"nGpus \d+", f"nGpus {ngpu}", line)
            line = re.sub(r"minBytes \d+ maxBytes \d+", f"minBytes {size} maxBytes {size}", line)
        elif re.match(r"#\s+Rank\s+\d+", line):
            rank = int(line.split()[2])
            if rank >= ngpu:
                continue
            line = re.sub(r"NVIDIA .+$", s["name"], line)
        elif re.match(r"^\s*\d+\s+\d+\s+float", line):
            if variant == "nan_avg":
                continue  # the size did not fit: nccl-tests runs no row
            algbw = busbw / (2 * (ngpu - 1) / ngpu)
            time_us = size / (algbw * 1e3)
            wrong = "1234" if variant == "wrong" else "0"
            bw = {"inf": "inf", "plus_inf": "+inf", "nan": "nan"}.get(variant, f"{busbw:.2f}")
            row = (
                f"{size:>12}  {size // 4:>12}     float     sum      -1  {time_us:7.0f}  "
                f"{algbw:6.2f}  {bw:>6}  {wrong:>6}  {time_us:7.0f}  {algbw:6.2f}  {bw:>6}  "
                f"{wrong:>6}"
            )
            line = row
        elif line.startswith("# Out of bounds"):
            line = "# Out of bounds values : 1234 FAILED" if variant == "wrong" else line
        elif line.startswith("# Avg bus bandwidth"):
            avg = {"nan_avg": "-nan", "inf": "inf", "plus_inf": "+inf", "nan": "nan"}.get(
                variant, f"{busbw:.3f}"
            )
            line = f"# Avg bus bandwidth    : {avg} "
        out.append(line)
    print("\n".join(out))
    return 0  # exit 0 in every variant, as nccl-tests does with forks and -c 0


# ------------------------------------------------------------------------ others


def dcgmi(args: list[str], s: dict) -> int:
    if s.get("hang") == "dcgmi":
        time.sleep(120)
    if s.get("kill_agent") == "dcgmi":  # the agent dies mid-DCGM (OOM killer, a reboot)
        os.kill(os.getppid(), 9)
        return 137
    time.sleep(float(s.get("dcgmi_seconds", 0)))  # -r 3 takes about 15 minutes for real
    n = s["gpus"]
    text = sample("dcgmi_diag_json_8gpu_dcgm3.1.0_nvvs.txt")
    text = text.replace('"0,1,2,3,4,5,6,7"', '"' + ",".join(map(str, range(n))) + '"')
    # drop the per-GPU "software" results of GPUs the node does not have
    for i in range(n, 8):
        text = re.sub(
            r",?\s*\{\s*\"gpu_ids\" : " + str(i) + r",\s*\"status\" : \"PASS\"\s*\}", "", text
        )
    if variant := s.get("dcgm"):  # "FAIL" or "SKIP": the third test's result
        parts = text.split('"status" : "PASS"')
        text = '"status" : "PASS"'.join(parts[:3]) + f'"status" : "{variant}"'
        text += '"status" : "PASS"'.join(parts[3:])
    print(text)
    return 0


def dmesg(args: list[str], s: dict) -> int:
    lines = [
        "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007)",
        "[   12.345678] nvidia: loading out-of-tree module taints kernel.",
        "[   13.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
    ]
    for i, xid in enumerate(s.get("xids", [])):
        lines.append(
            f"[ {1000 + i}.123456] NVRM: Xid (PCI:0000:{0x18 + 0x10 * i:02x}:00): {xid}, "
            f"pid=1234, name=python, Ch 00000008"
        )
    print("\n".join(lines))
    return 0


IBSTAT_SAMPLE = "ibstat_8xH100_8ib_1eth-bond_gpud.txt"


def _ibstat_blocks() -> dict[str, str]:
    """The sample's CA blocks by device name (8 InfiniBand ConnectX-7, 1 Ethernet bond)."""
    blocks = re.split(r"(?m)^(?=CA ')", sample(IBSTAT_SAMPLE))
    out = {}
    for block in blocks:
        if m := re.match(r"CA '([^']+)'", block):
            out[m.group(1)] = block.rstrip("\n")
    return out


def ibstat(args: list[str], s: dict) -> int:
    """``ibstat`` (every CA) or ``ibstat -l`` (names): the node's ``ib_devices`` (link
    layer InfiniBand) then its ``eth_devices`` (link layer Ethernet: a RoCE front-end or
    storage port), each the sample's block of that name, else the sample's first
    InfiniBand block (``mlx5_0``) or its Ethernet one (``mlx5_bond_0``) renamed."""
    blocks = _ibstat_blocks()
    names = [(n, "mlx5_0") for n in s.get("ib_devices", [])]
    names += [(n, "mlx5_bond_0") for n in s.get("eth_devices", [])]
    if args[:1] == ["-l"]:
        print("\n".join(n for n, _ in names))
        return 0
    out = []
    for name, template in names:
        block = blocks.get(name) or blocks[template].replace(f"CA '{template}'", f"CA '{name}'")
        out.append(block)
    if out:
        print("\n".join(out))
    return 0


#: The fake ``ib_write_bw``: the server side (no host argument) waits for nothing and
#: prints nothing the agent reads; the client side prints the NDR400 sample for its device.
#: Each start is logged (``device last-argument``) to ``FAKE_IB_LOG`` where set.
IB_WRITE_BW = """#!/bin/sh
dev=""; prev=""; last=""
for a in "$@"; do [ "$prev" = "-d" ] && dev="$a"; prev="$a"; last="$a"; done
[ -n "$FAKE_IB_LOG" ] && echo "$dev $last" >> "$FAKE_IB_LOG"
[ "$last" = "localhost" ] || exit 0
[ -f "{overrides}/$dev.txt" ] && exec cat "{overrides}/$dev.txt"
exec sed "s/mlx5_0/$dev/" "{sample}"
"""
IB_SAMPLE = "ib_write_bw_NDR400_mlx5_0.txt"


def ib_write_bw_script(overrides: Path) -> str:
    """The script, with ``overrides/DEVICE.txt`` printed instead of the sample where
    present (:func:`ib_write_bw_slow`)."""
    script = IB_WRITE_BW.replace("{sample}", str(SAMPLES / IB_SAMPLE))
    return script.replace("{overrides}", str(overrides))


def ib_write_bw_slow(device: str, average_gbps: float) -> str:
    """The sample's output for ``device`` with its BW average replaced."""
    text = sample(IB_SAMPLE).replace("mlx5_0", device)
    return text.replace("392.34", f"{average_gbps:.2f}")


TOOLS = {
    "nvidia-smi": nvidia_smi,
    "nvbandwidth": nvbandwidth,
    "all_reduce_perf": all_reduce_perf,
    "dcgmi": dcgmi,
    "dmesg": dmesg,
    "ibstat": ibstat,
}

if __name__ == "__main__":
    sys.exit(TOOLS[sys.argv[1]](sys.argv[2:], spec()))
