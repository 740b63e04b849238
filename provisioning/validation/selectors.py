"""Reads for validation: idle nodes, rules from the database, an order's reports."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    MaintenanceWindow,
    Node,
    NodeStatus,
    Reservation,
)
from provisioning.models import (
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


def passed_runs_for_order(order_id: int) -> list[ValidationRun]:
    """An order's passed validation runs, newest first (one query)."""
    return list(
        ValidationRun.objects.filter(order_id=order_id, status=ValidationRunStatus.PASSED).order_by(
            "-created_at", "-pk"
        )
    )


def rejected_results_for_order(order_id: int) -> list[tuple[int, datetime, list[Any]]]:
    """(node id, when, reasons) of every node rejected by a validation run of the order,
    oldest first (one query)."""
    return list(
        ValidationNodeResult.objects.filter(run__order_id=order_id, accepted=False)
        .order_by("created_at", "pk")
        .values_list("node_id", "created_at", "reasons")
    )
