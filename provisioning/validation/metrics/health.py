"""Health checks' raw outputs → metrics: nvidia-smi inventory, ECC, row remapping,
NVLink state, the kernel log's XIDs, DCGM diagnostics."""

from __future__ import annotations

import re
from typing import Any

from inventory.gpus import BY_KEY
from provisioning.validation.metrics.collect import _Out, _reason
from provisioning.validation.parsers import (
    parse_dcgmi,
    parse_nvidia_smi_csv,
)
from provisioning.validation.rules import (
    XID_CRITICAL,
    XID_NOTED,
    normalize_gpu_model,
)


def _smi_rows(check: dict[str, Any], out: _Out) -> list[dict[str, Any]] | None:
    parsed = parse_nvidia_smi_csv(check.get("raw") or "")
    if parsed["damaged"]:
        out.parse_errors[check["name"]] = "; ".join(parsed["errors"])
        return None
    rows: list[dict[str, Any]] = parsed["rows"]
    return rows


def _inventory(check: dict[str, Any], out: _Out, gpu_model: str) -> None:
    rows = _smi_rows(check, out)
    if rows is None:
        return
    out.put("gpu_count", len(rows))
    want = normalize_gpu_model(gpu_model)
    names = [str(r.get("name") or "") for r in rows]
    wrong = [i for i, n in enumerate(names) if normalize_gpu_model(n) != want]
    out.put("gpu_model_mismatch_count", len(wrong))
    if wrong:
        out.problems.append(
            _reason(
                "gpu_model_mismatch",
                f"GPU {wrong[0]} is {names[wrong[0]]}, the node type sells {gpu_model}",
                gpu=wrong[0],
                found=names[wrong[0]],
                expected=gpu_model,
            )
        )
    mems = [r.get("memory_total_mib") for r in rows]
    if all(isinstance(m, int) for m in mems):
        out.put("gpu_memory_mib", mems)
    mig = [str(r.get("mig_mode_current") or "").strip().lower() for r in rows]
    out.put("mig_enabled_gpus", sum(m == "enabled" for m in mig))
    if "enabled" in mig:
        gpu = mig.index("enabled")
        out.problems.append(_reason("mig_enabled", f"GPU {gpu} has MIG mode enabled", gpu=gpu))


def _ecc(check: dict[str, Any], out: _Out) -> None:
    rows = _smi_rows(check, out)
    if rows is None:
        return

    def per_gpu(*keys: str) -> list[int] | None:
        values: list[int] = []
        for r in rows:
            got = [r.get(k) for k in keys]
            ints = [v for v in got if isinstance(v, int)]
            if len(ints) != len(got):
                return None  # [N/A]: this GPU reports no such counter
            values.append(max(ints))
        return values

    for metric, keys in (
        ("ecc_sram_uncorrectable", ("uncorrected_volatile_sram", "uncorrected_aggregate_sram")),
        ("ecc_sram_correctable", ("corrected_volatile_sram", "corrected_aggregate_sram")),
        (
            "ecc_dram_errors",
            (
                "uncorrected_volatile_dram",
                "uncorrected_aggregate_dram",
                "corrected_volatile_dram",
                "corrected_aggregate_dram",
            ),
        ),
    ):
        values = per_gpu(*(f"ecc_errors_{k}" for k in keys))
        if values is not None:
            out.put(metric, values)
    modes = [r.get("ecc_mode_current") for r in rows]
    out.put("ecc_off_gpus", sum(str(m or "").strip().lower() != "enabled" for m in modes))
    pending = [r.get("retired_pages_pending") for r in rows]
    if all(isinstance(p, str | int) for p in pending):  # [N/A] on a GPU that has none
        out.put("retired_pages_pending", sum(_yes(p) for p in pending))
    retired = [(r.get("retired_pages_sbe"), r.get("retired_pages_dbe")) for r in rows]
    if all(isinstance(sbe, int) and isinstance(dbe, int) for sbe, dbe in retired):
        out.put("retired_pages_total", [sbe + dbe for sbe, dbe in retired])
    sram = out.metrics.get("ecc_sram_uncorrectable")
    if isinstance(sram, list) and any(sram):
        gpu = next(i for i, v in enumerate(sram) if v)
        out.problems.append(
            _reason(
                "ecc_uncorrectable",
                f"GPU {gpu}: {sram[gpu]} uncorrectable SRAM ECC errors",
                gpu=gpu,
                count=sram[gpu],
            )
        )


