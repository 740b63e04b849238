"""``ib_write_bw`` and ``ibstat`` output."""

from __future__ import annotations

import re
from typing import Any

from provisioning.validation.parsers.common import FLOAT_RE, INT_RE, ParseError, finite, run_parser

# perftest: MB/sec is 2**20 bytes per second; Gb/sec is 10**9 bits per second.
_IB_TO_GBPS = {
    "gb/sec": 1.0,
    "mb/sec": 1048576 * 8 / 1e9,
    "gib/sec": 1073741824 * 8 / 1e9,
    "mib/sec": 1048576 * 8 / 1e9,
}


def _ib_body(text: str, result: dict[str, Any]) -> None:
    result.update(
        {
            "device": None,
            "link_type": None,
            "unit_reported": None,
            "bw_peak_gbps": None,
            "bw_avg_gbps": None,
            "msg_rate_mpps": None,
            "rows": [],
        }
    )
    factor: float | None = None
    closed = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if m := re.search(r"\bDevice\s*:\s*(\S+)", line):
            result["device"] = m.group(1)
        if m := re.match(r"Link type\s*:\s*(\S+)", line):
            result["link_type"] = m.group(1)
        if "#bytes" in line and "BW peak" in line:
            units = re.findall(r"BW (?:peak|average)\[([^\]]+)\]", line)
            if len(units) != 2 or units[0] != units[1]:
                raise ParseError(f"line {lineno}: unreadable ib_write_bw header")
            unit = units[0].strip().lower()
            if unit not in _IB_TO_GBPS:
                raise ParseError(f"line {lineno}: unknown bandwidth unit {units[0]!r}")
            factor = _IB_TO_GBPS[unit]
            result["unit_reported"] = units[0]
            continue
        if factor is None:
            continue
        if re.match(r"^-{10,}$", line):
            if result["rows"]:
                closed = True
                break
            continue
        tokens = line.split()
        if len(tokens) >= 4 and all(FLOAT_RE.match(t) for t in tokens):
            if not (INT_RE.match(tokens[0]) and INT_RE.match(tokens[1])) or len(tokens) > 5:
                raise ParseError(f"line {lineno}: garbled result row")
            peak = finite(tokens[2], f"line {lineno}: BW peak") * factor
            avg = finite(tokens[3], f"line {lineno}: BW average") * factor
            rate = finite(tokens[4], f"line {lineno}: MsgRate") if len(tokens) == 5 else None
            result["rows"].append(
                {
                    "bytes": int(tokens[0]),
                    "iterations": int(tokens[1]),
                    "bw_peak_gbps": peak,
                    "bw_avg_gbps": avg,
                    "msg_rate_mpps": rate,
                }
            )
    if factor is None:
        raise ParseError("no ib_write_bw result table found")
    if not result["rows"]:
        raise ParseError("ib_write_bw table has no result row")
    if not closed:
        raise ParseError("ib_write_bw table is not closed: output truncated")
    best = max(result["rows"], key=lambda r: r["bytes"])
    result["bw_peak_gbps"] = best["bw_peak_gbps"]
    result["bw_avg_gbps"] = best["bw_avg_gbps"]
    result["msg_rate_mpps"] = best["msg_rate_mpps"]


def parse_ib_write_bw(text: str) -> dict[str, Any]:
    """Parse perftest `ib_write_bw` client output.

    Returns ``bw_peak_gbps``/``bw_avg_gbps`` in Gb/s (converted from MB/sec when the run
    lacked ``--report_gbits``) and ``msg_rate_mpps``, taken from the row with the largest
    message size; ``rows``; ``device``; ``link_type``; ``unit_reported``.
    """
    return run_parser("ib-write-bw", _ib_body, text)


_CA_RE = re.compile(r"^CA '([^']+)'\s*$")
_PORT_RE = re.compile(r"^Port (\d+):\s*$")
_FIELD_RE = re.compile(r"^([A-Za-z][A-Za-z ]*?):\s*(.*?)\s*$")
# ``grep -H . /sys/class/infiniband/*/ports/*/link_layer`` (the agent's fallback where
# ibstat is absent): ``/sys/class/infiniband/mlx5_0/ports/1/link_layer:InfiniBand``.
_SYSFS_RE = re.compile(r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/link_layer:(\S+)$")
LINK_LAYERS = ("InfiniBand", "Ethernet")


def _ibstat_body(text: str, result: dict[str, Any]) -> None:
    devices: list[dict[str, Any]] = []
    device: dict[str, Any] | None = None
    port: dict[str, Any] | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if m := _SYSFS_RE.match(line):
            name, number, layer = m.group(1), int(m.group(2)), m.group(3)
            if device is None or device["name"] != name:
                device = {"name": name, "ca_type": None, "ports": []}
                devices.append(device)
            device["ports"].append({"port": number, "state": None, "rate": None,
                                    "link_layer": layer})  # fmt: skip
            continue
        if m := _CA_RE.match(line):
            device = {"name": m.group(1), "ca_type": None, "ports": []}
            devices.append(device)
            port = None
            continue
        if device is None:
            raise ParseError(f"line {lineno}: not ibstat output (no CA line first)")
        if m := _PORT_RE.match(line):
            port = {"port": int(m.group(1)), "state": None, "rate": None, "link_layer": None}
            device["ports"].append(port)
            continue
        if not (m := _FIELD_RE.match(line)):
            raise ParseError(f"line {lineno}: unreadable ibstat line {line[:60]!r}")
        key, value = m.group(1).lower(), m.group(2)
        if port is None:
            if key == "ca type":
                device["ca_type"] = value
            continue
        if key == "state":
            port["state"] = value
        elif key == "rate":
            port["rate"] = value
        elif key == "link layer":
            port["link_layer"] = value
    if not devices:
        raise ParseError("no RDMA device listed")
    for dev in devices:
        if not dev["ports"]:
            raise ParseError(f"{dev['name']}: no port listed (output truncated?)")
        for p in dev["ports"]:
            if p["link_layer"] not in LINK_LAYERS:
                raise ParseError(
                    f"{dev['name']} port {p['port']}: link layer {p['link_layer']!r} "
                    "(not InfiniBand or Ethernet; output truncated?)"
                )
        # ib_write_bw measures the device's first port (perftest's default ``-i 1``)
        dev["link_layer"] = dev["ports"][0]["link_layer"]
    result["devices"] = devices


def parse_ibstat(text: str) -> dict[str, Any]:
    """Parse ``ibstat`` (no arguments: every CA and port), or the ``grep -H .
    /sys/class/infiniband/*/ports/*/link_layer`` lines the agent writes where ibstat is
    absent.

    Returns ``devices``: per CA ``name``, ``ca_type``, ``ports`` (``port``, ``state``,
    ``rate``, ``link_layer``) and ``link_layer`` (its first port's: the port ib_write_bw
    measures). A port without ``InfiniBand``/``Ethernet`` link layer is damage.
    """
    return run_parser("ibstat", _ibstat_body, text)
