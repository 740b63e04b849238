"""Performance checks' raw outputs → metrics: nvbandwidth, nccl-tests all-reduce, the
sustained GEMM (and its nvidia-smi samples: throttling, clocks, temperature, power),
the copy, the burn-in."""

from __future__ import annotations

import json
import re
from typing import Any

from provisioning.validation.metrics.collect import _finite_list, _Out, _reason
from provisioning.validation.parsers import (
    parse_nccl_tests,
    parse_nvbandwidth,
    parse_nvidia_smi_csv,
)


def _nvbandwidth(check: dict[str, Any], out: _Out) -> None:
    parsed = parse_nvbandwidth(check.get("raw") or "")
    if parsed["damaged"]:
        out.parse_errors["nvbandwidth"] = "; ".join(parsed["errors"])
        return
    tests = parsed["tests"]
    for metric, name in (
        ("h2d_bandwidth_gbps", "host_to_device_memcpy_ce"),
        ("d2h_bandwidth_gbps", "device_to_host_memcpy_ce"),
    ):
        if name in tests and tests[name]["matrix"]:
            row = tests[name]["matrix"][0]
            if all(v is not None for v in row):
                out.put(metric, row)
    p2p = tests.get("device_to_device_memcpy_read_ce")
    if p2p:
        mins = []
        for row in p2p["matrix"]:
            peers = [v for v in row if v is not None]
            mins.append(min(peers) if peers else 0.0)
        out.put("p2p_bandwidth_gbps", mins)


_NCCL_DATA_ROW = re.compile(r"^\s*\d+\s+\d+\s+\S+")


def _allreduce(check: dict[str, Any], out: _Out) -> None:
    raw = check.get("raw") or ""
    parsed = parse_nccl_tests(raw)
    data_rows = [
        ln
        for ln in raw.splitlines()
        if not ln.lstrip().startswith("#") and _NCCL_DATA_ROW.match(ln)
    ]
    if parsed["damaged"]:
        errors = "; ".join(parsed["errors"])
        out.parse_errors["allreduce"] = errors
        if not data_rows:
            out.problems.append(
                _reason(
                    "nccl_no_rows",
                    "nccl-tests ran no row (the message size did not fit in GPU memory?): "
                    + errors,
                    check="allreduce",
                )
            )
        elif "finite" in errors or "not a number" in errors:
            token = re.search(r"'([^']*)' is not a (?:finite )?number", errors)
            out.problems.append(
                _reason(
                    "not_finite",
                    f"nccl-tests printed a value that is not a finite number: {errors}",
                    check="allreduce",
                    token=token.group(1) if token else "",
                )
            )
        return
    rows = parsed["rows"]
    size = max(r["size_bytes"] for r in rows)
    at = [r for r in rows if r["size_bytes"] == size]
    busbw = min(min(r["out_of_place"]["busbw_gbps"], r["in_place"]["busbw_gbps"]) for r in at)
    out.put("allreduce_busbw_gbps", busbw, size)
    out.put("allreduce_message_size_bytes", size)
    wrong = sum((r[k]["wrong"] or 0) for r in rows for k in ("out_of_place", "in_place"))
    wrong += parsed["out_of_bounds"] or 0
    if any(r[k]["wrong"] is None for r in rows for k in ("out_of_place", "in_place")):
        if parsed["check_column"] == "#wrong":  # N/A: run with -c 0, nothing was checked
            out.problems.append(
                _reason(
                    "nccl_not_checked",
                    "nccl-tests ran without data checking (#wrong N/A)",
                    check="allreduce",
                )
            )
    out.put("allreduce_wrong_count", wrong)
    if wrong:
        out.problems.append(
            _reason(
                "nccl_wrong_values",
                f"nccl-tests reported {wrong} wrong values (exit status "
                f"{check.get('return_code')})",
                check="allreduce",
                count=wrong,
            )
        )


def _gemm(check: dict[str, Any], out: _Out) -> None:
    try:
        doc = json.loads(check.get("raw") or "")
    except json.JSONDecodeError as exc:
        out.parse_errors["gemm"] = f"GEMM output is not JSON: {exc}"
        return
    if not isinstance(doc, dict):
        out.parse_errors["gemm"] = "GEMM output is not a JSON object"
        return
    dtype = str(doc.get("dtype") or "")
    tflops = _finite_list(doc.get("tflops") or [])
    if dtype not in ("bf16", "fp16"):
        out.parse_errors["gemm"] = f"unknown GEMM dtype {dtype!r}"
        return
    if tflops is None:
        out.problems.append(
            _reason(
                "not_finite",
                "the GEMM gave a figure that is not a finite number",
                check="gemm",
                token=str(doc.get("tflops")),
            )
        )
    elif tflops:
        out.put(f"gemm_tflops_{dtype}", tflops)
    errs = doc.get("max_rel_error")
    rel = _finite_list(errs) if isinstance(errs, list) else None
    if rel is not None and rel:
        out.put("gemm_rel_error", rel)
    fp8 = doc.get("fp8_tflops")
    if isinstance(fp8, list) and fp8 and all(isinstance(v, int | float) for v in fp8):
        out.put("gemm_tflops_fp8", fp8)
    if isinstance(doc.get("seconds"), int | float):
        out.put("gemm_sustained_s", doc["seconds"])
    _samples(doc, out)


_IDLE_OR_SW_CAP = 0x1 | 0x4  # azure_gpu_clock_throttling.nhc: idle, none, SW power cap pass


