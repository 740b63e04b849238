"""Every write of day two: health incidents from the rules, and what each calls for.

- ``health_evaluate``: each rule's PromQL against Prometheus; a firing (node, rule) with
  no open incident opens one with the evidence (metric, value, time) and acts:
  notify → the customer is told; re-validate → a quick validation run on the node (its
  failure escalates to replace); replace → cordon and replace (below).
- Replacement of a node of a delivered order (``incident_act_replace``): the node is
  cordoned and the customer told with the evidence; with "ask me first" it waits for the
  customer's approval or the deadline; then ``replacement_start`` chooses a spare of the
  same type (same leaf, then the cluster's leaves, then the rack; the booking constraint
  decides), moves the rest of the booking onto it, marks the failed node faulty with the
  evidence and starts a replacement run (the provisioning steps and the quick validation
  profile); ``replacement_handover`` puts the spare into the order's slot with its access
  details and tells the customer. Each step is a row the SLA facts read: the node's
  faulty event, the ``NodeSwap`` (failed at the fault's time, restored at hand-over,
  hours lost) and the incident's events.
- Several faults of one order are healed at once: each incident gets its own spare and
  its own replacement run (the spares chosen one at a time under
  ``inventory.services.placement_lock``, the reservations' exclusion constraint the last
  word, so two never take the same node), provisioned and validated in parallel, each
  handed over as it passes; the delivery kit is computed from the order's slots, so it
  names every spare handed over so far.
- ``health_sweep``: deadlines of "ask me first", re-validation outcomes, incidents still
  waiting for a spare.
- A node staff mark faulty while it serves an order takes the same path
  (``incident_from_staff_fault``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.webhooks import emit_event
from billing.models import Order, OrderStatus
from core import jobs, lifecycle
from core.errors import DomainError
from core.types import Actor, actor_or_none
from inventory import services as inventory_services
from inventory.models import ACTIVE_RESERVATION_STATUSES, Node, NodeStatus, Reservation
from provisioning.health.rules import RULES, HealthRule
from provisioning.health.signals import replacement_needed
from provisioning.models import (
    OPEN_INCIDENT_STATUSES,
    HealthAction,
    HealthIncident,
    IncidentStatus,
    NodeSwap,
    ProvisioningRun,
    ReplacementMode,
    ReplacementPolicy,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
    ValidationProfile,
    ValidationRun,
    ValidationRunStatus,
    ValidationTrigger,
)
from provisioning.runs import run_create, run_start, spare_candidates
from provisioning.runs.spares import choose_spare
from provisioning.telemetry import prometheus
from provisioning.validation.services import validation_run_create

logger = logging.getLogger(__name__)

EMAIL_TASK = "provisioning.tasks.health_incident_email"
STAFF_FAULT_RULE = "staff_faulty"


# --- where a node serves ---------------------------------------------------------------


def serving_slot(node: Node) -> RunNode | None:
    """The node's active slot in the delivered provisioning run of a ready order."""
    return (
        RunNode.objects.select_related("run__order")
        .filter(
            node=node,
            state=RunNodeState.ACTIVE,
            run__kind=RunKind.PROVISION,
            run__status=RunStatus.DELIVERED,
            run__order__status=OrderStatus.READY,
        )
        .first()
    )


def policy_for(order: Order) -> ReplacementPolicy:
    policy = ReplacementPolicy.objects.filter(order=order).first()
    return policy or ReplacementPolicy(order=order)


def policy_set(*, order: Order, mode: str, ask_minutes: int, actor: Actor) -> ReplacementPolicy:
    if mode not in ReplacementMode.values:
        raise DomainError(_("Choose automatic replacement or “ask me first”."))
    if not 5 <= ask_minutes <= 24 * 60:
        raise DomainError(_("The deadline must be between 5 minutes and 24 hours."))
    policy, _created = ReplacementPolicy.objects.update_or_create(
        order=order,
        defaults={
            "mode": mode,
            "ask_minutes": ask_minutes,
            "updated_by": actor_or_none(actor),
        },
    )
    return policy


# --- evaluation --------------------------------------------------------------------------


