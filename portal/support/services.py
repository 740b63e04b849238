"""Every write of the support desk and the status pages.

Tickets: ``ticket_open`` (a customer, staff, or the portal itself from a low-utilisation
alert or a node replacement), ``ticket_reply`` (the customer or support; support's first
public reply stops the first-response clock; "waiting on the customer" pauses both
clocks, the customer's answer resumes them), ``ticket_note`` (internal, never shown to
the customer), ``ticket_assign``, ``ticket_set_priority`` (the clocks follow), and
``ticket_resolve`` (stops the resolution clock); ``ticket_clocks_sweep`` records a clock
that ran out. Each write records an event (who, when, why) and sends its email through
the outbox. Staff writes need ``support.change_ticket`` whoever calls them (a page, the
admin, the API).

Status pages: ``status_incident_open`` and ``status_incident_update`` (each update in
both languages, the phase moved through the lifecycle).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from accounts.models import Organisation
from billing.models import ContractStatus, Order
from core import jobs, lifecycle, texts
from core.errors import DomainError
from core.texts import Text
from core.types import Actor, actor_or_none
from inventory.models import Node, Rack, Site, Switch
from portal.support import clocks, selectors
from portal.support.models import (
    ACTIVE_TICKET_STATUSES,
    Component,
    Impact,
    IncidentPhase,
    MessageVia,
    SavedReply,
    StatusIncident,
    StatusUpdate,
    Ticket,
    TicketCategory,
    TicketEvent,
    TicketMessage,
    TicketPriority,
    TicketSource,
    TicketStatus,
    TicketTier,
)
from provisioning.health.services import incident_evidence
from provisioning.models import HealthIncident, UtilisationAlert

EMAIL_TASK = "portal.support.tasks.ticket_email"

WORK_TICKETS = "support.change_ticket"
POST_INCIDENTS = "support.change_statusincident"

# A contract that binds the provider's support terms (§7.1).
SIGNED_CONTRACT_STATUSES = (
    ContractStatus.CUSTOMER_SIGNED,
    ContractStatus.COUNTERSIGNED,
    ContractStatus.ACTIVE,
)
MAX_BODY = 20_000


def _require(actor: Actor, permission: str) -> None:
    if actor is None or not getattr(actor, "is_authenticated", False):
        raise DomainError(_("Sign in as support staff first."))
    if not actor.has_perm(permission):
        raise DomainError(_("Your role may not do this."))


def _text(value: str, *, what: str, limit: int = MAX_BODY) -> str:
    value = (value or "").strip()
    if not value:
        raise DomainError(_("Write %(what)s.") % {"what": what})
    if len(value) > limit:
        raise DomainError(
            _("%(what)s is too long: at most %(n)s characters.") % {"what": what, "n": limit}
        )
    return value


def _note(
    ticket: Ticket, *, actor: Actor, reason: Text | str, internal: bool = False
) -> TicketEvent:
    """An event that changes no status (assigned, replied, a clock missed…): the same row
    as the lifecycle's, with ``internal`` for what only staff see."""
    plain, coded = texts.stored(reason)
    return TicketEvent.objects.create(
        ticket=ticket,
        from_status=ticket.status,
        to_status=ticket.status,
        actor=actor_or_none(actor),
        reason=plain,
        reason_text=coded,
        internal=internal,
    )


def _label(choices: type, code: str) -> Text:
    """A choice's label as a system text (rendered in the reader's language)."""
    with translation.override("en"):
        return Text(str(choices(code).label))


def ticket_tier(order: Order | None) -> str:
    """``contract`` for an order under a signed contract, else ``standard``."""
    if order is not None and order.contracts.filter(status__in=SIGNED_CONTRACT_STATUSES).exists():
        return TicketTier.CONTRACT
    return TicketTier.STANDARD


def _due(ticket: Ticket) -> tuple[datetime, datetime]:
    target = clocks.targets(tier=ticket.tier, priority=ticket.priority, category=ticket.category)
    start = ticket.created_at + timedelta(seconds=ticket.paused_seconds)
    return start + target.response, start + target.resolution


