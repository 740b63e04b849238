"""Why a node or a cluster was rejected, in the reader's language.

Reasons are stored as data (``{"code", "params", "text"}``: ``rules.Reason``, the SSH
runner's ``AgentFailed``); ``text`` is the English written when they were made, kept for
logs. Pages and the acceptance report show ``reason_message(reason)``: the message for
the code, translated, with its parameters. Tool output that a parameter may carry
(``detail``, ``error``: an agent's or a tool's own English) is not part of the message;
``reason_detail`` returns it for staff pages, and the raw outputs are stored anyway.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext, gettext_noop

from core.texts import in_reader_language
from provisioning.models import NodeSwap
from provisioning.validation import selectors

# code → (message, message when the reason names a GPU); translated when rendered.
MESSAGES: dict[str, tuple[str, str | None]] = {
    "missing_metric": (gettext_noop("%(metric)s: not measured"), None),
    "missing_baseline": (
        gettext_noop("%(metric)s: no baseline (%(baseline)s) to compare with"),
        None,
    ),
    "bad_value": (gettext_noop("%(metric)s: the measured value is not a number"), None),
    "below_threshold": (
        gettext_noop("%(metric)s: measured %(measured)s, expected %(expected)s"),
        gettext_noop("%(metric)s on GPU %(gpu)s: measured %(measured)s, expected %(expected)s"),
    ),
    "not_equal": (
        gettext_noop("%(metric)s: measured %(measured)s, expected %(expected)s"),
        gettext_noop("%(metric)s on GPU %(gpu)s: measured %(measured)s, expected %(expected)s"),
    ),
    "below_node_median": (
        gettext_noop(
            "%(metric)s on GPU %(gpu)s: %(measured)s is more than %(tolerance)s below the "
            "node median %(median)s"
        ),
        None,
    ),
    "device_mismatch": (
        gettext_noop("Measured on the CPU, but the node has %(gpu_model)s GPUs"),
        None,
    ),
    "no_rules": (gettext_noop("No acceptance rules for %(profile)s"), None),
    "nonzero_return_code": (
        gettext_noop("Check %(check)s exited with status %(return_code)s"),
        None,
    ),
    "parse_error": (gettext_noop("The output of check %(check)s could not be parsed"), None),
    "check_failed": (gettext_noop("Check %(check)s failed"), None),
    "check_skipped": (gettext_noop("Check %(check)s was skipped"), None),
    "unknown_status": (gettext_noop("Check %(check)s has an unknown status"), None),
    "node_rejected": (gettext_noop("Node %(node)s was not accepted"), None),
    "no_nodes": (gettext_noop("The cluster has no nodes"), None),
    "missing_cluster_measurement": (
        gettext_noop("No cluster-wide measurement (multi-node all-reduce, scaling efficiency)"),
        None,
    ),
    "no_verdict": (gettext_noop("The cluster could not be judged"), None),
    "agent_failed": (gettext_noop("The node agent produced no report"), None),
    "agent_timeout": (gettext_noop("The node agent ran past %(seconds)s s"), None),
    "agent_exit_status": (gettext_noop("The node agent exited with status %(status)s"), None),
    "agent_no_json": (gettext_noop("The node agent printed no valid JSON document"), None),
    "agent_copy_failed": (gettext_noop("The node agent could not be copied to the node"), None),
    "ssh_not_configured": (
        gettext_noop("SSH access for validation is not configured (%(setting)s)"),
        None,
    ),
    "ssh_unknown_host_key": (
        gettext_noop("%(host)s offered a host key that is not in known_hosts: refused"),
        None,
    ),
    "ssh_host_key_mismatch": (
        gettext_noop("%(host)s offered a host key different from the one in known_hosts: refused"),
        None,
    ),
    "ssh_auth_failed": (gettext_noop("%(user)s@%(host)s refused the validation key"), None),
    "ssh_unreachable": (gettext_noop("Cannot reach %(host)s over SSH"), None),
    "burn_in_round_failed": (gettext_noop("Burn-in round %(round)s: the all-reduce failed"), None),
    # What the raw outputs showed (``metrics.derive``) and the agent's own failure codes.
    "agent_incomplete": (gettext_noop("The node agent stopped before finishing"), None),
    "check_not_finished": (gettext_noop("Check %(check)s did not finish"), None),
    "ecc_uncorrectable": (
        gettext_noop("GPU %(gpu)s: %(count)s uncorrectable SRAM ECC errors"),
        None,
    ),
    "gpu_model_mismatch": (
        gettext_noop("GPU %(gpu)s is %(found)s; the node type sells %(expected)s"),
        None,
    ),
    "gpu_throttled": (
        gettext_noop("GPU %(gpu)s throttled during the GEMM (reasons %(reasons)s)"),
        None,
    ),
    "injected_figures": (
        gettext_noop("The GEMM and copy figures were injected by a test, not measured"),
        None,
    ),
    "mig_enabled": (gettext_noop("GPU %(gpu)s has MIG mode enabled"), None),
    "nccl_no_rows": (
        gettext_noop("nccl-tests ran no row (did the message size not fit in GPU memory?)"),
        None,
    ),
    "nccl_not_checked": (gettext_noop("nccl-tests ran without checking the data"), None),
    "nccl_wrong_values": (gettext_noop("nccl-tests reported %(count)s wrong values"), None),
    "not_finite": (
        gettext_noop("Check %(check)s gave a value that is not a finite number (%(token)s)"),
        None,
    ),
    "nvlink_all_inactive": (gettext_noop("GPU %(gpu)s: every NVLink is inactive"), None),
    "nvlink_inactive": (gettext_noop("%(count)s NVLinks are inactive"), None),
    "nvlink_no_links": (
        gettext_noop("nvidia-smi nvlink -s listed no link (an empty output is not a pass)"),
        None,
    ),
    "xid_critical": (gettext_noop("The kernel log shows XID %(xids)s"), None),
    "xid_noted": (
        gettext_noop("The kernel log shows XID %(xids)s (a contained ECC error)"),
        None,
    ),
    "tool_missing": (gettext_noop("Check %(check)s: its tool is not installed"), None),
    "no_message_size": (
        gettext_noop("Check %(check)s: no all-reduce message size fits the GPU memory"),
        None,
    ),
    "kernel_log_unreadable": (gettext_noop("The kernel log could not be read"), None),
    "ib_nic_not_measured": (
        gettext_noop("%(device)s is an InfiniBand NIC of the node but was not measured"),
        None,
    ),
}
UNKNOWN = gettext_noop("Rejected for the reason “%(code)s”")
#: The message when the reason names a NIC (a per-NIC figure: ``metrics.METRICS`` per="nic").
PER_NIC: dict[str, str] = {
    "below_threshold": gettext_noop(
        "%(metric)s on NIC %(nic)s: measured %(measured)s, expected %(expected)s"
    ),
    "not_equal": gettext_noop(
        "%(metric)s on NIC %(nic)s: measured %(measured)s, expected %(expected)s"
    ),
}


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _params(code: str, params: Mapping[str, Any]) -> dict[str, str]:
    unit = str(params.get("unit") or "")
    out = {k: _number(v) for k, v in params.items() if v is not None}
    for key in ("measured", "median"):
        if key in out and unit:
            out[key] = f"{out[key]} {unit}"
    if "expected" in out and unit:
        out["expected"] = f"{out['expected']} {unit}"
    tolerance = params.get("tolerance")
    if isinstance(tolerance, int | float | Decimal):
        out["tolerance"] = f"{float(tolerance):.0%}"
    if code == "no_rules" and not params.get("profile"):
        out["profile"] = "?"
    return out


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def reason_message(reason: Mapping[str, Any] | str) -> str:
    """The reason's message for its code, in the active language, with its parameters."""
    if not isinstance(reason, Mapping):  # a reason stored as bare text (older rows)
        return gettext(MESSAGES["agent_failed"][0])
    code = str(reason.get("code") or "")
    params = reason.get("params") if isinstance(reason.get("params"), Mapping) else {}
    found = MESSAGES.get(code)
    if found is None:
        return gettext(UNKNOWN) % {"code": code or "?"}
    plain, per_gpu = found
    template = per_gpu if per_gpu and params.get("gpu") is not None else plain
    if params.get("nic") is not None and code in PER_NIC:
        template = PER_NIC[code]
    return gettext(template) % _Missing(_params(code, params))