def _yes(value: Any) -> bool:
    if isinstance(value, int):
        return value > 0
    return str(value or "").strip().lower() in ("yes", "true")


def _remap(check: dict[str, Any], out: _Out) -> None:
    rows = _smi_rows(check, out)
    if rows is None:
        return
    for metric in ("remapped_rows_pending", "remapped_rows_failure"):
        values = [r.get(metric) for r in rows]
        if all(isinstance(v, str | int) for v in values):  # [N/A]: not measured, not 0
            out.put(metric, sum(_yes(v) for v in values))
    unc = [r.get("remapped_rows_uncorrectable") for r in rows]
    if all(isinstance(v, int) for v in unc):
        out.put("remapped_rows_uncorrectable", unc)


_NVLINK_GPU_RE = re.compile(r"^GPU (\d+):")
_NVLINK_LINK_RE = re.compile(r"^\s*Link (\d+):\s*(.*)$")


def _nvlink(check: dict[str, Any], out: _Out, gpu_model: str) -> None:
    raw = check.get("raw") or ""
    links = inactive = 0
    all_inactive: list[int] = []
    gpu: int | None = None
    for line in raw.splitlines():
        if m := _NVLINK_GPU_RE.match(line.strip()):
            gpu = int(m.group(1))
        elif "all links are inactive" in line.lower():
            all_inactive.append(gpu if gpu is not None else -1)
        elif m := _NVLINK_LINK_RE.match(line):
            links += 1
            if "inactive" in m.group(2).lower():
                inactive += 1
    out.put("nvlink_inactive_links", inactive)
    out.put("nvlink_links_total", links)
    out.put("nvlink_all_inactive_gpus", len(all_inactive))
    facts = BY_KEY.get(normalize_gpu_model(gpu_model))
    if facts is None or facts.nvlink_links is None:
        return  # a PCIe card: no NVLink expected (no rule reads these either)
    if all_inactive:
        out.problems.append(
            _reason(
                "nvlink_all_inactive",
                f"GPU {all_inactive[0]}: NVML says all NVLinks are inactive",
                gpu=all_inactive[0],
            )
        )
    elif links == 0:
        out.problems.append(
            _reason(
                "nvlink_no_links",
                "nvidia-smi nvlink -s listed no link (an empty output is not a pass)",
                check="nvlink",
            )
        )
    elif inactive:
        out.problems.append(
            _reason("nvlink_inactive", f"{inactive} NVLinks are inactive", count=inactive)
        )


_XID_RE = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+)")


def _xid(check: dict[str, Any], out: _Out) -> None:
    codes = [
        int(m.group(2)) for ln in (check.get("raw") or "").splitlines() if (m := _XID_RE.search(ln))
    ]
    critical = sorted({c for c in codes if c in XID_CRITICAL})
    out.put("xid_critical_count", sum(c in XID_CRITICAL for c in codes))
    out.put("xid_codes", sorted(set(codes)))
    if critical:
        out.problems.append(
            _reason(
                "xid_critical",
                "kernel log shows XID " + ", ".join(map(str, critical)),
                xids=", ".join(map(str, critical)),
            )
        )
    noted = sorted({c for c in codes if c in XID_NOTED})
    if noted:
        out.observations.append(
            _reason(
                "xid_noted",
                "kernel log shows XID " + ", ".join(map(str, noted)) + " (contained ECC error)",
                xids=", ".join(map(str, noted)),
            )
        )


def _dcgm(check: dict[str, Any], out: _Out) -> None:
    parsed = parse_dcgmi(check.get("raw") or "")
    if parsed["damaged"]:
        out.parse_errors["dcgm_diag"] = "; ".join(parsed["errors"])
        return
    results = parsed["results"]
    out.put("dcgm_fail_count", sum(r["result"] == "fail" for r in results))
    out.put("dcgm_skip_count", sum(r["result"] == "skip" for r in results))
    out.put("dcgm_warn_count", sum(r["result"] == "warn" for r in results))