def _evidence_text(incident: HealthIncident) -> str:
    gpu = f" GPU {incident.gpu}" if incident.gpu else ""
    return _("%(metric)s = %(value)s on %(node)s%(gpu)s at %(time)s") % {
        "metric": incident.metric,
        "value": f"{incident.value:g}",
        "node": incident.node.hostname,
        "gpu": gpu,
        "time": incident.observed_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def incident_evidence(incident: HealthIncident) -> str:
    return _evidence_text(incident)


# The customer's webhooks (``accounts.webhooks.EVENT_TYPES``) for a node serving their
# order: degraded (a notify or re-validate rule fired), cordoned (a replace-class fault:
# the node takes no more work; with "ask me first" the body carries the deadline) and
# replaced (the spare handed over). Once per incident and kind (``dedupe``).
NODE_DEGRADED = "node.degraded"
NODE_CORDONED = "node.cordoned"
NODE_REPLACED = "node.replaced"


def incident_webhook_data(incident: HealthIncident) -> dict[str, object]:
    """The body's ``data`` of a node event (documented in the README's API section)."""
    order = incident.order
    number = order.number if order is not None else ""
    return {
        "order": number,
        "node": incident.node.hostname,
        "incident": incident.pk,
        "rule": incident.rule,
        "action": incident.action,
        "status": incident.status,
        "metric": incident.metric,
        "value": incident.value,
        "gpu": incident.gpu,
        "observed_at": incident.observed_at.isoformat(),
        "evidence": _evidence_text(incident),
        "url": f"/api/v1/orders/{number}/",
    }


def _webhook(incident: HealthIncident, event_type: str, **extra: object) -> None:
    """Emit ``event_type`` to the order's organisation (inside the caller's transaction)."""
    if incident.order_id is None:
        return
    order = incident.order
    assert order is not None
    emit_event(
        order.organisation_id,
        event_type,
        {**incident_webhook_data(incident), **extra},
        dedupe=f"{event_type}:{incident.pk}",
    )


def incident_open(
    *,
    node: Node,
    rule: str,
    action: str,
    metric: str,
    value: float,
    observed_at: datetime,
    gpu: str = "",
    actor: Actor = None,
) -> HealthIncident | None:
    """A new incident, unless the node already has an open one for that rule (``None``)."""
    slot = serving_slot(node)
    try:
        with transaction.atomic():
            incident = HealthIncident.objects.create(
                order=slot.run.order if slot else None,
                node=node,
                rule=rule,
                action=action,
                metric=metric,
                value=value,
                gpu=gpu,
                observed_at=observed_at,
            )
            lifecycle.record_creation(
                [incident],
                actor=actor,
                reason=_("Detected: %(e)s") % {"e": _evidence_text(incident)},
            )
    except IntegrityError:
        return None
    return incident


def _firing(rule: HealthRule, *, selector: str) -> list[prometheus.Sample]:
    return prometheus.query(
        rule.query(selector=selector, scrape_s=settings.PORTAL_PROMETHEUS_SCRAPE_INTERVAL_S)
    )


def health_evaluate(*, rules: Iterable[HealthRule] = RULES) -> list[HealthIncident]:
    """One evaluation of every rule over every scraped node; returns the new incidents.
    Raises ``PrometheusUnavailable`` when Prometheus does not answer (fail closed: nothing
    is concluded from missing data, and the error is in the worker's log)."""
    nodes = {
        n.hostname: n
        for n in Node.objects.exclude(status=NodeStatus.RETIRED).select_related("node_type")
    }
    if not nodes:
        return []
    selector = 'node=~".+"'
    opened: list[HealthIncident] = []
    for rule in rules:
        for sample in _firing(rule, selector=selector):
            node = nodes.get(sample.labels.get("node", ""))
            if node is None:
                continue
            if node.status in (NodeStatus.FAULTY, NodeStatus.MAINTENANCE):
                continue  # already out of service: ops have it
            if HealthIncident.objects.filter(node=node, status__in=OPEN_INCIDENT_STATUSES).exists():
                continue  # one story per node at a time
            incident = incident_open(
                node=node,
                rule=rule.code,
                action=rule.action,
                metric=rule.metric,
                value=sample.value,
                gpu=sample.labels.get("gpu", ""),
                observed_at=datetime.fromtimestamp(sample.at, tz=UTC),
            )
            if incident is not None:
                opened.append(incident)
                incident_act(incident=incident)
    return opened


# --- acting on an incident ---------------------------------------------------------------


def _move(
    incident: HealthIncident, to: str, reason: str, actor: Actor = None, **updates: object
) -> HealthIncident:
    return lifecycle.transition(
        incident, to=to, actor=actor, reason=reason, updates=updates or None
    )


def incident_act(*, incident: HealthIncident) -> HealthIncident:
    if incident.action == HealthAction.REPLACE:
        return incident_act_replace(incident=incident)
    if incident.action == HealthAction.REVALIDATE:
        return incident_act_revalidate(incident=incident)
    with transaction.atomic():
        incident = _move(incident, IncidentStatus.NOTIFIED, _("The customer is told."))
        if incident.order_id:
            jobs.enqueue(EMAIL_TASK, incident.pk, "notify")
            _webhook(incident, NODE_DEGRADED)
    return incident


def incident_act_revalidate(*, incident: HealthIncident) -> HealthIncident:
    """A quick validation run through validation's own entry point; its verdict is read by
    ``health_sweep`` (failed: the incident escalates to replace)."""
    with transaction.atomic():
        run = validation_run_create(
            nodes=[incident.node],
            profile=ValidationProfile.QUICK,
            trigger=ValidationTrigger.HEALTH,
            order=incident.order,
        )
        incident = _move(
            incident,
            IncidentStatus.REVALIDATING,
            _("Quick validation run %(id)s started.") % {"id": run.pk},
            validation_run_id=run.pk,
        )
        if incident.order_id:
            jobs.enqueue(EMAIL_TASK, incident.pk, "revalidate")
            _webhook(incident, NODE_DEGRADED, validation_run=run.pk)
    return incident


def incident_act_replace(
    *, incident: HealthIncident, now: datetime | None = None
) -> HealthIncident:
    """Cordon and tell; replace now (automatic) or when approved or past the deadline."""
    now = now or timezone.now()
    if incident.order_id is None:
        # An idle node: out of the pool for ops, nobody else to tell.
        with transaction.atomic():
            node = Node.objects.select_for_update().get(pk=incident.node_id)
            if node.status not in (NodeStatus.FAULTY, NodeStatus.RETIRED):
                inventory_services.node_mark_faulty(
                    node=node, reason=_("Health rule: %(e)s") % {"e": _evidence_text(incident)}
                )
            return _move(incident, IncidentStatus.RESOLVED, _("Idle node marked faulty."))
    order = Order.objects.get(pk=incident.order_id)
    policy = policy_for(order)
    if policy.mode == ReplacementMode.ASK:
        with transaction.atomic():
            incident = _move(
                incident,
                IncidentStatus.AWAITING,
                _("Node cordoned; waiting for the customer's approval."),
                decide_by=now + timedelta(minutes=policy.ask_minutes),
            )
            jobs.enqueue(EMAIL_TASK, incident.pk, "ask")
            replacement_needed.send(sender=HealthIncident, incident=incident)
            _webhook(
                incident,
                NODE_CORDONED,
                replacement=ReplacementMode.ASK.value,
                decide_by=incident.decide_by.isoformat() if incident.decide_by else None,
            )
        return incident
    with transaction.atomic():
        jobs.enqueue(EMAIL_TASK, incident.pk, "cordoned")
        replacement_needed.send(sender=HealthIncident, incident=incident)
        _webhook(
            incident, NODE_CORDONED, replacement=ReplacementMode.AUTOMATIC.value, decide_by=None
        )
    return replacement_start(incident=incident)


def incident_approve(*, incident: HealthIncident, actor: Actor) -> HealthIncident:
    """The customer approves the replacement now."""
    if incident.status != IncidentStatus.AWAITING:
        raise DomainError(_("This replacement is not waiting for approval."))
    with transaction.atomic():
        HealthIncident.objects.filter(pk=incident.pk).update(approved_by=actor_or_none(actor))
    return replacement_start(incident=incident, actor=actor)


def replacement_start(
    *, incident: HealthIncident, actor: Actor = None, now: datetime | None = None
) -> HealthIncident:
    """Spare chosen and booked, failed node faulty, replacement run started. When no spare
    is free: ``no_spare`` (ops told; the sweep tries again). Another replacement of the
    same order running does not hold this one up: each incident has its own run.
    Three named steps: ``_replacement_slot`` (may it start now?), ``_spare_book`` (the
    failed node faulty, a spare chosen, the rest of the booking moved onto it) and
    ``_replacement_run_start`` (the swap, the slot and the run)."""
    now = now or timezone.now()
    if incident.order_id is None:
        return incident
    order = Order.objects.get(pk=incident.order_id)
    with transaction.atomic():
        incident = HealthIncident.objects.select_for_update().get(pk=incident.pk)
        incident, slot = _replacement_slot(incident, actor=actor)
        if slot is None:
            return incident
        node = incident.node
        # One spare choice at a time per site and node type (a booking's placement takes
        # the same lock): a second fault's choice waits for the first one's commit and
        # sees its spare taken, instead of losing to it at the exclusion constraint.
        inventory_services.placement_lock(site_id=node.site_id, node_type_ids=[node.node_type_id])
        failed = Node.objects.select_for_update().get(pk=slot.node_id)
        spare = _spare_book(incident, order=order, failed=failed, slot=slot, actor=actor, now=now)
        if spare is None:
            if incident.status != IncidentStatus.NO_SPARE:
                incident = _move(
                    incident, IncidentStatus.NO_SPARE, _("No spare of this type is free."), actor
                )
                jobs.enqueue(EMAIL_TASK, incident.pk, "no_spare")
            return incident
        return _replacement_run_start(
            incident, order=order, failed=failed, spare=spare, slot=slot, actor=actor
        )


REPLACEABLE_STATUSES = (
    IncidentStatus.OPEN,
    IncidentStatus.AWAITING,
    IncidentStatus.REVALIDATING,
    IncidentStatus.REPLACING,
    IncidentStatus.NO_SPARE,
)


def _replacement_slot(
    incident: HealthIncident, *, actor: Actor
) -> tuple[HealthIncident, RunNode | None]:
    """The failed node's slot when its replacement may start now (the incident locked);
    ``None`` when it already has a run, is over or the node no longer serves the order
    (resolved). Other replacements of the order, running or not, change nothing here."""
    if incident.replacement_run_id is not None or incident.status not in REPLACEABLE_STATUSES:
        return incident, None
    slot = serving_slot(incident.node)
    if slot is None and incident.swap is not None and incident.swap.spare_node is not None:
        # Its replacement run failed: the spare it brought fills the slot, replaced next.
        slot = serving_slot(incident.swap.spare_node)
    if slot is None:
        return _move(
            incident, IncidentStatus.RESOLVED, _("The node no longer serves the order."), actor
        ), None
    return incident, slot


def _spare_book(
    incident: HealthIncident,
    *,
    order: Order,
    failed: Node,
    slot: RunNode,
    actor: Actor,
    now: datetime,
) -> Node | None:
    """The failed node goes faulty with the evidence; the best free spare of its type
    (same leaf, then the cluster's leaves, then the rack) takes the rest of its booking.
    ``None`` when no spare is free (or the node holds no booking of the order)."""
    evidence = _evidence_text(incident)
    if failed.status not in (NodeStatus.FAULTY, NodeStatus.RETIRED):
        if failed.pk == incident.node_id:
            why = _("Health rule %(rule)s: %(e)s") % {"rule": incident.rule, "e": evidence}
        else:  # the spare of a replacement run that failed
            why = _("The replacement of %(node)s with this spare failed.") % {
                "node": incident.node.hostname
            }
        inventory_services.node_mark_faulty(node=failed, actor=actor, reason=why)
    group = order.reservation_group
    reservation = (
        Reservation.objects.filter(node=failed, group=group, status__in=ACTIVE_RESERVATION_STATUSES)
        .order_by("start_at")
        .first()
        if group is not None
        else None
    )
    if reservation is None:
        return None
    run_nodes = list(RunNode.objects.filter(run=slot.run).select_related("node"))
    exclude = [rn.node_id for rn in run_nodes] + list(
        RunNode.objects.filter(run__order=order).values_list("node_id", flat=True)
    )
    cluster_leaves = {rn.node.leaf_switch_id for rn in run_nodes if rn.state == RunNodeState.ACTIVE}
    for _attempt in range(3):  # a spare taken meanwhile by another booking: choose again
        spare = choose_spare(
            spare_candidates(
                order=order, failed=failed, exclude=exclude, start_at=max(now, order.start_at)
            ),
            failed_leaf_id=failed.leaf_switch_id,
            failed_rack_id=failed.rack_id,
            cluster_leaf_ids=cluster_leaves,
        )
        if spare is None:
            return None
        spare_node = Node.objects.get(pk=spare.node_id)
        try:
            with transaction.atomic():
                inventory_services.reservation_swap(
                    reservation=reservation,
                    new_node=spare_node,
                    actor=actor,
                    reason=_("%(failed)s replaced by %(spare)s: %(why)s")
                    % {"failed": failed.hostname, "spare": spare_node.hostname, "why": evidence},
                )
        except DomainError:
            exclude.append(spare.node_id)
            continue
        return spare_node
    return None


def _replacement_run_start(
    incident: HealthIncident,
    *,
    order: Order,
    failed: Node,
    spare: Node,
    slot: RunNode,
    actor: Actor,
) -> HealthIncident:
    """The swap (an SLA fact from the fault's time), the spare in the failed node's slot
    and the replacement run (provisioning steps, then the quick validation) started."""
    run = run_create(order=order, kind=RunKind.REPLACE, nodes=[spare])
    swap = NodeSwap.objects.create(
        order=order,
        run=run,
        failed_node=failed,
        spare_node=spare,
        reason=_("Health rule %(rule)s: %(e)s")
        % {"rule": incident.rule, "e": _evidence_text(incident)},
        failed_at=incident.observed_at,
        requested_by=actor_or_none(actor),
    )
    RunNode.objects.filter(pk=slot.pk).update(state=RunNodeState.SWAPPED_OUT)
    RunNode.objects.create(run=slot.run, node=spare, slot=slot.slot)
    incident = _move(
        incident,
        IncidentStatus.REPLACING,
        _("Spare %(spare)s chosen; provisioning it.") % {"spare": spare.hostname},
        actor,
        replacement_run=run,
        swap=swap,
    )
    run_start(run=run, actor=actor)
    return incident


def replacement_handover(*, run_id: int) -> HealthIncident | None:
    """The replacement run delivered: the spare takes its slot with its access details,
    the incident is closed and the customer told (the delivery kit, computed from the
    order's slots, now names the spare)."""
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
        incident = HealthIncident.objects.select_for_update().filter(replacement_run=run).first()
        if run.status != RunStatus.DELIVERED or incident is None:
            return incident
        if incident.status == IncidentStatus.REPLACED:
            return incident
        delivered = (
            RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE)
            .select_related("node")
            .first()
        )
        if delivered is not None:
            _slot_handover(incident, delivered)
        incident = _move(
            incident,
            IncidentStatus.REPLACED,
            _("Spare validated and handed over."),
            handed_over_at=timezone.now(),
        )
        returned = delivered is not None and delivered.node_id == incident.node_id
        jobs.enqueue(EMAIL_TASK, incident.pk, "returned" if returned else "replaced")
        _webhook(
            incident,
            NODE_REPLACED,
            spare=delivered.node.hostname if delivered is not None else None,
            handed_over_at=incident.handed_over_at.isoformat() if incident.handed_over_at else None,
        )
    return incident


