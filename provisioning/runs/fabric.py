"""The order's fabric isolation: its partition key or VLAN, allocated once and released
when its nodes are cleaned."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from billing.models import Order
from inventory.models import Node
from provisioning.drivers.base import DriverError
from provisioning.drivers.fabric import FabricKey, FabricKind, KeyKind, SimulatedFabricManager
from provisioning.models import FabricAllocation


def fabric_allocate(*, order: Order, hostnames: list[str]) -> FabricAllocation:
    """The order's partition key / VLAN: the lowest free one; the same one when asked
    again. The partial unique constraint is what keeps two orders from sharing one."""
    existing = FabricAllocation.objects.filter(order=order, released_at__isnull=True).first()
    if existing is not None:
        return existing
    first = Node.objects.filter(hostname__in=hostnames).select_related("node_type").first()
    fabric = first.node_type.fabric if first else "ethernet"
    kind = {
        "ib_ndr": FabricKind.IB_NDR400,
        "ib_hdr": FabricKind.IB_HDR200,
        "roce_v2": FabricKind.ROCE_V2,
    }.get(fabric, FabricKind.ETHERNET)
    for _attempt in range(5):
        in_use = [
            FabricKey(KeyKind(k), v)
            for k, v in FabricAllocation.objects.filter(released_at__isnull=True).values_list(
                "kind", "value"
            )
        ]
        key = SimulatedFabricManager(in_use=in_use).allocate(
            order_ref=order.number, fabric_kind=kind, node_hostnames=hostnames
        )
        try:
            with transaction.atomic():
                return FabricAllocation.objects.create(
                    order=order, kind=key.kind.value, value=key.value, fabric=kind.value
                )
        except IntegrityError:
            existing = FabricAllocation.objects.filter(
                order=order, released_at__isnull=True
            ).first()
            if existing is not None:
                return existing
    raise DriverError("could not allocate a fabric key: too much contention")


def fabric_release(*, order: Order) -> int:
    return FabricAllocation.objects.filter(order=order, released_at__isnull=True).update(
        released_at=timezone.now()
    )
