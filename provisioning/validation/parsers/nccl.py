"""nccl-tests output (``all_reduce_perf`` and friends)."""

from __future__ import annotations

import re
from typing import Any

from provisioning.validation.parsers.common import INT_RE, LABEL_RE, ParseError, finite, run_parser

_NCCL_PREFIX = ("size", "count", "type", "redop", "root")
_NCCL_RANK_RE = re.compile(
    r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[([^\]]*)\]\s*(.*)$"
)


def _nccl_columns(tokens: list[str]) -> tuple[list[str], str]:
    """Validate a column header (`size count type [redop] [root] time algbw busbw ...`)."""
    if "time" not in tokens:
        raise ParseError("nccl-tests column header has no 'time' column")
    cut = tokens.index("time")
    prefix = tokens[:cut]
    if prefix[:3] != ["size", "count", "type"] or any(c not in _NCCL_PREFIX for c in prefix):
        raise ParseError(f"unknown nccl-tests column header: {' '.join(tokens)}")
    groups = tokens[cut:]
    if len(groups) != 8 or groups[:3] != ["time", "algbw", "busbw"] or groups[:4] != groups[4:]:
        raise ParseError(f"unknown nccl-tests column header: {' '.join(tokens)}")
    check = groups[3]
    if check not in ("#wrong", "error"):
        raise ParseError(f"unknown nccl-tests check column {check!r}")
    return prefix, check


def _nccl_row(tokens: list[str], prefix: list[str], check: str, lineno: int) -> dict[str, Any]:
    where = f"line {lineno}"
    row: dict[str, Any] = {"redop": None, "root": None}
    for name, token in zip(prefix, tokens, strict=False):
        if name in ("size", "count", "root"):
            if not INT_RE.match(token):
                raise ParseError(f"{where}: {name} {token!r} is not an integer")
            row["size_bytes" if name == "size" else name] = int(token)
        else:
            row[name] = token
    rest = tokens[len(prefix) :]
    for label, group in (("out_of_place", rest[:4]), ("in_place", rest[4:])):
        time_us = finite(group[0], f"{where}: time")
        algbw = finite(group[1], f"{where}: algbw")
        busbw = finite(group[2], f"{where}: busbw")
        wrong: int | None = None
        error: float | None = None
        if check == "#wrong":
            if group[3].upper() == "N/A":  # validation disabled (-c 0)
                wrong = None
            elif INT_RE.match(group[3]):
                wrong = int(group[3])
            else:
                raise ParseError(f"{where}: #wrong {group[3]!r} is not an integer")
        else:
            error = finite(group[3], f"{where}: error")
        row[label] = {
            "time_us": time_us,
            "algbw_gbps": algbw,
            "busbw_gbps": busbw,
            "wrong": wrong,
            "error": error,
        }
    return row


def _nccl_body(text: str, result: dict[str, Any]) -> None:
    result.update(
        {
            "version": None,
            "collective": None,
            "avg_busbw_gbps": None,
            "max_busbw_gbps": None,
            "out_of_bounds": None,
            "check_column": None,
            "has_root_column": None,
            "ranks": 0,
            "devices": [],
            "rows": [],
        }
    )
    prefix: list[str] | None = None
    check = ""
    rows: list[dict[str, Any]] = result["rows"]
    oob_status = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = LABEL_RE.sub("", raw, count=1).strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            if m := re.match(r"nccl-tests version\s+(\S+)", body):
                result["version"] = m.group(1)
            elif m := re.match(r"Collective test (?:starting|concluded):\s*(\S+)", body):
                name = m.group(1)
                result["collective"] = name.removesuffix("_perf")
            elif m := re.match(r"Out of bounds values\s*:\s*(\S+)\s*(\S*)", body):
                if not INT_RE.match(m.group(1)):
                    raise ParseError(f"line {lineno}: unreadable out-of-bounds count")
                result["out_of_bounds"] = int(m.group(1))
                oob_status = m.group(2).upper()
            elif m := re.match(r"Avg bus bandwidth\s*:\s*(\S+)", body):
                result["avg_busbw_gbps"] = finite(m.group(1), f"line {lineno}: Avg bus bandwidth")
            elif m := _NCCL_RANK_RE.search(body):
                result["devices"].append(
                    {
                        "rank": int(m.group(1)),
                        "host": m.group(3),
                        "device": int(m.group(4)),
                        "bus_id": m.group(5),
                        "name": m.group(6).strip(),
                    }
                )
            elif body.split()[:2] == ["size", "count"]:
                prefix, check = _nccl_columns(body.split())
                result["check_column"] = check
                result["has_root_column"] = "root" in prefix
            continue
        if prefix is None:
            continue  # noise before the table (NCCL INFO lines, launcher output)
        tokens = line.split()
        if not (INT_RE.match(tokens[0]) and len(tokens) > 1 and INT_RE.match(tokens[1])):
            continue  # NCCL INFO / WARN lines, hostnames, other noise
        if len(tokens) != len(prefix) + 8:
            raise ParseError(
                f"line {lineno}: data row has {len(tokens)} fields, expected "
                f"{len(prefix) + 8} (truncated or garbled)"
            )
        rows.append(_nccl_row(tokens, prefix, check, lineno))

    result["ranks"] = len(result["devices"])
    if prefix is None:
        raise ParseError("no nccl-tests result table found (not nccl-tests output?)")
    if not rows:
        raise ParseError("nccl-tests table has no data rows")
    if result["out_of_bounds"] is None:
        raise ParseError("missing '# Out of bounds values' line: output truncated")
    if result["avg_busbw_gbps"] is None:
        raise ParseError("missing '# Avg bus bandwidth' line: output truncated")
    result["max_busbw_gbps"] = max(
        max(r["out_of_place"]["busbw_gbps"], r["in_place"]["busbw_gbps"]) for r in rows
    )
    for r in rows:
        for label in ("out_of_place", "in_place"):
            wrong = r[label]["wrong"]
            if wrong:
                result["errors"].append(
                    f"{wrong} wrong values ({label.replace('_', '-')}) at {r['size_bytes']} bytes"
                )
    if result["out_of_bounds"] or oob_status == "FAILED":
        result["errors"].append(f"out of bounds values: {result['out_of_bounds']} FAILED")


def parse_nccl_tests(text: str) -> dict[str, Any]:
    """Parse nccl-tests (`all_reduce_perf` and friends) output.

    Returns ``avg_busbw_gbps`` (the tool's ``# Avg bus bandwidth``), ``max_busbw_gbps``,
    ``rows`` (``size_bytes, count, type, redop, root`` and, for ``out_of_place`` and
    ``in_place``: ``time_us, algbw_gbps, busbw_gbps, wrong, error``), ``collective``,
    ``version``, ``out_of_bounds``, ``devices`` (from the ``Rank`` lines), ``ranks``.
    """
    return run_parser("nccl-tests", _nccl_body, text)