def ticket_open(
    *,
    organisation: Organisation,
    actor: Actor,
    subject: str,
    body: str,
    category: str,
    priority: str,
    language: str,
    order: Order | None = None,
    node: Node | None = None,
    gpu_serial: str = "",
    gpu_index: str = "",
    source: str = TicketSource.CUSTOMER,
    utilisation_alert: UtilisationAlert | None = None,
    health_incident: HealthIncident | None = None,
    now: datetime | None = None,
) -> Ticket:
    """A new ticket with its clocks running and the diagnostics the portal has attached.
    The order must be the organisation's, the node one of the order's, a GPU one of the
    node's (``selectors.ticket_target_resolve`` finds it by serial)."""
    subject = _text(subject, what=_("a subject"), limit=200)
    body = _text(body, what=_("what happened"))
    if category not in TicketCategory.values:
        raise DomainError(_("Choose a category."))
    if priority not in TicketPriority.values:
        raise DomainError(_("Choose a priority."))
    if order is not None and order.organisation_id != organisation.pk:
        raise DomainError(_("That order is not your organisation's."))
    if node is not None:
        if order is None:
            raise DomainError(_("Choose the order the node serves."))
        if node.pk not in selectors.order_node_ids(order):
            raise DomainError(_("That node does not serve this order."))
    if gpu_serial and node is None:
        raise DomainError(_("A GPU is named with its node."))
    if source == TicketSource.STAFF:
        _require(actor, WORK_TICKETS)
    now = now or timezone.now()
    with transaction.atomic():
        ticket = Ticket(
            organisation=organisation,
            opened_by=actor_or_none(actor),
            source=source,
            subject=subject,
            category=category,
            priority=priority,
            tier=ticket_tier(order),
            language=language,
            order=order,
            node=node,
            gpu_serial=gpu_serial.strip(),
            gpu_index=gpu_index,
            utilisation_alert=utilisation_alert,
            health_incident=health_incident,
            diagnostics=selectors.diagnostics_collect(order=order, node=node),
            created_at=now,
        )
        ticket.response_due_at, ticket.resolution_due_at = now, now  # set below
        ticket.save()
        # ``auto_now_add`` wrote the database's time: the clocks count from it.
        Ticket.objects.filter(pk=ticket.pk).update(created_at=now)
        ticket.created_at = now
        ticket.response_due_at, ticket.resolution_due_at = _due(ticket)
        Ticket.objects.filter(pk=ticket.pk).update(
            response_due_at=ticket.response_due_at, resolution_due_at=ticket.resolution_due_at
        )
        TicketMessage.objects.create(
            ticket=ticket,
            author=actor_or_none(actor),
            from_staff=source == TicketSource.STAFF,
            via=MessageVia.SYSTEM
            if source in (TicketSource.LOW_UTILISATION, TicketSource.REPLACEMENT)
            else MessageVia.WEB,
            body=body,
        )
        lifecycle.record_creation([ticket], actor=actor, reason=Text("Ticket opened."))
        jobs.enqueue(EMAIL_TASK, ticket.pk, "opened")
    return ticket


def ticket_reply(
    *,
    ticket: Ticket,
    actor: Actor,
    body: str,
    staff: bool = False,
    wait_for_customer: bool = False,
    via: str = MessageVia.WEB,
    saved_reply: SavedReply | None = None,
    now: datetime | None = None,
) -> TicketMessage:
    """A public reply. From support (``staff=True``): the first one stops the
    first-response clock; ``wait_for_customer`` pauses the clocks until the customer
    answers. From the customer: a ticket waiting on them goes back to support (the clocks
    resume), a resolved one is reopened (its resolution clock resumes where it stopped)."""
    if staff:
        _require(actor, WORK_TICKETS)
        if saved_reply is not None and not (body or "").strip():
            body = saved_reply.body
    elif wait_for_customer:
        raise DomainError(_("Only support can wait on the customer."))
    body = _text(body, what=_("a reply"))
    now = now or timezone.now()
    with transaction.atomic():
        ticket = Ticket.objects.select_for_update().get(pk=ticket.pk)
        message = TicketMessage.objects.create(
            ticket=ticket, author=actor_or_none(actor), from_staff=staff, via=via, body=body
        )
        if staff:
            _staff_replied(ticket, actor=actor, now=now, wait=wait_for_customer)
            jobs.enqueue(EMAIL_TASK, ticket.pk, "reply", message.pk)
        else:
            _customer_replied(ticket, actor=actor, now=now)
            jobs.enqueue(EMAIL_TASK, ticket.pk, "customer_reply", message.pk)
    return message


