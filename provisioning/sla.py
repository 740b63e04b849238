"""The facts behind automatic SLA credits, gathered in the provisioning layer (billing
never reads provisioning): per slot of the order's cluster, the outages of the nodes that
filled it, as ``billing.sla.NodeFacts``; ``sla_credits_gather_and_record`` hands them to
``billing.services.sla.sla_credits_record``; ``sla_credits_sweep`` does it for every
delivered order (beat: the task ``provisioning.tasks.sla_credits_sweep_task``).

- the order's delivery: the provisioning run's delivery past the order's start is late
  delivery for every slot;
- each node's event history while it filled the slot: faulty and maintenance intervals
  (maintenance inside a ``MaintenanceWindow`` is excluded when its plan was announced at
  least 72 hours ahead; a window without an announced plan counts; customer-favourable);
- maintenance plans over an active booking (override with a reason): the window is
  unplanned maintenance, downtime while the node filled the slot (``maintenance_facts``);
- swaps: from the failure until the spare was delivered (or the recorded hours lost);
- re-validations of the in-service node: a failed one until the next passing one; a
  passing one whose measurement is more than the rule's margin below the acceptance
  run's measurement of the same metric (``billing.sla.is_degraded``) until the next one
  that is not.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils import timezone

from billing.credits.sla import sla_credits_record
from billing.models import Order, OrderStatus
from billing.pricing.sla import NodeFacts, Outage, PlannedWindow, is_degraded
from inventory.models import MaintenanceWindow, Node, NodeEvent, NodeStatus
from provisioning.models import (
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunStatus,
    ValidationNodeResult,
    ValidationRule,
)

DOWN_STATUSES = {NodeStatus.FAULTY: "faulty", NodeStatus.MAINTENANCE: "maintenance"}
DEFAULT_MARGIN = Decimal("0.10")
SLA_ORDER_STATUSES = (OrderStatus.READY, OrderStatus.ENDED)


def _status_outages(node: Node, start: datetime, end: datetime) -> list[Outage]:
    events = list(
        NodeEvent.objects.filter(node=node, created_at__lt=end).order_by("created_at", "pk")
    )
    out: list[Outage] = []
    for i, event in enumerate(events):
        kind = DOWN_STATUSES.get(event.to_status)
        if kind is None:
            continue
        until = events[i + 1].created_at if i + 1 < len(events) else end
        a, b = max(event.created_at, start), min(until, end)
        if a < b:
            out.append(Outage(kind, a, b, f"node event {event.pk}: {event.reason[:80]}"))
    return out


def _measured(result: ValidationNodeResult) -> dict[str, Decimal]:
    values: dict[str, Decimal] = {}
    for row in result.rule_results or []:
        try:
            values[str(row["metric"])] = Decimal(str(row["measured"]))
        except (KeyError, TypeError, InvalidOperation, ValueError):
            continue
    return values


def _margin(metric: str, gpu_model: str) -> Decimal:
    name = metric.split("@", 1)[0]
    rule = (
        ValidationRule.objects.filter(metric=name, gpu_model=gpu_model, min_variance__isnull=False)
        .values_list("min_variance", flat=True)
        .first()
    )
    return abs(rule) if rule is not None else DEFAULT_MARGIN


def _validation_outages(
    node: Node, start: datetime, end: datetime, baseline: dict[str, Decimal]
) -> list[Outage]:
    results = list(
        ValidationNodeResult.objects.filter(
            node=node, run__finished_at__gte=start, run__finished_at__lt=end
        )
        .select_related("run")
        .order_by("run__finished_at", "pk")
    )
    out: list[Outage] = []
    for i, result in enumerate(results):
        until = results[i + 1].run.finished_at if i + 1 < len(results) else end
        at = result.run.finished_at
        if not result.accepted:
            out.append(Outage("validation_failed", at, until, f"validation run {result.run_id}"))
            continue
        for metric, value in _measured(result).items():
            base = baseline.get(metric)
            margin = _margin(metric, result.gpu_model)
            if base is not None and is_degraded(baseline=base, measured=value, margin=margin):
                out.append(
                    Outage(
                        "degraded",
                        at,
                        until,
                        f"validation run {result.run_id}: {metric} {value} < {base} − {margin:%}",
                    )
                )
                break
    return out


def order_sla_facts(order: Order) -> list[tuple[str, NodeFacts]]:
    """(node type code, facts) per slot of the order's cluster."""
    run = (
        ProvisioningRun.objects.filter(order=order, kind=RunKind.PROVISION)
        .exclude(status=RunStatus.CANCELLED)
        .order_by("created_at", "pk")
        .first()
    )
    if run is None:
        return []
    delivered = run.finished_at if run.status == RunStatus.DELIVERED else None
    late_until = min(delivered or timezone.now(), order.end_at)
    swaps = list(NodeSwap.objects.filter(order=order).order_by("failed_at", "pk"))
    slots: dict[int, list[RunNode]] = {}
    for run_node in RunNode.objects.filter(run=run).select_related("node__node_type"):
        slots.setdefault(run_node.slot, []).append(run_node)
    accepted = (
        ValidationNodeResult.objects.filter(run__order=order, accepted=True)
        .order_by("run__finished_at", "pk")
        .select_related("run")
    )
    baselines: dict[int, dict[str, Decimal]] = {}
    for result in accepted:
        baselines.setdefault(result.node_id, _measured(result))  # the first: acceptance
    out: list[tuple[str, NodeFacts]] = []
    for _slot, members in sorted(slots.items()):
        outages: list[Outage] = []
        planned: list[PlannedWindow] = []
        if late_until > order.start_at:
            outages.append(
                Outage(
                    "late_delivery",
                    order.start_at,
                    late_until,
                    f"provisioning run {run.pk} delivered "
                    f"{delivered.isoformat() if delivered else '—'}",
                )
            )
        current = None
        for member in members:
            node = member.node
            tenure = _tenure(member, swaps, order)
            if member.state == "active":
                current = member
            for start, end in tenure:
                after = max(start, late_until)
                if after < end:
                    outages += _status_outages(node, after, end)
                    outages += _validation_outages(node, after, end, baselines.get(node.pk, {}))
            for window in MaintenanceWindow.objects.filter(
                node=node, end_at__gt=order.start_at, start_at__lt=order.end_at
            ).select_related("plan"):
                outage, window_planned = maintenance_facts(window, tenure)
                if outage is not None:
                    outages.append(outage)
                if window_planned is not None:
                    planned.append(window_planned)
        for swap in swaps:
            if any(swap.failed_node_id == m.node_id for m in members):
                restored = swap.restored_at or (
                    swap.failed_at + timedelta(hours=float(swap.hours_lost))
                )
                if restored > swap.failed_at:
                    outages.append(
                        Outage(
                            "swap",
                            swap.failed_at,
                            restored,
                            f"swap {swap.pk}: {swap.hours_lost} h lost",
                        )
                    )
        holder = current or members[-1]
        out.append(
            (
                holder.node.node_type.code,
                NodeFacts(
                    node_ref=holder.node.hostname, outages=tuple(outages), planned=tuple(planned)
                ),
            )
        )
    return out