def _slot_handover(incident: HealthIncident, delivered: RunNode) -> None:
    """The order's slot gets the delivered node's access details. When the replacement
    run swapped its first spare (it failed the quick validation), the slot that spare
    took at the start is given to the one delivered."""
    access = {
        "ssh_user": delivered.ssh_user,
        "addresses": delivered.addresses,
        "host_keys": delivered.host_keys,
        "delivered_at": delivered.delivered_at,
    }
    slots = RunNode.objects.filter(
        run__order=incident.order_id, run__kind=RunKind.PROVISION, state=RunNodeState.ACTIVE
    )
    if slots.filter(node_id=delivered.node_id).update(**access):
        return
    first = incident.swap.spare_node_id if incident.swap is not None else None
    taken = slots.select_for_update().filter(node_id=first).first() if first else None
    if taken is None:
        return
    RunNode.objects.filter(pk=taken.pk).update(state=RunNodeState.SWAPPED_OUT)
    RunNode.objects.create(run_id=taken.run_id, node=delivered.node, slot=taken.slot, **access)


def incident_from_staff_fault(*, node_id: int) -> HealthIncident | None:
    """Staff marked a serving node faulty: the same path as a replace-class rule."""
    node = Node.objects.filter(pk=node_id).first()
    if node is None or node.status != NodeStatus.FAULTY or serving_slot(node) is None:
        return None
    if HealthIncident.objects.filter(node=node, status__in=OPEN_INCIDENT_STATUSES).exists():
        return None
    event = node.events.order_by("-created_at", "-pk").first()
    incident = incident_open(
        node=node,
        rule=STAFF_FAULT_RULE,
        action=HealthAction.REPLACE,
        metric="node status",
        value=0.0,
        observed_at=event.created_at if event else timezone.now(),
        actor=event.actor if event else None,
    )
    return incident_act(incident=incident) if incident else None