def _staff_replied(ticket: Ticket, *, actor: Actor, now: datetime, wait: bool) -> None:
    if ticket.status == TicketStatus.RESOLVED:
        raise DomainError(_("This ticket is resolved; the customer can reopen it."))
    updates: dict[str, object] = {}
    if ticket.first_response_at is None:
        updates["first_response_at"] = now
        updates["response_missed"] = ticket.response_missed or now > ticket.response_due_at
        if ticket.utilisation_alert_id:
            alert = UtilisationAlert.objects.get(pk=ticket.utilisation_alert_id)
            if alert.answered_at is None:
                UtilisationAlert.objects.filter(pk=alert.pk, answered_at__isnull=True).update(
                    answered_at=now, answered_by=actor_or_none(actor)
                )
    if wait and ticket.status == TicketStatus.OPEN:
        updates["paused_at"] = now
        lifecycle.transition(
            ticket,
            to=TicketStatus.WAITING,
            actor=actor,
            reason=Text("Support replied and waits on the customer: the clocks are paused."),
            updates=updates,
            locked=True,
        )
        return
    if updates:
        Ticket.objects.filter(pk=ticket.pk).update(**updates)
        for name, value in updates.items():
            setattr(ticket, name, value)
    _note(ticket, actor=actor, reason=Text("Support replied."))


def _resume(ticket: Ticket, now: datetime) -> dict[str, object]:
    """The field changes that end a pause: its length counts, the due times move."""
    if ticket.paused_at is None:
        return {}
    ticket.paused_seconds += max(int((now - ticket.paused_at).total_seconds()), 0)
    ticket.paused_at = None
    response_due, resolution_due = _due(ticket)
    return {
        "paused_at": None,
        "paused_seconds": ticket.paused_seconds,
        "response_due_at": response_due,
        "resolution_due_at": resolution_due,
    }


def _customer_replied(ticket: Ticket, *, actor: Actor, now: datetime) -> None:
    if ticket.status == TicketStatus.WAITING:
        lifecycle.transition(
            ticket,
            to=TicketStatus.OPEN,
            actor=actor,
            reason=Text("The customer answered: the clocks run again."),
            updates=_resume(ticket, now),
            locked=True,
        )
    elif ticket.status == TicketStatus.RESOLVED:
        # The resolution clock resumes where it stopped: the time between resolving and
        # reopening is a pause.
        assert ticket.resolved_at is not None
        ticket.paused_at = ticket.resolved_at
        updates = _resume(ticket, now)
        updates["resolved_at"] = None
        lifecycle.transition(
            ticket,
            to=TicketStatus.OPEN,
            actor=actor,
            reason=Text("The customer reopened the ticket."),
            updates=updates,
            locked=True,
        )
    else:
        _note(ticket, actor=actor, reason=Text("The customer replied."))


def ticket_note(*, ticket: Ticket, actor: Actor, body: str) -> TicketMessage:
    """An internal note: support only, never shown or sent to the customer."""
    _require(actor, WORK_TICKETS)
    body = _text(body, what=_("a note"))
    with transaction.atomic():
        message = TicketMessage.objects.create(
            ticket=ticket, author=actor_or_none(actor), from_staff=True, internal=True, body=body
        )
        _note(ticket, actor=actor, reason=Text("Internal note added."), internal=True)
    return message