def maintenance_facts(
    window: MaintenanceWindow, tenure: list[tuple[Any, Any]]
) -> tuple[Outage | None, PlannedWindow | None]:
    """What one maintenance window is for the SLA (contract §7.1–7.2).

    A window whose plan worked over an active booking by override is unplanned
    maintenance: downtime for the node while it filled the slot, whatever its notice and
    the node's status. Any other window is planned maintenance, excluded when its plan was
    announced at least 72 hours before it started (``announced_at``; a window without a
    plan, or not announced, is not known to be announced and counts)."""
    plan = window.plan
    if plan is not None and plan.unplanned:
        for start, end in tenure:
            a, b = max(start, window.start_at), min(end, window.end_at)
            if a < b:
                return (
                    Outage(
                        "maintenance",
                        a,
                        b,
                        f"maintenance plan {plan.pk} over the booking: {plan.override_reason[:80]}",
                    ),
                    None,
                )
        return None, None
    announced = plan.announced_at if plan is not None else None
    return None, PlannedWindow(window.start_at, window.end_at, announced_at=announced)


def _tenure(member: RunNode, swaps: list[NodeSwap], order: Order) -> list[tuple[Any, Any]]:
    """When ``member``'s node filled its slot: from the order's start (or when it came in
    as a spare) until it was swapped out (or the order's end)."""
    start, end = order.start_at, order.end_at
    for swap in swaps:
        if swap.spare_node_id == member.node_id:
            start = max(start, swap.restored_at or swap.failed_at)
        if swap.failed_node_id == member.node_id:
            end = min(end, swap.failed_at)
    return [(start, end)] if start < end else []


def sla_credits_gather_and_record(*, order_id: int, now: datetime | None = None) -> int:
    """Gather the order's facts and let billing compute the credits of ended periods
    (once per node and period). Returns how many credits were created."""
    order = Order.objects.select_related("site").get(pk=order_id)
    if order.status not in SLA_ORDER_STATUSES:
        return 0
    return len(sla_credits_record(order=order, facts=order_sla_facts(order), now=now))


def sla_credits_sweep(*, now: datetime | None = None) -> int:
    """Beat: every delivered order whose billing period ended gets its credits computed."""
    now = now or timezone.now()
    total = 0
    for order_id in Order.objects.filter(
        status__in=SLA_ORDER_STATUSES, start_at__lt=now - timedelta(days=1)
    ).values_list("pk", flat=True):
        total += sla_credits_gather_and_record(order_id=order_id, now=now)
    return total
