"""Powering a suspended order's nodes off, and on again when it resumes.

Billing suspends an order whose invoice is unpaid (``billing.dunning.services``) and
enqueues ``provisioning.tasks.order_power_sync`` by name. This service reads the order's
state then, not the message: an order with an open suspension has its nodes powered off,
a resumed order (still delivered) has them powered on. So the task is safe to run twice
and in any order, a late "off" never undoes a resumption.

Only power: nothing is wiped, no image reinstalled, no reservation released, no node
status changed. Only the nodes booked for this order are touched; another order's nodes
are never looked at. Each node whose power changed gets a note in its history.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from billing.models import Order, OrderStatus, Suspension, SuspensionStatus
from billing.orders.selectors import order_nodes
from core import lifecycle
from core.texts import Text
from inventory.models import Node
from provisioning.drivers.base import DriverError, HardwareDriver, TransientDriverError
from provisioning.models import ProvisioningRun, RunKind
from provisioning.runs.drivers import driver_for

logger = logging.getLogger(__name__)


@dataclass
class PowerSync:
    target: str  # "off", "on" or "" (nothing to do)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    transient: bool = False


def node_driver(order: Order, node: Node) -> HardwareDriver | None:
    """The node's driver, in the state the order's provisioning run left it; ``None``
    when the order was never provisioned (its nodes never ran for it)."""
    run = (
        ProvisioningRun.objects.filter(order=order, kind=RunKind.PROVISION)
        .order_by("-created_at", "-pk")
        .first()
    )
    if run is None:
        return None
    return driver_for(run, node)


def order_power_target(order: Order) -> str:
    if Suspension.objects.filter(order=order, status=SuspensionStatus.SUSPENDED).exists():
        return "off"
    if order.status == OrderStatus.READY:
        return "on"
    return ""  # not delivered, or ended: the run or the cleaning owns its power


def order_power_sync(*, order_id: int) -> PowerSync:
    """Power the order's nodes to match its suspension state (see the module docstring)."""
    order = Order.objects.get(pk=order_id)
    result = PowerSync(target=order_power_target(order))
    if not result.target:
        return result
    if result.target == "off":
        note = Text(
            "Powered off: order %(n)s is suspended for an unpaid invoice (no data deleted).",
            n=order.number,
        )
    else:
        note = Text("Powered on: order %(n)s is resumed.", n=order.number)
    for node in order_nodes(order):
        try:
            driver = node_driver(order, node)
            if driver is None:
                result.unchanged.append(node.hostname)
                continue
            if driver.power_state() == result.target:
                result.unchanged.append(node.hostname)
                continue
            if result.target == "off":
                driver.power_off()
            else:
                driver.power_on()
        except DriverError as exc:
            result.failed[node.hostname] = exc.message
            result.transient = result.transient or isinstance(exc, TransientDriverError)
            logger.warning("Power %s of %s failed: %s", result.target, node.hostname, exc)
            continue
        result.changed.append(node.hostname)
        lifecycle.record_note([node], reason=note)
    if result.failed and not result.transient:
        lifecycle.record_note(
            [order],
            reason=Text(
                "Powering %(target)s failed for %(nodes)s: staff act by hand.",
                target=result.target,
                nodes="; ".join(f"{h}: {m}" for h, m in sorted(result.failed.items())),
            ),
        )
    return result