def support_staff() -> Iterable[object]:
    """Users who may work tickets (the assignee choices)."""
    return (
        get_user_model()
        .objects.with_perm(WORK_TICKETS, include_superusers=True)
        .filter(is_active=True)
        .order_by("username")
    )


def ticket_assign(*, ticket: Ticket, actor: Actor, assignee: object | None, reason: str) -> Ticket:
    """Give the ticket to a support engineer (or nobody), saying why."""
    _require(actor, WORK_TICKETS)
    reason = _text(reason, what=_("why"), limit=500)
    if assignee is not None and not getattr(assignee, "has_perm", lambda _p: False)(WORK_TICKETS):
        raise DomainError(_("%(user)s does not work tickets.") % {"user": assignee})
    with transaction.atomic():
        ticket = Ticket.objects.select_for_update().get(pk=ticket.pk)
        Ticket.objects.filter(pk=ticket.pk).update(assignee=assignee)
        ticket.assignee = assignee  # type: ignore[assignment]
        who = assignee.get_username() if assignee is not None else Text("nobody")  # type: ignore[attr-defined]
        _note(
            ticket,
            actor=actor,
            reason=Text("Assigned to %(who)s: %(why)s", who=who, why=reason),
            internal=True,
        )
    return ticket


def ticket_set_priority(*, ticket: Ticket, actor: Actor, priority: str, reason: str) -> Ticket:
    """A new priority; the clocks follow it (counted from the opening, pauses kept)."""
    _require(actor, WORK_TICKETS)
    reason = _text(reason, what=_("why"), limit=500)
    if priority not in TicketPriority.values:
        raise DomainError(_("Choose a priority."))
    with transaction.atomic():
        ticket = Ticket.objects.select_for_update().get(pk=ticket.pk)
        old = ticket.priority
        ticket.priority = priority
        response_due, resolution_due = _due(ticket)
        Ticket.objects.filter(pk=ticket.pk).update(
            priority=priority, response_due_at=response_due, resolution_due_at=resolution_due
        )
        ticket.response_due_at, ticket.resolution_due_at = response_due, resolution_due
        _note(
            ticket,
            actor=actor,
            reason=Text(
                "Priority %(old)s → %(new)s: %(why)s",
                old=_label(TicketPriority, old),
                new=_label(TicketPriority, priority),
                why=reason,
            ),
            internal=True,  # staff's why; the customer sees the clocks move
        )
    return ticket


def ticket_resolve(
    *, ticket: Ticket, actor: Actor, resolution: str, now: datetime | None = None
) -> Ticket:
    """Resolved, with what was done (sent to the customer): the clocks stop. A ticket
    resolved without a reply before counts the resolution as the first response."""
    _require(actor, WORK_TICKETS)
    resolution = _text(resolution, what=_("what was done"))
    now = now or timezone.now()
    with transaction.atomic():
        ticket = Ticket.objects.select_for_update().get(pk=ticket.pk)
        if ticket.status == TicketStatus.RESOLVED:
            raise DomainError(_("This ticket is already resolved."))
        message = TicketMessage.objects.create(
            ticket=ticket, author=actor_or_none(actor), from_staff=True, body=resolution
        )
        updates = _resume(ticket, now)
        due_resolution = updates.get("resolution_due_at", ticket.resolution_due_at)
        updates["resolved_at"] = now
        updates["resolution_missed"] = ticket.resolution_missed or now > due_resolution  # type: ignore[operator]
        if ticket.first_response_at is None:
            due_response = updates.get("response_due_at", ticket.response_due_at)
            updates["first_response_at"] = now
            updates["response_missed"] = ticket.response_missed or now > due_response  # type: ignore[operator]
        ticket = lifecycle.transition(
            ticket,
            to=TicketStatus.RESOLVED,
            actor=actor,
            reason=Text("Resolved: %(what)s", what=resolution[:300]),
            updates=updates,
            locked=True,
        )
        jobs.enqueue(EMAIL_TASK, ticket.pk, "resolved", message.pk)
    return ticket