def reason_messages(reasons: Iterable[Mapping[str, Any] | str]) -> list[str]:
    return [reason_message(r) for r in reasons or []]


def reason_detail(reason: Mapping[str, Any] | str) -> str:
    """The tool's own words a reason carries (agent error, parser message), for staff."""
    if not isinstance(reason, Mapping):
        return str(reason)
    params = reason.get("params") if isinstance(reason.get("params"), Mapping) else {}
    return str(params.get("detail") or params.get("error") or "")


def annotate_progress(progress: Any) -> Any:
    """Give a provisioning run's progress (``provisioning.selectors.RunProgress``) the
    translated validation reasons the pages show instead of the stored English: per node
    whose validation step did not pass ``validation_reasons`` (and ``validation_details``,
    the tools' own words, for staff), per swap that followed a rejection likewise."""
    if progress is None:
        return progress
    for np in progress.nodes:
        np.validation_reasons, np.validation_details = [], []
    for swap in progress.swaps:
        swap.validation_reasons = []
    not_passed = {
        np.run_node.node_id
        for np in progress.nodes
        if any(s.name == "validate" and s.status == "failed" for s in np.steps)
    }
    if not not_passed and not progress.swaps:
        return progress
    rows = selectors.rejected_results_for_order(progress.run.order_id)
    for np in progress.nodes:
        mine = [reasons for node_id, _at, reasons in rows if node_id == np.run_node.node_id]
        if np.run_node.node_id in not_passed and mine:
            np.validation_reasons = reason_messages(mine[-1])
            np.validation_details = [d for d in map(reason_detail, mine[-1]) if d]
    for swap in progress.swaps:
        before = [
            reasons
            for node_id, at, reasons in rows
            if node_id == swap.failed_node_id and at <= swap.failed_at
        ]
        if before:
            swap.validation_reasons = reason_messages(before[-1])
    return progress


