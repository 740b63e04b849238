"""``nvidia-smi --query-gpu=... --format=csv`` output."""

from __future__ import annotations

import csv
import math
import re
from typing import Any

from provisioning.validation.parsers.common import FLOAT_RE, INT_RE, ParseError, run_parser

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
    if INT_RE.match(v):
        return int(v)
    if FLOAT_RE.match(v):
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
    return run_parser("nvidia-smi-csv", _smi_body, text)
