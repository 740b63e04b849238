"""Parsers of validation-tool output: pure functions over text, standard library only.

Each ``parse_<kind>(text) -> dict`` never raises on bad input. Every result carries:

- ``kind``: the parser's name;
- ``ok``: True only when the output is complete *and* shows no failure;
- ``damaged``: True when the output cannot be trusted as a complete run (empty, garbage,
  truncated, inconsistent): the run must be treated as not measured;
- ``errors``: plain-English reasons (empty when ``ok``).

A complete run that reports failures (a nonzero ``#wrong``, ``Out of bounds values : N
FAILED``, a DCGM ``Fail``) is *not* damaged: ``ok`` is False and ``damaged`` False.

Command line (no Django needed)::

    python -m provisioning.validation.parsers KIND FILE   # FILE may be "-" for stdin

prints the result as JSON on stdout; exit status 0 when parsed and ok, 1 when the run is
complete but shows failures, 2 when the input is damaged or unreadable (with a message on
stderr). A damaged input never exits 0.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "KINDS",
    "ParseError",
    "main",
    "parse_dcgmi",
    "parse_ib_write_bw",
    "parse_nccl_tests",
    "parse_nvbandwidth",
    "parse_nvidia_smi_csv",
]


class ParseError(ValueError):
    """The input is damaged: empty, garbage, truncated or inconsistent."""


_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
# `srun --label` and `mpirun --tag-output` style prefixes: "0: ", "[1,0]<stdout>:".
_LABEL_RE = re.compile(r"^\s*(?:\d+:\s|\[\d+,\d+\]<std(?:out|err)>:)")


def _base(kind: str) -> dict[str, Any]:
    return {"kind": kind, "ok": False, "damaged": False, "errors": []}


def _finite(token: str, what: str) -> float:
    """Parse a float token; non-numbers, NaN and infinities are damage."""
    if not _FLOAT_RE.match(token):
        raise ParseError(f"{what}: {token!r} is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise ParseError(f"{what}: {token!r} is not a finite number")
    return value


def _run(kind: str, body: Callable[[str, dict[str, Any]], None], text: Any) -> dict[str, Any]:
    """Run a parser body; turn ParseError (and any surprise) into a damaged result."""
    result = _base(kind)
    try:
        if not isinstance(text, str):
            raise ParseError(f"input is {type(text).__name__}, not text")
        if not text.strip():
            raise ParseError("input is empty")
        if "\x00" in text:
            raise ParseError("input contains NUL bytes: not tool output")
        body(text, result)
    except ParseError as exc:
        result["damaged"] = True
        result["errors"].append(str(exc))
    except Exception as exc:  # never raise on bad input: an unexpected shape is damage too
        result["damaged"] = True
        result["errors"].append(f"unexpected input ({type(exc).__name__}: {exc})")
    result["ok"] = not result["damaged"] and not result["errors"]
    return result


# --------------------------------------------------------------------------- nccl-tests

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
            if not _INT_RE.match(token):
                raise ParseError(f"{where}: {name} {token!r} is not an integer")
            row["size_bytes" if name == "size" else name] = int(token)
        else:
            row[name] = token
    rest = tokens[len(prefix) :]
    for label, group in (("out_of_place", rest[:4]), ("in_place", rest[4:])):
        time_us = _finite(group[0], f"{where}: time")
        algbw = _finite(group[1], f"{where}: algbw")
        busbw = _finite(group[2], f"{where}: busbw")
        wrong: int | None = None
        error: float | None = None
        if check == "#wrong":
            if group[3].upper() == "N/A":  # validation disabled (-c 0)
                wrong = None
            elif _INT_RE.match(group[3]):
                wrong = int(group[3])
            else:
                raise ParseError(f"{where}: #wrong {group[3]!r} is not an integer")
        else:
            error = _finite(group[3], f"{where}: error")
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
        line = _LABEL_RE.sub("", raw, count=1).strip()
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
                if not _INT_RE.match(m.group(1)):
                    raise ParseError(f"line {lineno}: unreadable out-of-bounds count")
                result["out_of_bounds"] = int(m.group(1))
                oob_status = m.group(2).upper()
            elif m := re.match(r"Avg bus bandwidth\s*:\s*(\S+)", body):
                result["avg_busbw_gbps"] = _finite(m.group(1), f"line {lineno}: Avg bus bandwidth")
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
        if not (_INT_RE.match(tokens[0]) and len(tokens) > 1 and _INT_RE.match(tokens[1])):
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
    return _run("nccl-tests", _nccl_body, text)


# --------------------------------------------------------------------------- dcgmi diag

_DCGM_STATUS = {
    "pass": "pass",
    "passed": "pass",
    "fail": "fail",
    "failed": "fail",
    "skip": "skip",
    "skipped": "skip",
    "not run": "skip",
    "not_run": "skip",
    "notrun": "skip",
    "warn": "warn",
    "warning": "warn",
}
_DCGM_RESULT_RE = re.compile(
    r"^(pass|fail|skip|warn|warning)\b\s*(?:-\s*(.*))?$",
    re.IGNORECASE,
)


def _dcgm_gpu_ids(value: Any) -> list[int] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if parts and all(_INT_RE.match(p) for p in parts):
            return [int(p) for p in parts]
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def _dcgm_add(
    result: dict[str, Any],
    test: str,
    category: str | None,
    status: str,
    gpus: list[int] | None,
    details: list[str],
) -> None:
    norm = _DCGM_STATUS.get(status.strip().lower())
    if norm is None:
        result["errors"].append(f"{test}: unknown DCGM status {status!r} (counted as fail)")
        norm = "fail"
    entry = {
        "test": test,
        "category": category,
        "gpu": gpus[0] if gpus and len(gpus) == 1 else None,
        "gpus": gpus,
        "result": norm,
        "details": details,
    }
    result["results"].append(entry)


def _dcgm_json(text: str, result: dict[str, Any]) -> None:
    start = text.find("{")
    try:
        obj, _end = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid DCGM JSON (truncated?): {exc}") from exc
    if not isinstance(obj, dict):
        raise ParseError("DCGM JSON is not an object")
    diag = obj.get("DCGM GPU Diagnostic", obj.get("DCGM Diagnostic"))
    if not isinstance(diag, dict):
        raise ParseError("DCGM JSON has no 'DCGM GPU Diagnostic'/'DCGM Diagnostic' object")
    categories = diag.get("test_categories")
    if not isinstance(categories, list):
        raise ParseError("DCGM JSON has no test_categories list")
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    result["version"] = (
        diag.get("version") or metadata.get("DCGM Version") or diag.get("DCGM Version")
    )
    result["driver_version"] = diag.get("Driver Version Detected") or metadata.get(
        "Driver Version Detected"
    )
    for cat in categories:
        if not isinstance(cat, dict):
            continue
        category = cat.get("category")
        for test in cat.get("tests") or []:
            if not isinstance(test, dict):
                continue  # jsoncpp writes null between tests
            name = str(test.get("name") or "?")
            entries = [r for r in test.get("results") or [] if isinstance(r, dict)]
            if not entries and isinstance(test.get("test_summary"), dict):
                entries = [test["test_summary"]]
            for r in entries:
                if "status" not in r:
                    raise ParseError(f"{name}: result without status")
                gpus = None
                for key in ("gpu_ids", "gpu_id"):
                    if key in r:
                        gpus = _dcgm_gpu_ids(r[key])
                if gpus is None and "entity_id" in r:
                    group = r.get("entity_group", r.get("entity_group_id"))
                    if group in ("GPU", 1):
                        gpus = _dcgm_gpu_ids(r["entity_id"])
                details: list[str] = []
                info = r.get("info")
                if isinstance(info, str):
                    details.append(info)
                elif isinstance(info, list):
                    details.extend(str(i) for i in info)
                for w in r.get("warnings") or []:
                    if isinstance(w, dict):
                        details.append(str(w.get("warning") or w.get("message") or w))
                    else:
                        details.append(str(w))
                _dcgm_add(result, name, category, str(r["status"]), gpus, details)


def _dcgm_table(text: str, result: dict[str, Any]) -> None:
    section: str | None = None
    header_done = False
    last_kind = ""
    last_test: str | None = None
    last_line_kind = ""
    metadata: dict[str, str] = {}
    meta_key: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("+"):
            last_line_kind = "border"
            if stripped.startswith("+="):
                header_done = True
            label = re.sub(r"[-+=]", " ", stripped).strip()
            if label:
                section = label
            continue
        if not stripped.startswith("|"):
            continue
        last_line_kind = "row"
        if re.match(r"^\|-{2,}", stripped):
            section = re.sub(r"[-+|]", " ", stripped).strip() or section
            continue
        cells = stripped[1:].split("|")
        if len(cells) < 3 or cells[-1].strip():
            raise ParseError(f"line {lineno}: malformed table row (truncated?)")
        name = cells[0].strip()
        value = cells[1].strip()
        # DCGM wraps long text in fixed chunks (column width - 1), mid-word or not: keep
        # each chunk's own spaces so that joining chunks restores the text.
        cell = cells[1][1 : len(cells[1]) - 2]
        if not header_done:
            continue  # the "Diagnostic | Result" header
        if section and section.lower() == "metadata":
            if name:
                meta_key = name
                metadata[name] = cell
            elif meta_key:
                metadata[meta_key] += cell
            continue
        if name in ("Info", "Warning", "Warnings", "Error"):
            if last_test is None:
                raise ParseError(f"line {lineno}: {name} row before any test")
            result["results"][-1]["details"].append(cell)
            last_kind = "detail"
            continue
        if not name:
            if last_kind == "result" and (m := _DCGM_RESULT_RE.match(value)):
                _dcgm_table_result(result, last_test or "?", section, m)
            elif last_kind == "detail":
                result["results"][-1]["details"][-1] += cell
            elif value:
                raise ParseError(f"line {lineno}: continuation row without a test")
            continue
        m = _DCGM_RESULT_RE.match(value)
        last_test = name
        last_kind = "result"
        if m is None:
            result["errors"].append(f"{name}: unrecognised result {value!r} (counted as fail)")
            _dcgm_add(result, name, section, "fail", None, [value])
        else:
            _dcgm_table_result(result, name, section, m)
    for r in result["results"]:
        r["details"] = [d.strip() for d in r["details"]]
    if not header_done:
        raise ParseError("no dcgmi diag table found")
    if last_line_kind != "border":
        raise ParseError("dcgmi diag table is not closed: output truncated")
    metadata = {k: v.strip() for k, v in metadata.items()}
    result["version"] = metadata.get("DCGM Version")
    result["driver_version"] = metadata.get("Driver Version Detected")


def _dcgm_table_result(
    result: dict[str, Any], test: str, section: str | None, m: re.Match[str]
) -> None:
    scope = (m.group(2) or "").strip()
    gpus = None
    if sm := re.match(r"GPUs?:\s*([\d,\s]+)$", scope, re.IGNORECASE):
        gpus = _dcgm_gpu_ids(sm.group(1))
    _dcgm_add(result, test, section, m.group(1), gpus, [])


def _dcgm_body(text: str, result: dict[str, Any]) -> None:
    result.update({"version": None, "driver_version": None, "results": []})
    if re.search(r"^\s*\+[-=]{3,}", text, re.MULTILINE):
        _dcgm_table(text, result)
    elif "{" in text:
        _dcgm_json(text, result)
    else:
        raise ParseError("neither dcgmi JSON nor a dcgmi diag table")
    results = result["results"]
    if not results:
        raise ParseError("dcgmi diag output has no test results")

    def label(r: dict[str, Any]) -> str:
        return r["test"] if r["gpu"] is None else f"{r['test']} (GPU {r['gpu']})"

    result["failed"] = [label(r) for r in results if r["result"] == "fail"]
    result["skipped"] = [label(r) for r in results if r["result"] == "skip"]
    result["warned"] = [label(r) for r in results if r["result"] == "warn"]
    for name in result["failed"]:
        result["errors"].append(f"DCGM test failed: {name}")


def parse_dcgmi(text: str) -> dict[str, Any]:
    """Parse `dcgmi diag` output: JSON (DCGM 3.x/4.x, `-j`) or the text table.

    Returns ``results`` (each ``test, category, gpu, gpus, result, details``; ``result`` is
    one of pass, fail, skip, warn; ``gpu`` is None when a result is not for one GPU),
    ``failed``/``skipped``/``warned`` (labels), ``version``, ``driver_version``.

    ``ok`` means complete and error-free: at least one result and no ``fail``. Skips and
    warnings do not clear ``ok`` here; they are listed so that the rules decide (the
    default rules fail a node on any skip: "Skip is not Pass", VALIDATION.md).
    """
    return _run("dcgmi", _dcgm_body, text)


# --------------------------------------------------------------------- nvidia-smi CSV

_SMI_HEADER_RE = re.compile(r"^([A-Za-z_][\w.]*)\s*(?:\[([^\]]+)\])?$")
_SMI_STRING_FIELDS = {
    "name",
    "gpu_name",
    "uuid",
    "gpu_uuid",
    "serial",
    "driver_version",
    "vbios_version",
    "pci.bus_id",
    "gpu_bus_id",
    "pci.device_id",
    "pci.sub_device_id",
    "mig.mode.current",
}


def _smi_key(name: str, unit: str | None) -> str:
    key = name.replace(".", "_").lower()
    if unit:
        slug = "pct" if unit.strip() == "%" else re.sub(r"\W+", "_", unit).strip("_").lower()
        key = f"{key}_{slug}"
    return key


def _smi_value(field: str, unit: str | None, token: str) -> Any:
    v = token.strip()
    if (v.startswith("[") and v.endswith("]")) or v in ("N/A", "Not Supported", ""):
        return None
    if field.lower() in _SMI_STRING_FIELDS:
        return v
    if unit and v.endswith(unit):
        v = v[: -len(unit)].strip()
    if _INT_RE.match(v):
        return int(v)
    if _FLOAT_RE.match(v):
        f = float(v)
        return f if math.isfinite(f) else None
    return token.strip()


def _smi_body(text: str, result: dict[str, Any]) -> None:
    result.update({"fields": [], "rows": [], "gpu_count": 0})
    lines = [line for line in text.splitlines() if line.strip()]
    header = next(csv.reader([lines[0]], skipinitialspace=True))
    fields = []
    for h in header:
        m = _SMI_HEADER_RE.match(h.strip())
        if not m:
            raise ParseError(f"first line is not an nvidia-smi CSV header: {lines[0][:80]!r}")
        fields.append({"name": m.group(1), "unit": m.group(2), "key": _smi_key(*m.groups())})
    result["fields"] = fields
    for n, line in enumerate(lines[1:], 2):
        values = next(csv.reader([line], skipinitialspace=True))
        if len(values) != len(fields):
            raise ParseError(
                f"line {n} has {len(values)} fields, header has {len(fields)}: {line[:80]!r}"
            )
        result["rows"].append(
            {
                f["key"]: _smi_value(f["name"], f["unit"], v)
                for f, v in zip(fields, values, strict=True)
            }
        )
    if not result["rows"]:
        raise ParseError("nvidia-smi CSV has a header but no rows (no GPUs or truncated)")
    result["gpu_count"] = len(result["rows"])


def parse_nvidia_smi_csv(text: str) -> dict[str, Any]:
    """Parse `nvidia-smi --query-*=... --format=csv` output (with its header line).

    Keys are cleaned (``memory.total [MiB]`` → ``memory_total_mib``); values carrying the
    header's unit become numbers (``81559 MiB`` → 81559); ``[N/A]``/``[Not Supported]``
    become None. Returns ``rows``, ``fields`` (``name, unit, key``), ``gpu_count``.
    """
    return _run("nvidia-smi-csv", _smi_body, text)


# --------------------------------------------------------------------------- nvbandwidth


def _nvb_finish(test: dict[str, Any]) -> None:
    values = [v for row in test["matrix"] for v in row if v is not None]
    test["min"] = min(values) if values else None
    test["max"] = max(values) if values else None
    if test["sum"] is not None and values:
        tolerance = 0.006 * len(values) + 0.02  # two-decimal rounding of each cell
        if abs(sum(values) - test["sum"]) > tolerance:
            raise ParseError(
                f"{test['name']}: SUM {test['sum']} does not match its matrix "
                f"({sum(values):.2f}): garbled output"
            )


def _nvb_body(text: str, result: dict[str, Any]) -> None:
    result.update(
        {
            "version": None,
            "cuda_runtime_version": None,
            "driver_version": None,
            "devices": {},
            "tests": {},
            "waived": [],
        }
    )
    current: dict[str, Any] | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if m := re.match(r"nvbandwidth Version:\s*(\S+)", line):
            result["version"] = m.group(1)
        elif m := re.match(r"CUDA Runtime Version:\s*(\d+)", line):
            result["cuda_runtime_version"] = int(m.group(1))
        elif m := re.match(r"Driver Version:\s*(\S+)", line):
            result["driver_version"] = m.group(1)
        elif current is None and (m := re.match(r"Device (\d+):\s*(.+)$", line)):
            result["devices"][m.group(1)] = m.group(2).strip()
        elif m := re.match(r"Running (\S+?)\.?$", line):
            if current is not None:
                raise ParseError(f"test {current['name']} has no SUM line: output truncated")
            current = {
                "name": m.group(1),
                "description": None,
                "unit": None,
                "columns": [],
                "row_labels": [],
                "matrix": [],
                "sum": None,
            }
        elif current is None:
            continue
        elif line.lower().startswith("waived"):
            result["waived"].append(current["name"])
            current = None
        elif m := re.match(r"SUM (\S+)\s+(\S+)$", line):
            if m.group(1) != current["name"]:
                raise ParseError(f"line {lineno}: SUM for {m.group(1)} inside {current['name']}")
            if not current["matrix"]:
                raise ParseError(f"test {current['name']} has a SUM but no matrix")
            current["sum"] = _finite(m.group(2), f"line {lineno}: SUM")
            _nvb_finish(current)
            result["tests"][current["name"]] = current
            current = None
        elif all(_INT_RE.match(t) for t in line.split()):
            current["columns"] = [int(t) for t in line.split()]
        elif current["columns"] and _INT_RE.match(line.split()[0]):
            tokens = line.split()
            if len(tokens) != len(current["columns"]) + 1:
                raise ParseError(f"line {lineno}: matrix row has wrong width (truncated?)")
            current["row_labels"].append(int(tokens[0]))
            current["matrix"].append(
                [None if t == "N/A" else _finite(t, f"line {lineno}") for t in tokens[1:]]
            )
        elif current["description"] is None:
            current["description"] = line
            if um := re.search(r"\(([^()]+)\)\s*$", line):
                current["unit"] = um.group(1)
    if current is not None:
        raise ParseError(f"test {current['name']} has no SUM line: output truncated")
    if not result["tests"] and not result["waived"]:
        raise ParseError("no nvbandwidth test results found")
    if not result["tests"]:
        result["errors"].append("every nvbandwidth test was waived")


def parse_nvbandwidth(text: str) -> dict[str, Any]:
    """Parse nvbandwidth output (v0.2 to v0.5 text layout).

    Returns ``tests``: testcase name → ``description, unit, columns, row_labels, matrix``
    (rows of floats, None for ``N/A``), ``sum`` (the ``SUM`` line), ``min``, ``max``;
    ``waived`` (names), ``devices``, ``version``, ``driver_version``,
    ``cuda_runtime_version``. A testcase without its ``SUM`` line is truncation (damaged).
    """
    return _run("nvbandwidth", _nvb_body, text)


# -------------------------------------------------------------------------- ib_write_bw

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
        if len(tokens) >= 4 and all(_FLOAT_RE.match(t) for t in tokens):
            if not (_INT_RE.match(tokens[0]) and _INT_RE.match(tokens[1])) or len(tokens) > 5:
                raise ParseError(f"line {lineno}: garbled result row")
            peak = _finite(tokens[2], f"line {lineno}: BW peak") * factor
            avg = _finite(tokens[3], f"line {lineno}: BW average") * factor
            rate = _finite(tokens[4], f"line {lineno}: MsgRate") if len(tokens) == 5 else None
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
    return _run("ib-write-bw", _ib_body, text)


# -------------------------------------------------------------------------------- CLI

KINDS: dict[str, Callable[[str], dict[str, Any]]] = {
    "nccl-tests": parse_nccl_tests,
    "dcgmi": parse_dcgmi,
    "nvidia-smi-csv": parse_nvidia_smi_csv,
    "nvbandwidth": parse_nvbandwidth,
    "ib-write-bw": parse_ib_write_bw,
}


def _read(path: str) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        raise ParseError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{path} is not UTF-8 text: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    """Parse one file; print JSON; exit 0 ok, 1 complete but failing, 2 damaged."""
    ap = argparse.ArgumentParser(
        prog="python -m provisioning.validation.parsers",
        description="Parse validation-tool output into JSON (exit 0 ok, 1 failed, 2 damaged).",
    )
    ap.add_argument("kind", choices=sorted(KINDS))
    ap.add_argument("file", help='file to parse, or "-" for stdin')
    args = ap.parse_args(argv)
    try:
        text = _read(args.file)
    except ParseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = KINDS[args.kind](text)
    print(json.dumps(result, indent=2, allow_nan=False))
    if result["damaged"]:
        print(
            f"error: {args.file}: damaged {args.kind} output: " + "; ".join(result["errors"]),
            file=sys.stderr,
        )
        return 2
    if not result["ok"]:
        print(
            f"{args.file}: {args.kind} run failed: " + "; ".join(result["errors"]), file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
