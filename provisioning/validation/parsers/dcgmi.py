"""``dcgmi diag`` output, as JSON (``-j``) or as the table."""

from __future__ import annotations

import json
import re
from typing import Any

from provisioning.validation.parsers.common import INT_RE, ParseError, run_parser

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
        if parts and all(INT_RE.match(p) for p in parts):
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
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
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
    return run_parser("dcgmi", _dcgm_body, text)
