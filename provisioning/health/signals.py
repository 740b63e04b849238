"""A node staff mark faulty while it serves an order takes the replacement path: the
lifecycle's ``written`` signal (every node move sends it) enqueues a check by task name,
in the same transaction (the outbox), so the move and the follow-up commit together. The
task decides (``services.incident_from_staff_fault``); this only notices."""

from __future__ import annotations

from typing import Any

from core import jobs, lifecycle
from inventory.models import Node, NodeStatus

TASK = "provisioning.tasks.health_node_marked_faulty"


def _on_write(sender: type, objs: list[Any], **_kwargs: Any) -> None:
    if sender is not Node:
        return
    for node in objs:
        if getattr(node, "status", None) == NodeStatus.FAULTY:
            jobs.enqueue(TASK, node.pk)


def connect() -> None:
    lifecycle.written.connect(_on_write, dispatch_uid="health-staff-faulty")
