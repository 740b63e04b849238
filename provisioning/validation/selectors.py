"""Reads for validation: idle nodes, rules from the database, an order's reports."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Exists, F, OuterRef, QuerySet
from django.utils import timezone

from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    MaintenanceWindow,
    Node,
    NodeStatus,
    NodeType,
    Reservation,
)
from provisioning.models import (
    ValidationArtifact,
    ValidationCheck,
    ValidationNodeResult,
    ValidationRule,
    ValidationRun,
    ValidationRunStatus,
)
from provisioning.validation.rules import Rule


def _booking_window(now: datetime | None) -> tuple[datetime, datetime]:
    start = now or timezone.now()
    margin = timedelta(minutes=settings.VALIDATION_IDLE_BOOKING_MARGIN_MINUTES)
    return start, start + margin


def booked_now(*, now: datetime | None = None) -> Exists:
    """A node has an active reservation (hold or firm) now or within the margin (a quick
    check must be over before the customer's booking starts)."""
    start, end = _booking_window(now)
    return Exists(
        Reservation.objects.filter(
            node=OuterRef("pk"),
            status__in=ACTIVE_RESERVATION_STATUSES,
            held_from__lt=end,  # held: its lead time and cleaning count as booked
            held_until__gt=start,
        )
    )


def in_maintenance_window(*, now: datetime | None = None) -> Exists:
    start, end = _booking_window(now)
    return Exists(
        MaintenanceWindow.objects.filter(node=OuterRef("pk"), start_at__lt=end, end_at__gt=start)
    )


def validation_in_flight() -> Exists:
    return Exists(
        ValidationRun.objects.filter(
            nodes=OuterRef("pk"),
            status__in=(ValidationRunStatus.PENDING, ValidationRunStatus.RUNNING),
        )
    )


def idle_nodes(*, now: datetime | None = None) -> QuerySet[Node]:
    """Available nodes with no booking now (nor within the margin), no maintenance window
    and no validation already pending or running."""
    return (
        Node.objects.filter(status=NodeStatus.AVAILABLE)
        .exclude(booked_now(now=now))
        .exclude(in_maintenance_window(now=now))
        .exclude(validation_in_flight())
        .select_related("node_type__gpu_model")
        .order_by("pk")
    )


def node_is_idle(node: Node, *, now: datetime | None = None) -> bool:
    """The node (as stored now) is available and not booked now."""
    return (
        Node.objects.filter(pk=node.pk, status=NodeStatus.AVAILABLE)
        .exclude(booked_now(now=now))
        .exists()
    )


def rules_from_db() -> list[Rule]:
    """The active rules, as the pure rules the evaluation takes."""
    return [r.as_rule() for r in ValidationRule.objects.filter(active=True).order_by("pk")]


def live_checks_of_run(run_id: int) -> dict[int, list[ValidationCheck]]:
    """The agent checks of a provisioning run's validate steps (their current attempt),
    per node, in the agent's order (one query)."""
    checks = ValidationCheck.objects.filter(
        step__run_id=run_id, step__name="validate", attempt=F("step__attempt")
    ).order_by("node_id", "position", "pk")
    by_node: dict[int, list[ValidationCheck]] = {}
    for check in checks:
        by_node.setdefault(check.node_id, []).append(check)
    return by_node


def passed_runs_for_order(order_id: int) -> list[ValidationRun]:
    """An order's passed validation runs, newest first (one query)."""
    return list(
        ValidationRun.objects.filter(order_id=order_id, status=ValidationRunStatus.PASSED)
        .order_by("-created_at", "-pk")
        .prefetch_related("results")  # one archive of raw outputs per node
    )


def rejected_results_for_order(order_id: int) -> list[tuple[int, datetime, list[Any]]]:
    """(node id, when, reasons) of every node rejected by a validation run of the order,
    oldest first (one query)."""
    return list(
        ValidationNodeResult.objects.filter(run__order_id=order_id, accepted=False)
        .order_by("created_at", "pk")
        .values_list("node_id", "created_at", "reasons")
    )


def node_type_by_code(code: str) -> NodeType | None:
    """A node type with its GPU model, by its code (the judge's ``--node-type``)."""
    return NodeType.objects.select_related("gpu_model").filter(code=code).first()


def node_artifacts(run: ValidationRun, node_id: int) -> list[ValidationArtifact]:
    """One node's stored raw outputs in a run, in the order they were stored."""
    return list(ValidationArtifact.objects.filter(run=run, node_id=node_id).order_by("pk"))
