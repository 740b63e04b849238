"""Judging measurements against the acceptance rules (pure: no Django).

``evaluate_node`` and ``evaluate_cluster`` take the rules to apply (by default the seed
set, :data:`provisioning.validation.default_rules.DEFAULT_RULES`); each result carries
its reasons as data (``rules.Reason``). Fail closed: a required metric that is missing, a
check that was skipped, failed, exited non-zero or whose output did not parse fails the
node with that reason.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.metrics import METRICS
from provisioning.validation.rules import (
    BASELINE,
    EXPECTED_BY_CHECK,
    CheckOutcome,
    ClusterVerdict,
    Measurement,
    NodeVerdict,
    Number,
    Reason,
    Rule,
    RuleResult,
    Scope,
    normalize_gpu_model,
)

__all__ = ["AGENT_CODES", "evaluate_check", "evaluate_cluster", "evaluate_node", "rules_for"]

#: The agent's own failure codes that become the reason's code (each has a message in
#: ``reasons.MESSAGES``); any other failed check is ``check_failed``.
AGENT_CODES = frozenset({"tool_missing", "no_message_size", "kernel_log_unreadable"})


def _dec(value: object) -> Decimal:
    """A measured or configured figure as a Decimal; ``TypeError`` if it is not a number
    (measurements come from the agent's JSON, so any shape can arrive here)."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        raise TypeError("a boolean is not a measurement")
    try:
        dec = Decimal(str(value))
    except InvalidOperation as exc:
        raise TypeError(f"not a number: {value!r}") from exc
    if not dec.is_finite():  # NaN and infinities are not measurements (fail, never crash)
        raise TypeError(f"not a finite number: {value!r}")
    return dec


def _reason(code: str, text: str, **params: Any) -> Reason:
    clean = {k: (float(v) if isinstance(v, Decimal) else v) for k, v in params.items()}
    return Reason(code=code, params=clean, text=text)


def _fmt(value: Any) -> str:
    if isinstance(value, Decimal):
        value = value.normalize()
        return f"{value:f}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _resolve_baseline(rule: Rule, m: Measurement) -> Decimal | None:
    baseline: Number | None = rule.baseline
    if rule.baseline_from is not None:
        baseline = m.expected.get(rule.baseline_from)
    if baseline is None:
        return None
    value = _dec(baseline)
    if rule.baseline_multiplier_from is not None:
        mult = m.expected.get(rule.baseline_multiplier_from)
        if mult is None:
            return None
        value *= _dec(mult)
    return value


def _judge_one(rule: Rule, value: Any, baseline: Decimal | None) -> tuple[bool, str]:
    """Return (passes, expected-text) for one scalar value."""
    if rule.equals is not None:
        target: Any = baseline if rule.equals == BASELINE else rule.equals
        if isinstance(target, str) or isinstance(value, str):
            return str(value) == str(target), f"= {_fmt(target)}"
        return _dec(value) == _dec(target), f"= {_fmt(target)}"
    v = _dec(value)
    if rule.min_variance is not None:
        if baseline is None:
            return False, "a baseline"
        threshold = baseline * (1 + _dec(rule.min_variance))
        return v >= threshold, f">= {_fmt(threshold)} ({_fmt(baseline)} {rule.min_variance:+.0%})"
    ok = True
    parts = []
    if rule.min_value is not None:
        lo = _dec(rule.min_value)
        ok = ok and (v >= lo if rule.min_inclusive else v > lo)
        parts.append(f"{'>=' if rule.min_inclusive else '>'} {_fmt(lo)}")
    if rule.max_value is not None:
        hi = _dec(rule.max_value)
        ok = ok and v <= hi
        parts.append(f"<= {_fmt(hi)}")
    return ok, " and ".join(parts)


def _evaluate_rule(rule: Rule, m: Measurement, checks: Mapping[str, CheckOutcome]) -> RuleResult:
    res = RuleResult(rule=rule, status="pass")
    unit = f" {rule.unit}" if rule.unit else ""
    check = checks.get(rule.check) if rule.check else None
    value = m.metrics.get(rule.key)

    def fail(reason: Reason) -> RuleResult:
        res.status = "fail" if rule.required else "not_measured"
        res.reasons.append(reason)
        return res

    if check is not None and (check.status != "completed" or check.parse_error):
        if check.parse_error:
            return fail(
                _reason(
                    "parse_error",
                    f"{rule.key}: the output of check {check.name} could not be parsed: "
                    f"{check.parse_error}",
                    metric=rule.key,
                    check=check.name,
                    error=check.parse_error,
                )
            )
        code = "check_skipped" if check.status == "skipped" else "check_failed"
        verb = "was skipped" if check.status == "skipped" else "failed"
        return fail(
            _reason(
                code,
                f"{rule.key}: check {check.name} {verb}"
                + (f": {check.reason}" if check.reason else ""),
                metric=rule.key,
                check=check.name,
                detail=check.reason,
            )
        )
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        return fail(_reason("missing_metric", f"{rule.key}: not measured", metric=rule.key))
    res.measured = list(value) if isinstance(value, list | tuple) else value
    baseline = _resolve_baseline(rule, m)
    if baseline is None and (rule.min_variance is not None or rule.equals == BASELINE):
        missing = rule.baseline_from or rule.baseline_multiplier_from
        return fail(
            _reason(
                "missing_baseline",
                f"{rule.key}: no baseline ({missing}) to compare with",
                metric=rule.key,
                baseline=missing,
            )
        )
    values = list(value) if isinstance(value, list | tuple) else [value]
    try:
        verdicts = [_judge_one(rule, v, baseline) for v in values]
    except TypeError as exc:
        return fail(
            _reason(
                "bad_value",
                f"{rule.key}: measured value is not a number ({exc})",
                metric=rule.key,
            )
        )
    res.expected = verdicts[0][1]
    if baseline is not None and rule.min_variance is not None:
        worst = min(_dec(v) for v in values)
        res.variance = float((worst - baseline) / baseline)
    per_item = isinstance(value, list | tuple)
    nics = _nic_names(rule, m, len(values)) if per_item else None
    per_gpu = per_item and nics is None
    for idx, (v, (ok, expected)) in enumerate(zip(values, verdicts, strict=True)):
        if ok:
            continue
        where = f" on GPU {idx}" if per_gpu else f" on NIC {nics[idx]}" if nics else ""
        res.status = "fail"
        if per_gpu:
            res.flagged_gpus.append(idx)
        res.reasons.append(
            _reason(
                "below_threshold" if rule.equals is None else "not_equal",
                f"{rule.key}{where}: measured {_fmt(v)}{unit}, expected {expected}{unit}",
                metric=rule.key,
                gpu=idx if per_gpu else None,
                **({"nic": nics[idx]} if nics else {}),
                measured=v,
                expected=expected,
                unit=rule.unit,
                source=rule.source,
            )
        )
    if per_gpu and rule.max_below_median is not None and len(values) > 1:
        decs = [_dec(v) for v in values]
        median = statistics.median(decs)
        floor = median * (1 - _dec(rule.max_below_median))
        for idx, v in enumerate(decs):
            if v < floor:
                res.status = "fail"
                if idx not in res.flagged_gpus:
                    res.flagged_gpus.append(idx)
                res.reasons.append(
                    _reason(
                        "below_node_median",
                        f"{rule.key} on GPU {idx}: {_fmt(v)}{unit} is more than "
                        f"{rule.max_below_median:.0%} below the node median {_fmt(median)}{unit}",
                        metric=rule.key,
                        gpu=idx,
                        measured=v,
                        median=median,
                        tolerance=rule.max_below_median,
                        unit=rule.unit,
                    )
                )
    return res


def _nic_names(rule: Rule, m: Measurement, count: int) -> list[str] | None:
    """A per-NIC list's item names (``metrics.METRICS``: ``per="nic"``); None for a
    per-GPU list. Names missing or of another length: the items' positions."""
    spec = METRICS.get(rule.metric)
    if spec is None or spec.per != "nic":
        return None
    names = m.metrics.get(spec.names) if spec.names else None
    if isinstance(names, list) and len(names) == count:
        return [str(n) for n in names]
    return [f"#{i}" for i in range(count)]


def rules_for(rules: Iterable[Rule], m: Measurement, scope: Scope = "node") -> list[Rule]:
    """The rules that apply to a measurement: its profile, its fabric, the scope."""
    count = m.expected.get("gpu_count")
    return [
        r
        for r in rules
        if r.applies_to(m.profile, m.fabric, scope, count)
        and (r.check not in EXPECTED_BY_CHECK or EXPECTED_BY_CHECK[r.check] in m.expected)
    ]


def _evaluate(m: Measurement, rules: Iterable[Rule], scope: Scope) -> NodeVerdict:
    reasons: list[Reason] = list(m.problems)
    notes: list[Reason] = list(m.observations)
    if m.device == "cpu" and normalize_gpu_model(m.gpu_model) not in ("", "cpu"):
        reasons.append(
            _reason(
                "device_mismatch",
                f"measured on the CPU, but the node has {m.gpu_model} GPUs",
                gpu_model=m.gpu_model,
                device=m.device,
            )
        )
    selected = rules_for(rules, m, scope)
    # Wildcard rules alone (GPU count, XID...) cannot accept a node: its GPU model must have
    # rules of its own, or an unknown model would pass without a performance check.
    own = [r for r in selected if r.gpu_model == m.profile] if scope == "node" else selected
    if not own:
        reasons.append(
            _reason(
                "no_rules",
                f"no acceptance rules for {m.profile or 'an unknown GPU model'}",
                profile=m.profile,
            )
        )
    checks = {c.name: c for c in m.checks}
    required_checks = {r.check for r in selected if r.required and r.check}
    for c in m.checks:
        if c.return_code not in (None, 0):
            reasons.append(
                _reason(
                    "nonzero_return_code",
                    f"check {c.name} exited with status {c.return_code}",
                    check=c.name,
                    return_code=c.return_code,
                )
            )
        if c.parse_error:
            reasons.append(
                _reason(
                    "parse_error",
                    f"the output of check {c.name} could not be parsed: {c.parse_error}",
                    check=c.name,
                    error=c.parse_error,
                )
            )
        if c.status == "failed":
            reasons.append(
                _reason(
                    c.reason_code if c.reason_code in AGENT_CODES else "check_failed",
                    f"check {c.name} failed" + (f": {c.reason}" if c.reason else ""),
                    check=c.name,
                    detail=c.reason,
                )
            )
        elif c.status == "skipped":
            skip = _reason(
                "check_skipped",
                f"check {c.name} was skipped" + (f": {c.reason}" if c.reason else ""),
                check=c.name,
                detail=c.reason,
            )
            (reasons if c.name in required_checks else notes).append(skip)
        elif c.status != "completed":
            reasons.append(
                _reason(
                    "unknown_status",
                    f"check {c.name} has an unknown status {c.status!r}",
                    check=c.name,
                    status=c.status,
                )
            )
    results = [_evaluate_rule(r, m, checks) for r in selected]
    said = {r.params.get("check") for r in reasons if r.params.get("check")}
    for res in results:
        for reason in res.reasons:
            if res.status == "fail":
                if reason.params.get("check") in said and reason.code in (
                    "check_skipped",
                    "check_failed",
                    "parse_error",
                ):
                    continue  # already said once for the check
                reasons.append(reason)
            else:
                notes.append(reason)
    return NodeVerdict(
        node=m.node, accepted=not reasons, reasons=reasons, results=results, notes=notes
    )


def evaluate_node(m: Measurement, rules: Iterable[Rule] | None = None) -> NodeVerdict:
    """Judge one node against the rules for its GPU model (default :data:`DEFAULT_RULES`).

    ``accepted`` is True only when rules exist for the node's GPU model (wildcard rules
    alone do not count: an unknown model fails with ``no_rules``), every applicable rule
    passes, and no check failed, exited non-zero, failed to parse or (when a required rule
    needs it) was skipped. Skipped checks that no required rule needs become ``notes``.
    """
    return _evaluate(m, DEFAULT_RULES if rules is None else rules, "node")


def evaluate_check(m: Measurement, check: str, rules: Iterable[Rule] | None = None) -> NodeVerdict:
    """One check's share of the node verdict, as soon as the check finished (the staff
    run page shows it live): ``m`` holds that check alone (``metrics.derive`` of a
    document with one check); judged are the rules that read its metrics, its outcome
    and the problems its output showed. Whether the node has rules at all is the whole
    verdict's business (``evaluate_node``), so ``no_rules`` is left out here. The final
    verdict is always ``evaluate_node`` on the whole document."""
    mine = [r for r in (DEFAULT_RULES if rules is None else rules) if r.check == check]
    verdict = _evaluate(m, mine, "node")
    verdict.reasons = [r for r in verdict.reasons if r.code != "no_rules"]
    verdict.accepted = not verdict.reasons
    return verdict


def evaluate_cluster(
    nodes: Sequence[Measurement | NodeVerdict],
    cluster: Measurement | None,
    rules: Iterable[Rule] | None = None,
) -> ClusterVerdict:
    """Judge a cluster: every node accepted and every cluster-scope rule passes.

    ``nodes`` may be measurements (judged here) or verdicts already made. ``cluster``
    carries the cluster metrics (``cluster_allreduce_ring_busbw_gbps``,
    ``scaling_efficiency``) with ``gpu_model``, ``fabric`` and ``expected``
    (``nics_per_node``); for a multi-node cluster a missing cluster measurement fails.
    """
    rule_list = list(DEFAULT_RULES if rules is None else rules)
    verdicts = [n if isinstance(n, NodeVerdict) else _evaluate(n, rule_list, "node") for n in nodes]
    reasons: list[Reason] = []
    if not verdicts:
        reasons.append(_reason("no_nodes", "the cluster has no nodes"))
    for v in verdicts:
        if not v.accepted:
            reasons.append(
                _reason(
                    "node_rejected",
                    f"node {v.node} was not accepted: " + "; ".join(v.reason_texts),
                    node=v.node,
                )
            )
    results: list[RuleResult] = []
    if cluster is not None:
        cv = _evaluate(cluster, rule_list, "cluster")
        results = cv.results
        reasons.extend(cv.reasons)
    elif len(verdicts) > 1:
        reasons.append(
            _reason(
                "missing_cluster_measurement",
                "no cluster-wide measurement (multi-node all-reduce, scaling efficiency)",
            )
        )
    return ClusterVerdict(accepted=not reasons, reasons=reasons, nodes=verdicts, results=results)
