"""``ib_write_bw`` output."""

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
