"""``derive``: an agent document → ``rules.Measurement`` (each check's raw output through
its module, the outcomes, the agent's own problems)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.validation.metrics.collect import _Out, _reason
from provisioning.validation.metrics.fabric import _ib
from provisioning.validation.metrics.health import _dcgm, _ecc, _inventory, _nvlink, _remap, _xid
from provisioning.validation.metrics.performance import (
    _allreduce,
    _burn_in,
    _copy,
    _gemm,
    _nvbandwidth,
)
from provisioning.validation.rules import (
    CheckOutcome,
    Measurement,
)

_CPU_METRICS = {
    "gemm": "gemm_gflops_cpu",
    "memory_bandwidth": "memcopy_bandwidth_gbps_cpu",
    "allreduce": "allreduce_busbw_gbps_cpu",
}
_DERIVE = {
    "ecc": _ecc,
    "ecc_remap": _remap,
    "xid": _xid,
    "dcgm_diag": _dcgm,
    "nvbandwidth": _nvbandwidth,
    "allreduce": _allreduce,
    "gemm": _gemm,
    "memory_bandwidth": _copy,
}


def derive(
    document: Mapping[str, Any],
    *,
    node: str,
    gpu_model: str,
    fabric: str | None = None,
    expected: Mapping[str, Any] | None = None,
    allow_injected: bool = False,
) -> Measurement:
    """The rules' view of an agent document: metrics derived from the raw outputs, each
    check's outcome, and the problems found. Never raises on a bad document: what cannot
    be read is a parse error or a problem (fail closed)."""
    out = _Out()
    host = document.get("host") if isinstance(document.get("host"), dict) else {}
    device = str((host or {}).get("device", ""))
    checks = [c for c in document.get("checks", []) if isinstance(c, dict) and c.get("name")]
    for check in checks:
        name = str(check["name"])
        if check.get("status") != "completed":
            continue
        if name == "burn_in":  # both paths: the CPU path's rounds are judged too
            try:
                _burn_in(check, out)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                out.parse_errors[name] = f"unexpected output ({type(exc).__name__}: {exc})"
            continue
        if device == "cpu":
            metric = _CPU_METRICS.get(name)
            if metric and isinstance(check.get("value"), int | float):
                out.put(metric, check["value"])
            continue
        try:
            if name == "gpu_inventory":
                _inventory(check, out, gpu_model)
            elif name == "nvlink":
                _nvlink(check, out, gpu_model)
            elif name == "ib_write_bw":
                _ib(check, out, fabric)
            elif name in _DERIVE:
                _DERIVE[name](check, out)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            out.parse_errors[name] = f"unexpected output ({type(exc).__name__}: {exc})"
    if document.get("complete") is False:
        done = {str(c["name"]) for c in checks}
        missing = [n for n in document.get("planned") or [] if n not in done]
        out.problems.append(
            _reason(
                "agent_incomplete",
                "the agent stopped before finishing: "
                + (", ".join(missing) if missing else "its last line is missing"),
                checks=", ".join(missing),
            )
        )
        for name in missing:
            out.problems.append(
                _reason("check_not_finished", f"check {name} did not finish", check=name)
            )
    if (host or {}).get("injected_figures") and not allow_injected:
        out.problems.append(
            _reason(
                "injected_figures",
                "the GEMM and copy figures were injected (a test document), not measured",
            )
        )
    outcomes = [
        CheckOutcome(
            str(c.get("name")),
            str(c.get("status")),
            c.get("return_code"),
            c.get("reason") or "",
            out.parse_errors.get(str(c.get("name"))),
            str((c.get("details") or {}).get("reason_code") or "")
            if isinstance(c.get("details"), dict)
            else "",
        )
        for c in checks
    ]
    return Measurement(
        node=node,
        gpu_model=gpu_model,
        device=device,
        fabric=fabric,
        metrics=out.metrics,
        checks=outcomes,
        expected=dict(expected or {}),
        problems=out.problems,
        observations=out.observations,
    )