def _measured(value: Any) -> str:
    if isinstance(value, list | tuple):
        numbers = [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]
        if numbers and len(numbers) == len(value):
            low, high = min(numbers), max(numbers)
            span = _number(low) if low == high else f"{_number(low)}–{_number(high)}"
            return f"{span} ×{len(numbers)}"
        return ", ".join(_number(v) for v in value)
    return _number(value)


# The agent's checks (``provisioning.agent.checks.CHECKS``) as the staff run page names
# them; the code name stays beside the label (it is what the agent's lines and the raw
# outputs carry).
CHECK_LABELS = {
    "gpu_inventory": gettext_noop("GPU inventory (model, memory, MIG)"),
    "ecc": gettext_noop("ECC errors"),
    "ecc_remap": gettext_noop("Row remapping and retired pages"),
    "nvlink": gettext_noop("NVLink status"),
    "xid": gettext_noop("Kernel log (XID errors)"),
    "gemm": gettext_noop("Matrix multiplication (GEMM)"),
    "memory_bandwidth": gettext_noop("GPU memory bandwidth"),
    "nvbandwidth": gettext_noop("Host and peer copy bandwidth"),
    "allreduce": gettext_noop("NCCL all-reduce"),
    "ib_write_bw": gettext_noop("InfiniBand write bandwidth"),
    "dcgm_diag": gettext_noop("DCGM diagnostics"),
    "burn_in": gettext_noop("Burn-in"),
}


def check_label(name: str) -> str:
    """A check's name in the active language (its code name for a check not listed)."""
    label = CHECK_LABELS.get(name)
    return gettext(label) if label else name


def annotate_live_checks(progress: Any) -> Any:
    """Give each node of a provisioning run's progress its agent checks as they ran
    (``live_checks``, in the agent's order), each with its reasons translated
    (``reason_texts``) and its metrics as (name, value) pairs (``measured``): the staff
    run page shows each check as it finishes."""
    if progress is None:
        return progress
    by_node = selectors.live_checks_of_run(progress.run.pk)
    for np in progress.nodes:
        np.live_checks = by_node.get(np.run_node.node_id, [])
        for check in np.live_checks:
            check.label = check_label(check.name)
            check.reason_texts = reason_messages(check.reasons or [])
            metrics = check.metrics if isinstance(check.metrics, Mapping) else {}
            check.measured = [(k, _measured(v)) for k, v in metrics.items()]
    return progress


def swap_rows(order_id: int, *, until: Any = None) -> list[dict[str, Any]]:
    """The order's node swaps up to ``until`` (a run's end), for the acceptance report:
    ``old``, ``new``, ``reason`` (the rejection's reasons translated when validation
    caused it, else the reason staff wrote) and ``at``."""
    swaps = NodeSwap.objects.filter(order_id=order_id).select_related("failed_node", "spare_node")
    if until is not None:
        swaps = swaps.filter(failed_at__lte=until)
    swaps = list(swaps.order_by("failed_at", "pk"))
    if not swaps:
        return []
    rows = selectors.rejected_results_for_order(order_id)
    out = []
    for swap in swaps:
        before = [
            r for node_id, at, r in rows if node_id == swap.failed_node_id and at <= swap.failed_at
        ]
        out.append(
            {
                "old": swap.failed_node.hostname,
                "new": swap.spare_node.hostname if swap.spare_node else gettext("no spare free"),
                "reason": "; ".join(reason_messages(before[-1]))
                if before
                else in_reader_language(swap.reason),
                "at": swap.failed_at,
            }
        )
    return out
