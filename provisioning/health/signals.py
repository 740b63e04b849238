"""A node staff mark faulty while it serves an order takes the replacement path: the
lifecycle's ``written`` signal (every node move sends it) enqueues a check by task name,
in the same transaction (the outbox), so the move and the follow-up commit together. The
task decides (``services.incident_from_staff_fault``); this only notices."""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal
from django.utils import timezone

from core import jobs, lifecycle
from inventory.models import Node, NodeStatus, Reservation, ReservationStatus
from provisioning.models import HealthIncident, IncidentStatus

TASK = "provisioning.tasks.health_node_marked_faulty"
REPAIRED_TASK = "provisioning.tasks.health_node_repaired"

# Day two's events for the layers above (the portal's support desk opens tickets from
# them). Both are sent inside the transaction that writes the row, so a receiver that
# enqueues work (``core.jobs``) commits with it or not at all.
#: ``alert``: a new ``UtilisationAlert`` (an order's GPUs stayed under the threshold).
low_utilisation_raised = Signal()
#: ``incident``: a ``HealthIncident`` of a rented node calls for replacing it (cordoned;
#: replaced now, or waiting for the customer's approval).
replacement_needed = Signal()


def _on_write(sender: type, objs: list[Any], **_kwargs: Any) -> None:
    if sender is not Node:
        return
    faulty = [n.pk for n in objs if getattr(n, "status", None) == NodeStatus.FAULTY]
    if faulty:
        # Only a node serving a rental now has a customer to tell and a booking to move
        # (one query per batch); a faulty idle node is ops' business alone.
        now = timezone.now()
        for node_id in (
            Reservation.objects.filter(
                node_id__in=faulty,
                status=ReservationStatus.FIRM,
                held_from__lte=now,
                held_until__gt=now,
            )
            .values_list("node_id", flat=True)
            .distinct()
        ):
            jobs.enqueue(TASK, node_id)
    available = [n.pk for n in objs if getattr(n, "status", None) == NodeStatus.AVAILABLE]
    if available:
        # Repaired while its order still holds it (no spare was free, or the customer
        # has not answered "ask me first" yet): back to its customer. One query per batch
        # of moves; nothing for the usual releases.
        for node_id in HealthIncident.objects.filter(
            node_id__in=available,
            status__in=(IncidentStatus.NO_SPARE, IncidentStatus.AWAITING),
        ).values_list("node_id", flat=True):
            jobs.enqueue(REPAIRED_TASK, node_id)


def connect() -> None:
    lifecycle.written.connect(_on_write, dispatch_uid="health-staff-faulty")
