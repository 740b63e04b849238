"""nvbandwidth output (``-t host_to_device_memcpy_ce`` and the others)."""

from __future__ import annotations

import re
from typing import Any

from provisioning.validation.parsers.common import INT_RE, ParseError, finite, run_parser


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
            current["sum"] = finite(m.group(2), f"line {lineno}: SUM")
            _nvb_finish(current)
            result["tests"][current["name"]] = current
            current = None
        elif all(INT_RE.match(t) for t in line.split()):
            current["columns"] = [int(t) for t in line.split()]
        elif current["columns"] and INT_RE.match(line.split()[0]):
            tokens = line.split()
            if len(tokens) != len(current["columns"]) + 1:
                raise ParseError(f"line {lineno}: matrix row has wrong width (truncated?)")
            current["row_labels"].append(int(tokens[0]))
            current["matrix"].append(
                [None if t == "N/A" else finite(t, f"line {lineno}") for t in tokens[1:]]
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
    return run_parser("nvbandwidth", _nvb_body, text)