def ticket_clocks_sweep(*, now: datetime | None = None) -> int:
    """Record each running clock that ran out (once): the ticket's history says so, the
    assignee (or all of support) is told by email and the ops dashboard counts it.
    Returns how many clocks were marked missed."""
    now = now or timezone.now()
    marked = 0
    running = Ticket.objects.filter(status=TicketStatus.OPEN, paused_at__isnull=True)
    with transaction.atomic():
        for ticket in running.filter(
            first_response_at__isnull=True, response_missed=False, response_due_at__lt=now
        ).select_for_update(skip_locked=True):
            Ticket.objects.filter(pk=ticket.pk).update(response_missed=True)
            _note(
                ticket, actor=None, reason=Text("The first-response clock ran out."), internal=True
            )
            jobs.enqueue(EMAIL_TASK, ticket.pk, "missed")
            marked += 1
        for ticket in running.filter(
            resolution_missed=False, resolution_due_at__lt=now
        ).select_for_update(skip_locked=True):
            Ticket.objects.filter(pk=ticket.pk).update(resolution_missed=True)
            _note(ticket, actor=None, reason=Text("The resolution clock ran out."), internal=True)
            jobs.enqueue(EMAIL_TASK, ticket.pk, "missed")
            marked += 1
    return marked


# --- tickets the portal opens itself ---------------------------------------------------


def ticket_open_for_low_utilisation(*, alert_id: int) -> Ticket | None:
    """A low-utilisation alert opens a ticket (once): the seeds' 5-minute response."""
    alert = UtilisationAlert.objects.select_related("order__quote").filter(pk=alert_id).first()
    if alert is None or Ticket.objects.filter(utilisation_alert=alert).exists():
        return None
    order = alert.order
    pointer = selectors.utilisation_pointer(alert.pointer)
    language = getattr(order.quote, "language", "") or "en"
    with translation.override(language):
        subject = _("GPU utilisation of order %(order)s is %(util)s") % {
            "order": order.number,
            "util": f"{alert.utilisation:.0%}",
        }
        body = _(
            "The portal measured a mean GPU utilisation of %(util)s on this order, under the "
            "threshold. What the metrics point at: %(pointer)s. An engineer answers within "
            "5 minutes."
        ) % {"util": f"{alert.utilisation:.0%}", "pointer": pointer}
    return _system_ticket_open(
        order=order,
        subject=subject,
        body=body,
        category=TicketCategory.UTILISATION,
        priority=TicketPriority.HIGH,
        language=language,
        source=TicketSource.LOW_UTILISATION,
        utilisation_alert=alert,
    )


def ticket_open_for_replacement(*, incident_id: int) -> Ticket | None:
    """A node of a rented order needs replacing: a ticket about it (once)."""
    incident = (
        HealthIncident.objects.select_related("order__quote", "node").filter(pk=incident_id).first()
    )
    if incident is None or incident.order is None:
        return None
    if Ticket.objects.filter(health_incident=incident).exists():
        return None
    order = incident.order
    language = getattr(order.quote, "language", "") or "en"
    with translation.override(language):
        subject = _("Node %(node)s of order %(order)s is being replaced") % {
            "node": incident.node.hostname,
            "order": order.number,
        }
        body = _(
            "A health rule found a fault the node cannot serve with: %(evidence)s. The node is "
            "cordoned and a spare of the same type is provisioned for you."
        ) % {"evidence": incident_evidence(incident)}
    return _system_ticket_open(
        order=order,
        subject=subject,
        body=body,
        category=TicketCategory.HARDWARE,
        priority=TicketPriority.URGENT,
        language=language,
        node=incident.node,
        gpu_index=incident.gpu,
        source=TicketSource.REPLACEMENT,
        health_incident=incident,
    )


