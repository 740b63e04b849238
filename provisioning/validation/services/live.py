"""Each check as it finishes: the agent's lines written to ``ValidationCheck`` rows as
they arrive (the staff run page polls them)."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from django.db import connection
from django.utils import timezone

from provisioning.models import (
    LiveCheckStatus,
    NodeStep,
    ValidationCheck,
    ValidationRun,
)
from provisioning.validation.interface import (
    CheckEvent,
    Progress,
)


def live_checks_recorder(
    *, steps: Sequence[NodeStep] = (), validation_run: ValidationRun | None = None
) -> Progress:
    """``validate_nodes(progress=…)``: writes each agent line to ``ValidationCheck`` rows
    as it arrives (the staff run page polls them): for the validate ``steps`` of a
    provisioning run (their current attempt) or for a stand-alone ``validation_run``.
    When the agent is gone, a check still waiting or running did not finish (failed).
    Autocommitted outside any transaction, so the page sees a check the moment it
    finished. The SSH runner calls it from its threads (one per node): a call from
    another thread than the one that made the recorder closes that thread's connection."""
    owner = threading.get_ident()
    step_of = {s.node_id: (s.pk, s.attempt) for s in steps}

    def key(node_id: int) -> dict[str, Any] | None:
        if validation_run is not None:
            return {"validation_run_id": validation_run.pk, "node_id": node_id}
        if node_id not in step_of:
            return None
        step_id, attempt = step_of[node_id]
        return {"step_id": step_id, "attempt": attempt, "node_id": node_id}

    def write(event: CheckEvent) -> None:
        where = key(event.target.node_id)
        if where is None:
            return
        now = timezone.now()
        if event.kind == "planned":  # a fresh agent: what an earlier one left goes
            ValidationCheck.objects.filter(**where).delete()
            ValidationCheck.objects.bulk_create(
                [ValidationCheck(**where, name=n, position=i) for i, n in enumerate(event.planned)]
            )
        elif event.kind == "started":
            ValidationCheck.objects.update_or_create(
                **where,
                name=event.name,
                defaults={"status": LiveCheckStatus.RUNNING, "started_at": now},
            )
        elif event.kind == "finished":
            status = event.status if event.status in LiveCheckStatus.values else "failed"
            ValidationCheck.objects.update_or_create(
                **where,
                name=event.name,
                defaults={
                    "status": status,
                    "verdict": event.verdict,
                    "finished_at": now,
                    "duration_s": None
                    if event.duration_s is None
                    else Decimal(str(round(event.duration_s, 3))),
                    "raw_sha256": event.raw_sha256[:64],
                    "metrics": json.loads(json.dumps(dict(event.metrics), default=str)),
                    "reasons": list(event.reasons),
                },
            )

        elif event.kind == "ended":
            for check in ValidationCheck.objects.filter(
                **where, status__in=(LiveCheckStatus.PLANNED, LiveCheckStatus.RUNNING)
            ):
                check.status = LiveCheckStatus.UNFINISHED
                check.verdict = "failed"
                check.finished_at = now
                check.reasons = [
                    {
                        "code": "check_not_finished",
                        "params": {"check": check.name},
                        "text": f"check {check.name} did not finish",
                    }
                ]
                check.save(update_fields=["status", "verdict", "finished_at", "reasons"])

    def record(event: CheckEvent) -> None:
        try:
            write(event)
        finally:
            if threading.get_ident() != owner:
                connection.close()

    return record
