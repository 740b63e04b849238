"""Reads of day two for the pages: an order's incidents with their evidence, its
replacement policy, its delivery kit; the staff lists (spare pools, alerts)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext

from billing.models import Order, OrderStatus
from inventory import selectors as inventory_selectors
from inventory.models import Switch
from provisioning import delivery_kit
from provisioning.health.rules import RULES_BY_CODE
from provisioning.health.services import STAFF_FAULT_RULE, incident_evidence, policy_for
from provisioning.models import (
    HealthIncident,
    IncidentStatus,
    NodeStep,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
    SparePool,
    StepName,
    StepStatus,
    UtilisationAlert,
)


@dataclass
class IncidentView:
    incident: HealthIncident
    title: str
    evidence: str
    source: str
    events: list[Any]


def rule_title(code: str) -> str:
    if code == STAFF_FAULT_RULE:
        return gettext("Marked faulty by our staff")
    rule = RULES_BY_CODE.get(code)
    return gettext(rule.title) if rule else code


def order_incidents(order: Order) -> list[IncidentView]:
    rows = (
        HealthIncident.objects.filter(order=order)
        .select_related("node", "swap__spare_node")
        .prefetch_related("events")
        .order_by("-detected_at", "-pk")[:50]
    )
    return [
        IncidentView(
            incident=i,
            title=rule_title(i.rule),
            evidence=incident_evidence(i),
            source=RULES_BY_CODE[i.rule].source if i.rule in RULES_BY_CODE else "",
            events=list(i.events.all()),
        )
        for i in rows
    ]


def order_delivery_kit(order: Order) -> delivery_kit.Kit | None:
    """The kit from the order's current slots (after a swap it names the spare), once the
    order's cluster was delivered."""
    slots = list(
        RunNode.objects.filter(
            run__order=order,
            run__kind=RunKind.PROVISION,
            run__status=RunStatus.DELIVERED,
            state=RunNodeState.ACTIVE,
        )
        .select_related("node__leaf_switch", "node__rack", "node__node_type__gpu_model")
        .order_by("slot")
    )
    if not slots:
        return None
    leaf_ids = {rn.node.leaf_switch_id for rn in slots}
    spines: dict[int, tuple[str, ...]] = {}
    for leaf in Switch.objects.filter(pk__in=leaf_ids).prefetch_related("uplinks"):
        spines[leaf.pk] = tuple(sorted(s.name for s in leaf.uplinks.all()))
    nodes = [
        delivery_kit.KitNode(
            hostname=rn.node.hostname,
            address=(rn.addresses or [""])[0] if rn.addresses else (rn.node.ip_address or ""),
            gpus=rn.node.node_type.gpu_count or 1,
            leaf=rn.node.leaf_switch.name,
            spine=spines.get(rn.node.leaf_switch_id, ()),
            scalable_unit=rn.node.leaf_switch.scalable_unit,
            rack=rn.node.rack.name,
        )
        for rn in slots
    ]
    node_type = slots[0].node.node_type
    gpu = node_type.gpu_model
    return delivery_kit.build(
        nodes,
        fabric=node_type.fabric,
        nic_count=node_type.nic_count,
        site=order.site.code,
        gpu_product=(gpu.name if gpu else "none").replace(" ", "-"),
    )


DAY2_ORDER_STATUSES = (OrderStatus.READY, OrderStatus.ENDED)


def order_day2(order: Order) -> dict[str, Any]:
    """The order page's day-two section (no query before the cluster is delivered)."""
    if order.status not in DAY2_ORDER_STATUSES:
        return {"day2_policy": None, "day2_incidents": [], "day2_waiting": [], "day2_kit": None}
    incidents = order_incidents(order)
    return {
        "day2_policy": policy_for(order),
        "day2_incidents": incidents,
        "day2_waiting": [v for v in incidents if v.incident.status == IncidentStatus.AWAITING],
        "day2_kit": order_delivery_kit(order),
    }


def spare_pools() -> list[dict[str, Any]]:
    """Per site and node type: the target and the free nodes now (staff)."""
    free = inventory_selectors.free_counts_now()  # bookable now: not under a booking
    return [
        {"pool": p, "free": free.get((p.site_id, p.node_type_id), 0)}
        for p in SparePool.objects.select_related("site", "node_type")
    ]


def replacement_simulated_seconds(incident: HealthIncident, *, time_scale: float) -> float | None:
    """Fault to hand-over on the simulated clock: the real time it took, with each driver
    step's real (scaled) duration replaced by the hardware time it stands for. ``None``
    until handed over. Detection, queueing, validation and hand-over count as they ran."""
    if incident.handed_over_at is None or incident.replacement_run_id is None:
        return None
    total = (incident.handed_over_at - incident.observed_at).total_seconds()
    if time_scale <= 0:
        return total
    for step in NodeStep.objects.filter(run_id=incident.replacement_run_id).exclude(
        name=StepName.VALIDATE
    ):
        if step.started_at and step.finished_at and step.status == StepStatus.DONE:
            real = (step.finished_at - step.started_at).total_seconds()
            total += step.expected_s - real
    return total


def order_latest_alert(order: Order) -> UtilisationAlert | None:
    """The order's low-utilisation alert of the last day (open or answered), for its
    monitoring panel."""
    return (
        UtilisationAlert.objects.filter(
            order=order, raised_at__gt=timezone.now() - timedelta(days=1)
        )
        .order_by("-raised_at")
        .first()
    )