def _system_ticket_open(*, order: Order, **fields: Any) -> Ticket | None:
    """A ticket the portal opens by itself about ``order`` (no actor), once: a second run
    of the task meets the unique constraint on its source and opens nothing."""
    try:
        return ticket_open(organisation=order.organisation, actor=None, order=order, **fields)
    except IntegrityError:
        return None


# --- status pages ----------------------------------------------------------------------


def status_incident_open(
    *,
    site: Site,
    component: str,
    impact: str,
    title: str,
    title_zh: str,
    body: str,
    body_zh: str,
    actor: Actor,
    racks: Iterable[Rack] = (),
    switches: Iterable[Switch] = (),
    nodes: Iterable[Node] = (),
    started_at: datetime | None = None,
) -> StatusIncident:
    """A new incident on a site's component, with its first update in both languages."""
    _require(actor, POST_INCIDENTS)
    if component not in Component.values:
        raise DomainError(_("Choose the component."))
    if impact not in Impact.values:
        raise DomainError(_("Choose the impact."))
    title = _text(title, what=_("the title in English"), limit=200)
    title_zh = _text(title_zh, what=_("the title in Chinese"), limit=200)
    body = _text(body, what=_("the update in English"))
    body_zh = _text(body_zh, what=_("the update in Chinese"))
    racks, switches, nodes = list(racks), list(switches), list(nodes)
    for item in (*racks, *switches, *nodes):
        if getattr(item, "site_id", None) != site.pk:
            raise DomainError(_("%(item)s is in another site.") % {"item": item})
    with transaction.atomic():
        incident = StatusIncident.objects.create(
            site=site,
            component=component,
            impact=impact,
            title=title,
            title_zh=title_zh,
            started_at=started_at or timezone.now(),
            created_by=actor_or_none(actor),
        )
        incident.racks.set(racks)
        incident.switches.set(switches)
        incident.nodes.set(nodes)
        StatusUpdate.objects.create(
            incident=incident,
            status=incident.status,
            body=body,
            body_zh=body_zh,
            author=actor_or_none(actor),
        )
        lifecycle.record_creation([incident], actor=actor, reason=body)
    return incident


def status_incident_update(
    *,
    incident: StatusIncident,
    status: str,
    body: str,
    body_zh: str,
    actor: Actor,
    impact: str | None = None,
) -> StatusUpdate:
    """A public update; a new phase moves through the lifecycle (resolved is final)."""
    _require(actor, POST_INCIDENTS)
    if status not in IncidentPhase.values:
        raise DomainError(_("Choose the status."))
    if impact is not None and impact not in Impact.values:
        raise DomainError(_("Choose the impact."))
    body = _text(body, what=_("the update in English"))
    body_zh = _text(body_zh, what=_("the update in Chinese"))
    with transaction.atomic():
        incident = StatusIncident.objects.select_for_update().get(pk=incident.pk)
        if incident.status == IncidentPhase.RESOLVED:
            raise DomainError(_("This incident is resolved."))
        updates: dict[str, object] = {}
        if impact is not None and impact != incident.impact:
            updates["impact"] = impact
        if status == IncidentPhase.RESOLVED:
            updates["resolved_at"] = timezone.now()
        if status != incident.status:
            incident = lifecycle.transition(
                incident, to=status, actor=actor, reason=body, updates=updates, locked=True
            )
        else:
            if updates:
                StatusIncident.objects.filter(pk=incident.pk).update(**updates)
            lifecycle.record_note([incident], actor=actor, reason=body)
        return StatusUpdate.objects.create(
            incident=incident,
            status=status,
            body=body,
            body_zh=body_zh,
            author=actor_or_none(actor),
        )


__all__ = [
    "ACTIVE_TICKET_STATUSES",
    "status_incident_open",
    "status_incident_update",
    "ticket_assign",
    "ticket_clocks_sweep",
    "ticket_note",
    "ticket_open",
    "ticket_open_for_low_utilisation",
    "ticket_open_for_replacement",
    "ticket_reply",
    "ticket_resolve",
    "ticket_set_priority",
]