# A node repaired while its incident still holds it in the order's slot: waiting for a
# spare, or for the customer's "ask me first" answer (a node staff marked faulty).
REPAIRABLE_STATUSES = (IncidentStatus.NO_SPARE, IncidentStatus.AWAITING)


def node_repaired_return(*, node_id: int) -> HealthIncident | None:
    """A node that waited for a spare (or for the customer's answer) was repaired while
    its order still holds it: it returns to its customer through a replacement run of its
    own (the steps and the quick validation), instead of showing free to others while the
    booking runs."""
    with transaction.atomic():
        incident = (
            HealthIncident.objects.select_for_update()
            .filter(node_id=node_id, status__in=REPAIRABLE_STATUSES)
            .first()
        )
        if incident is None or incident.order_id is None:
            return None
        node = Node.objects.select_for_update().get(pk=node_id)
        slot = serving_slot(node)
        if node.status != NodeStatus.AVAILABLE or slot is None:
            return None
        order = Order.objects.get(pk=incident.order_id)
        run = run_create(order=order, kind=RunKind.REPLACE, nodes=[node])
        incident = _move(
            incident,
            IncidentStatus.REPLACING,
            _("Repaired: %(node)s returns to the order.") % {"node": node.hostname},
            replacement_run=run,
        )
        run_start(run=run)
    return incident