def _samples(doc: dict[str, Any], out: _Out, prefix: str = "", during: str = "the GEMM") -> None:
    samples = [s for s in doc.get("samples") or [] if isinstance(s, dict) and s.get("csv")]
    per_gpu: dict[int, dict[str, list[float]]] = {}
    throttled: set[int] = set()
    reasons_seen: dict[int, str] = {}
    for sample in samples:
        if sample.get("return_code") != 0:
            continue
        parsed = parse_nvidia_smi_csv(sample["csv"])
        if parsed["damaged"]:
            continue
        for row in parsed["rows"]:
            idx = row.get("index")
            if not isinstance(idx, int):
                continue
            slot = per_gpu.setdefault(idx, {"temp": [], "power": [], "clock": []})
            for key, name in (
                ("temperature_gpu", "temp"),
                ("power_draw_w", "power"),
                ("clocks_sm_mhz", "clock"),
            ):
                if isinstance(row.get(key), int | float):
                    slot[name].append(float(row[key]))
            reason = next(
                (v for k, v in row.items() if k.startswith("clocks_") and k.endswith("_active")),
                None,
            )
            try:
                mask = int(str(reason), 16)
            except ValueError:
                continue
            if mask & ~_IDLE_OR_SW_CAP:
                throttled.add(idx)
                reasons_seen.setdefault(idx, str(reason))
    if not per_gpu:
        return  # no sample: throttled_gpus missing, the rule fails closed
    gpus = sorted(per_gpu)
    out.put(prefix + "throttled_gpus", len(throttled))
    for metric, name, pick in (
        ("gpu_temperature_max_c", "temp", max),
        ("gpu_power_max_w", "power", max),
        ("gpu_sm_clock_min_mhz", "clock", min),
    ):
        if all(per_gpu[g][name] for g in gpus):
            out.put(prefix + metric, [pick(per_gpu[g][name]) for g in gpus])
    if throttled:
        gpu = min(throttled)
        out.problems.append(
            _reason(
                "gpu_throttled",
                f"GPU {gpu} throttled during {during} (reasons {reasons_seen[gpu]})",
                gpu=gpu,
                reasons=reasons_seen[gpu],
            )
        )


def _slowdown(series: list[float]) -> float | None:
    """1 − (median of the last third) / (median of the first third) of a round series;
    0 when it did not slow (a node that got faster did not slow down)."""
    if not series:
        return None
    third = max(1, len(series) // 3)
    first = sorted(series[:third])[(third - 1) // 2]
    last = sorted(series[-third:])[(third - 1) // 2]
    if first <= 0:
        return 1.0
    return round(max(0.0, 1.0 - last / first), 4)


def _burn_in(check: dict[str, Any], out: _Out) -> None:
    """The burn-in's rounds (GEMM per GPU, all-reduce) and samples: how long it ran, how
    much each GPU and the all-reduce slowed from the first third of the rounds to the last,
    and the throttling seen (GPU path). A round that failed is a problem."""
    try:
        doc = json.loads(check.get("raw") or "")
    except json.JSONDecodeError as exc:
        out.parse_errors["burn_in"] = f"burn-in output is not JSON: {exc}"
        return
    rounds = doc.get("rounds") if isinstance(doc, dict) else None
    seconds = doc.get("seconds") if isinstance(doc, dict) else None
    if not isinstance(rounds, list) or not rounds or not isinstance(seconds, int | float):
        out.parse_errors["burn_in"] = "burn-in output has no rounds or no duration"
        return
    out.put("burn_in_hours", round(float(seconds) / 3600, 6))
    cpu = check.get("device") == "cpu"
    busbw: list[float] = []
    wrong = 0
    gemm: list[list[float]] = []
    for i, r in enumerate(rounds):
        if r.get("allreduce_status") != "completed":
            out.problems.append(
                _reason("burn_in_round_failed", f"burn-in round {i + 1}: the all-reduce failed",
                        check="burn_in", round=i + 1)
            )  # fmt: skip
            continue
        if cpu:
            values = _finite_list([r.get("gflops"), r.get("allreduce_busbw_gbps")])
            if values is None:
                out.parse_errors["burn_in"] = f"round {i + 1}: a figure is not a number"
                return
            gemm.append([values[0]])
            busbw.append(values[1])
            continue
        tflops = _finite_list(r.get("tflops") or [])
        sub = _Out()
        _allreduce({"raw": r.get("allreduce_raw") or ""}, sub)
        figure = next((v for k, v in sub.metrics.items() if k.startswith("allreduce_busbw")), None)
        if tflops is None or not tflops or sub.parse_errors or figure is None:
            out.parse_errors["burn_in"] = f"round {i + 1}: GEMM or all-reduce figures unreadable"
            return
        gemm.append(tflops)
        busbw.append(float(figure))
        wrong += int(sub.metrics.get("allreduce_wrong_count") or 0)
    if gemm and len({len(g) for g in gemm}) == 1:
        per_gpu = [_slowdown([g[i] for g in gemm]) for i in range(len(gemm[0]))]
        out.put("burn_in_gemm_slowdown", per_gpu[0] if cpu else per_gpu)
    if busbw:
        out.put("burn_in_allreduce_slowdown", _slowdown(busbw))
    if not cpu:
        out.put("burn_in_allreduce_wrong_count", wrong)
        _samples(doc, out, prefix="burn_in_", during="the burn-in")


def _copy(check: dict[str, Any], out: _Out) -> None:
    try:
        doc = json.loads(check.get("raw") or "")
    except json.JSONDecodeError as exc:
        out.parse_errors["memory_bandwidth"] = f"copy output is not JSON: {exc}"
        return
    values = _finite_list(doc.get("hbm_gbps") or []) if isinstance(doc, dict) else None
    if values is None:
        out.problems.append(
            _reason("not_finite", "a copy figure is not a finite number", check="memory_bandwidth")
        )
    elif values:
        out.put("hbm_bandwidth_gbps", values)
