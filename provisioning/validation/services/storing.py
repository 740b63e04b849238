"""Storing an outcome: documents and raw outputs with SHA-256, per-node verdicts, the
cluster's, the rules as judged; the run moved to passed or failed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from core import lifecycle
from core.pdf import sha256_of
from provisioning.models import (
    ValidationArtifact,
    ValidationNodeResult,
    ValidationRun,
    ValidationRunStatus,
)
from provisioning.validation.interface import (
    NodeResult,
    NodeTarget,
    ValidationOutcome,
)
from provisioning.validation.report import ACCEPTANCE_REPORT
from provisioning.validation.rules import Measurement, Rule


def _dump(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, indent=1, default=str)


def _artifact(
    run: ValidationRun, node_id: int | None, check: str, content: str, **extra: Any
) -> ValidationArtifact:
    data = content.encode("utf-8")
    return ValidationArtifact(
        run=run,
        node_id=node_id,
        check_name=check[:48],
        content=content,
        sha256=sha256_of(data),
        size=len(data),
        **extra,
    )


def _reasons(result: NodeResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if result.verdict is None:  # the agent produced no report
        if result.failure is not None:
            return [result.failure.as_dict()], []
        return [{"code": "agent_failed", "params": {}, "text": t} for t in result.reasons], []
    return (
        [r.as_dict() for r in result.verdict.reasons],
        [r.as_dict() for r in result.verdict.notes],
    )


def _cluster_metrics(measurement: Measurement | None) -> dict[str, Any]:
    if measurement is None:
        return {}
    return {
        "metrics": {k: v for k, v in measurement.metrics.items()},
        "checks": [
            {"name": c.name, "status": c.status, "return_code": c.return_code}
            for c in measurement.checks
        ],
        "device": measurement.device,
        "fabric": measurement.fabric,
    }


def _store_outcome(
    run: ValidationRun, targets: Sequence[NodeTarget], outcome: ValidationOutcome
) -> None:
    """Keep every node's verdict, its agent document and each raw output with SHA-256."""
    gpu_models = {t.node_id: t.gpu_model for t in targets}
    artifacts: list[ValidationArtifact] = []
    results: list[ValidationNodeResult] = []
    for result in outcome.nodes:
        reasons, notes = _reasons(result)
        document = _dump(result.report) if result.report else ""
        if result.report:
            artifacts.append(
                _artifact(run, result.node_id, "agent_document", document, raw_format="json")
            )
        for check in result.report.get("checks", []) if result.report else []:
            if not isinstance(check, dict):
                continue
            artifacts.append(
                _artifact(
                    run,
                    result.node_id,
                    str(check.get("name", "?")),
                    str(check.get("raw") or ""),
                    status=str(check.get("status") or "")[:16],
                    raw_format=str(check.get("raw_format") or "")[:32],
                )
            )
        results.append(
            ValidationNodeResult(
                run=run,
                node_id=result.node_id,
                hostname=result.hostname,
                gpu_model=gpu_models.get(result.node_id, ""),
                device=str(result.report.get("host", {}).get("device", ""))[:16]
                if result.report
                else "",
                accepted=result.accepted,
                reasons=reasons,
                notes=notes,
                rule_results=[r.as_dict() for r in result.verdict.results]
                if result.verdict
                else [],
                report=result.report,
                report_sha256=sha256_of(document.encode("utf-8")) if document else "",
            )
        )
    cluster = _cluster_metrics(outcome.cluster_measurement)
    if cluster:
        artifacts.append(_artifact(run, None, "cluster", _dump(cluster), raw_format="json"))
    for output in outcome.cluster_outputs:  # the GPU cluster check's nccl-tests outputs
        artifacts.append(
            _artifact(
                run,
                None,
                str(output["name"]),
                f"$ {output['command']}\n{output['raw']}",
                status="completed" if output.get("exit_status") == 0 else "failed",
                raw_format="nccl-tests",
            )
        )
    ValidationNodeResult.objects.bulk_create(results)
    ValidationArtifact.objects.bulk_create(artifacts)
    run.cluster_metrics = cluster
    run.cluster_verdict = outcome.cluster.as_dict() if outcome.cluster else {}
    run.cluster_reasons = (
        [r.as_dict() for r in outcome.cluster.reasons]
        if outcome.cluster
        else [{"code": "no_verdict", "params": {}, "text": t} for t in outcome.cluster_reasons]
    )
    run.save(update_fields=["cluster_metrics", "cluster_verdict", "cluster_reasons"])


def _rules_snapshot(rules: Sequence[Rule]) -> list[dict[str, Any]]:
    return [
        {
            "metric": r.key,
            "gpu_model": r.gpu_model,
            "fabric": r.fabric,
            "scope": r.scope,
            "source": r.source,
        }
        for r in rules
    ]


def _finish(
    run: ValidationRun, targets: Sequence[NodeTarget], outcome: ValidationOutcome
) -> ValidationRun:
    """Store the outcome and move the run to passed or failed (caller holds a transaction)."""
    _store_outcome(run, targets, outcome)
    rejected = [n.hostname for n in outcome.rejected]
    if outcome.cluster_accepted:
        to, reason = ValidationRunStatus.PASSED, _("Every node and the cluster passed.")
    else:
        to = ValidationRunStatus.FAILED
        reason = (
            _("Rejected: %(nodes)s.") % {"nodes": ", ".join(rejected)}
            if rejected
            else _("The cluster checks failed.")
        )
    run = lifecycle.transition(
        run,
        to=to,
        reason=reason,
        updates={"finished_at": timezone.now(), "cluster_accepted": outcome.cluster_accepted},
    )
    if run.order_id is not None:
        for language, _name in settings.LANGUAGES:
            ACCEPTANCE_REPORT.ask(run, language=language)
    return run