def replacement_failed(*, incident_id: int) -> HealthIncident | None:
    """The incident's replacement run failed or was cancelled (its spare failed the quick
    validation with no other free, a step kept failing, its deadline passed): the
    incident waits for a spare again (ops and the customer told); the sweep starts a new
    replacement of whatever fills the slot now."""
    with transaction.atomic():
        incident = (
            HealthIncident.objects.select_for_update(of=("self",))
            .select_related("replacement_run")
            .filter(pk=incident_id, status=IncidentStatus.REPLACING)
            .first()
        )
        run = incident.replacement_run if incident is not None else None
        if incident is None or run is None or run.status not in FAILED_RUN_STATUSES:
            return incident
        incident = _move(
            incident,
            IncidentStatus.NO_SPARE,
            _("Replacement run %(id)s failed: %(why)s") % {"id": run.pk, "why": run.message},
            replacement_run=None,
        )
        jobs.enqueue(EMAIL_TASK, incident.pk, "retry")
    return incident


FAILED_RUN_STATUSES = (RunStatus.FAILED, RunStatus.CANCELLED)


def health_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Deadlines passed, re-validations finished, replacements waiting for a spare (or
    whose start was cut short)."""
    now = now or timezone.now()
    done = {"deadline": 0, "revalidated": 0, "failed": 0, "retried": 0}
    for incident in HealthIncident.objects.filter(
        status=IncidentStatus.AWAITING, decide_by__lte=now
    ).select_related("node"):
        if incident.node.status == NodeStatus.AVAILABLE:
            node_repaired_return(node_id=incident.node_id)  # repaired meanwhile: it returns
        else:
            replacement_start(incident=incident, now=now)
        done["deadline"] += 1
    for incident in HealthIncident.objects.filter(
        status=IncidentStatus.REVALIDATING, validation_run_id__isnull=False
    ):
        run = ValidationRun.objects.filter(pk=incident.validation_run_id or 0).first()
        if run is None or run.status in (ValidationRunStatus.PENDING, ValidationRunStatus.RUNNING):
            continue
        done["revalidated"] += 1
        if run.status == ValidationRunStatus.PASSED:
            with transaction.atomic():
                _move(incident, IncidentStatus.RESOLVED, _("The quick validation passed."))
            continue
        HealthIncident.objects.filter(pk=incident.pk).update(action=HealthAction.REPLACE)
        incident.action = HealthAction.REPLACE
        incident_act_replace(incident=incident, now=now)
    for incident in HealthIncident.objects.filter(
        status=IncidentStatus.REPLACING, replacement_run__status__in=FAILED_RUN_STATUSES
    ):
        replacement_failed(incident_id=incident.pk)
        done["failed"] += 1
    for incident in HealthIncident.objects.filter(
        status__in=(IncidentStatus.REPLACING, IncidentStatus.NO_SPARE),
        replacement_run__isnull=True,
    ).select_related("node"):
        if (
            incident.status == IncidentStatus.NO_SPARE
            and incident.node.status == NodeStatus.AVAILABLE
            and node_repaired_return(node_id=incident.node_id) is not None
        ):
            pass  # repaired meanwhile, still in its slot: it returns to its customer
        else:
            replacement_start(incident=incident, now=now)
        done["retried"] += 1
    return done
