"""The simulated nodes' exporters: the pure ``exposition`` fed from the inventory (a node
in service runs its customer's workload, any other idles) and the faults injected on it
(``SimulatedFault``: tests, demos and ops add them in the admin or with
``manage.py telemetry_fault``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from core.errors import DomainError
from inventory.models import Node, NodeStatus
from provisioning.models import SimulatedFault
from provisioning.telemetry.exposition import FAULT_KINDS, Fault, NodeShape, simulated_exposition

BUSY_STATUSES = (NodeStatus.IN_SERVICE,)


def node_shape(node: Node) -> NodeShape:
    node_type = node.node_type
    gpu = node_type.gpu_model
    return NodeShape(
        hostname=node.hostname,
        gpu_count=node_type.gpu_count or node_type.max_optional_gpus or 0,
        gpu_model=f"NVIDIA {gpu.name}" if gpu else "NVIDIA GPU",
        memory_mib=(gpu.memory_gb * 1024 - 421) if gpu else 24000,
        tdp_w=700.0 if gpu and "H100" in gpu.name else 400.0,
        nic_count=node_type.nic_count,
        nic_gbps=node_type.nic_speed_gbps,
        nvlink=bool(gpu and gpu.nvlink_generation),
    )


def node_exposition(node: Node, *, now: datetime | None = None) -> str | None:
    now = now or timezone.now()
    faults = [
        Fault(
            kind=f.kind,
            start=f.start_at.timestamp(),
            end=f.end_at.timestamp() if f.end_at else None,
            gpu=f.gpu,
            value=f.value,
        )
        for f in SimulatedFault.objects.filter(node=node, start_at__lte=now)
    ]
    return simulated_exposition(
        node_shape(node),
        at=now.timestamp(),
        busy=node.status in BUSY_STATUSES,
        faults=faults,
    )


def fault_inject(
    *,
    node: Node,
    kind: str,
    gpu: int | None = None,
    value: float = 0.0,
    start_at: datetime | None = None,
    seconds: float | None = None,
) -> SimulatedFault:
    """A fault on a simulated node from ``start_at`` (now) for ``seconds`` (until cleared)."""
    if kind not in FAULT_KINDS:
        raise DomainError(f"unknown fault {kind!r}: one of {', '.join(FAULT_KINDS)}")
    start = start_at or timezone.now()
    end = start + timedelta(seconds=seconds) if seconds is not None else None
    with transaction.atomic():
        return SimulatedFault.objects.create(
            node=node, kind=kind, gpu=gpu, value=value, start_at=start, end_at=end
        )


def faults_clear(*, node: Node) -> int:
    """End every open fault of the node now (counters keep what they counted)."""
    return SimulatedFault.objects.filter(node=node, end_at__isnull=True).update(
        end_at=timezone.now()
    )
