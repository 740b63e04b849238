"""Reads of the support desk and the status pages, each with its related rows loaded in
one place (the list pages pin their query counts in tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Case, F, Prefetch, Q, QuerySet, When
from django.db.models import DateTimeField as DateTimeFieldType
from django.db.models.functions import Least
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import Organisation
from billing.models import Order, OrderStatus
from core.errors import DomainError
from inventory.models import (
    MaintenanceStatus,
    MaintenanceWindow,
    Node,
    NodeEvent,
    Reservation,
    Site,
)
from portal.support import clocks
from portal.support.models import (
    ACTIVE_TICKET_STATUSES,
    IMPACT_RANK,
    Component,
    IncidentPhase,
    StatusIncident,
    StatusUpdate,
    Ticket,
    TicketEvent,
    TicketMessage,
    TicketStatus,
)
from provisioning.health.selectors import rule_title
from provisioning.health.services import incident_evidence
from provisioning.health.utilisation import POINTERS
from provisioning.models import (
    HealthIncident,
    RunKind,
    RunNode,
    UtilisationAlert,
    ValidationNodeResult,
    ValidationRun,
)
from provisioning.telemetry import panel
from provisioning.telemetry.prometheus import PrometheusUnavailable

DIAGNOSTIC_INCIDENTS = 5
DIAGNOSTIC_ALERTS = 3
DIAGNOSTIC_NODE_EVENTS = 10

# --- what a ticket is about ------------------------------------------------------------


def order_node_ids(order: Order) -> set[int]:
    """Every node that served or is booked for the order (swaps included)."""
    ids = set(RunNode.objects.filter(run__order=order).values_list("node_id", flat=True))
    if order.reservation_group:
        ids |= set(
            Reservation.objects.filter(group=order.reservation_group).values_list(
                "node_id", flat=True
            )
        )
    return ids


def ticket_orders(organisation: Organisation) -> QuerySet[Order]:
    """The orders a customer can open a ticket about (newest first)."""
    return Order.objects.filter(organisation=organisation).order_by("-created_at")


def ticket_nodes(order: Order) -> QuerySet[Node]:
    return Node.objects.filter(pk__in=order_node_ids(order)).order_by("hostname")


@dataclass(frozen=True)
class GPU:
    order: Order
    node: Node
    index: str
    serial: str


class GPUNotFound(Exception):
    pass


def gpu_locate(organisation: Organisation, serial: str) -> GPU:
    """The GPU with this serial among the organisation's running orders, as their nodes
    report it to monitoring (dcgm-exporter's ``serial`` label). Raises ``GPUNotFound``;
    ``PrometheusUnavailable`` when monitoring does not answer."""
    serial = serial.strip()
    if not serial:
        raise GPUNotFound(serial)
    for order in Order.objects.filter(organisation=organisation, status=OrderStatus.READY):
        for gpu in panel.gpu_inventory(order):
            if gpu["serial"] == serial:
                node = Node.objects.get(hostname=gpu["node"])
                return GPU(order=order, node=node, index=gpu["gpu"], serial=serial)
    raise GPUNotFound(serial)


class TicketTargetInvalid(DomainError):
    """What a ticket would be about does not hold together. ``field`` names the input at
    fault (``None``: the combination of them)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class TicketTarget:
    """What a ticket is about: an order, one of its nodes, one GPU of that node."""

    order: Order | None
    node: Node | None
    gpu_serial: str = ""
    gpu_index: str = ""


def ticket_target_resolve(
    *, organisation: Organisation, order: Order | None, node: Node | None, gpu_serial: str
) -> TicketTarget:
    """What a customer's ticket is about (the support page and the API): the order and
    node they chose and, given a GPU serial, the GPU that reports it from one of the
    organisation's running orders; its order and node come from monitoring then, and must
    agree with those chosen. A serial no server of the organisation reports is not found,
    whether or not another organisation's GPU has it (the answer tells nothing of other
    organisations). Raises ``TicketTargetInvalid``."""
    serial = gpu_serial.strip()
    if not serial:
        return TicketTarget(order=order, node=node)
    try:
        gpu = gpu_locate(organisation, serial)
    except GPUNotFound:
        raise TicketTargetInvalid(
            gettext("No GPU with serial %(serial)s reports from your organisation's servers.")
            % {"serial": serial},
            field="gpu_serial",
        ) from None
    except PrometheusUnavailable:
        raise TicketTargetInvalid(
            gettext(
                "Monitoring does not answer right now, so the serial cannot be looked up: "
                "choose the node instead and write the serial in the description."
            ),
            field="gpu_serial",
        ) from None
    if node is not None and node.pk != gpu.node.pk:
        raise TicketTargetInvalid(
            gettext("GPU %(serial)s is in %(host)s, not in %(node)s.")
            % {"serial": serial, "host": gpu.node.hostname, "node": node.hostname}
        )
    if order is not None and order.pk != gpu.order.pk:
        raise TicketTargetInvalid(
            gettext("GPU %(serial)s serves order %(order)s.")
            % {"serial": serial, "order": gpu.order.number}
        )
    return TicketTarget(order=gpu.order, node=gpu.node, gpu_serial=serial, gpu_index=gpu.index)


def utilisation_pointer(code: str) -> str:
    return str(POINTERS.get(code, code))


# --- diagnostics -----------------------------------------------------------------------


def diagnostics_collect(*, order: Order | None, node: Node | None) -> dict[str, Any]:
    """What the portal already knows about the order and node, by reference: the latest
    health incidents, the order's low-utilisation alerts, the node's last validation
    and its last events (within the order's tenure: never another customer's)."""
    out: dict[str, Any] = {}
    if order is None:
        return out
    incidents = HealthIncident.objects.filter(order=order)
    if node is not None:
        incidents = incidents.filter(node=node)
    out["incidents"] = list(
        incidents.order_by("-detected_at", "-pk").values_list("pk", flat=True)[
            :DIAGNOSTIC_INCIDENTS
        ]
    )
    out["alerts"] = list(
        UtilisationAlert.objects.filter(order=order)
        .order_by("-raised_at", "-pk")
        .values_list("pk", flat=True)[:DIAGNOSTIC_ALERTS]
    )
    runs = ValidationRun.objects.filter(order=order)
    if node is not None:
        runs = runs.filter(nodes=node)
    last = runs.order_by("-created_at", "-pk").values_list("pk", flat=True).first()
    out["validation_run"] = last
    if node is not None:
        out["node_events"] = list(
            NodeEvent.objects.filter(node=node, created_at__gte=_tenure_start(order, node))
            .order_by("-created_at", "-pk")
            .values_list("pk", flat=True)[:DIAGNOSTIC_NODE_EVENTS]
        )
    return out


def _tenure_start(order: Order, node: Node) -> datetime:
    first = (
        RunNode.objects.filter(run__order=order, node=node, run__kind__in=list(RunKind.values))
        .order_by("run__created_at")
        .values_list("run__created_at", flat=True)
        .first()
    )
    return min(first, order.start_at) if first else order.start_at


@dataclass
class Diagnostics:
    incidents: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    validation: dict[str, Any] | None = None
    node_events: list[NodeEvent] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.incidents or self.alerts or self.validation or self.node_events)


def diagnostics(ticket: Ticket) -> Diagnostics:
    """The attached diagnostics, read back in the reader's language."""
    refs = ticket.diagnostics or {}
    out = Diagnostics()
    for incident in HealthIncident.objects.filter(
        pk__in=refs.get("incidents") or []
    ).select_related("node"):
        out.incidents.append(
            {
                "incident": incident,
                "title": rule_title(incident.rule),
                "evidence": incident_evidence(incident),
            }
        )
    out.incidents.sort(key=lambda d: d["incident"].detected_at, reverse=True)
    for alert in UtilisationAlert.objects.filter(pk__in=refs.get("alerts") or []):
        out.alerts.append({"alert": alert, "pointer": utilisation_pointer(alert.pointer)})
    run_id = refs.get("validation_run")
    if run_id:
        run = ValidationRun.objects.filter(pk=run_id).first()
        if run is not None:
            results = ValidationNodeResult.objects.filter(run=run)
            if ticket.node_id:
                results = results.filter(node_id=ticket.node_id)
            out.validation = {"run": run, "results": list(results)}
    out.node_events = list(
        NodeEvent.objects.filter(pk__in=refs.get("node_events") or [])
        .select_related("actor")
        .order_by("-created_at", "-pk")
    )
    return out


# --- clocks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Clock:
    kind: str  # "response" | "resolution"
    due: datetime
    stopped_at: datetime | None
    paused: bool
    missed: bool
    remaining: timedelta

    @property
    def state(self) -> str:
        """running | paused | met | missed"""
        if self.stopped_at is not None:
            return "missed" if self.missed or self.stopped_at > self.due else "met"
        if self.remaining < timedelta(0) or self.missed:
            return "missed"
        return "paused" if self.paused else "running"

    @property
    def minutes_left(self) -> int:
        return int(self.remaining.total_seconds() // 60)


def ticket_clocks(ticket: Ticket, now: datetime | None = None) -> list[Clock]:
    now = now or timezone.now()
    paused = ticket.paused_at is not None
    out = []
    for kind, due, stopped, missed in (
        ("response", ticket.response_due_at, ticket.first_response_at, ticket.response_missed),
        ("resolution", ticket.resolution_due_at, ticket.resolved_at, ticket.resolution_missed),
    ):
        left = clocks.remaining(due=due, stopped_at=stopped, paused_at=ticket.paused_at, now=now)
        out.append(
            Clock(
                kind=kind,
                due=due,
                stopped_at=stopped,
                paused=paused and stopped is None,
                missed=missed,
                remaining=left,
            )
        )
    return out


def _with_next_due(qs: QuerySet[Ticket]) -> QuerySet[Ticket]:
    """``next_due``: the running clock that runs out first (none while paused)."""
    return qs.annotate(
        next_due=Case(
            When(paused_at__isnull=False, then=None),
            When(
                first_response_at__isnull=True, then=Least("response_due_at", "resolution_due_at")
            ),
            default=F("resolution_due_at"),
            output_field=DateTimeFieldType(),
        )
    )


# --- customer's side -------------------------------------------------------------------


def ticket_list_for_org(organisation: Organisation) -> QuerySet[Ticket]:
    return (
        Ticket.objects.filter(organisation=organisation)
        .select_related("order", "node")
        .order_by("-created_at", "-pk")
    )


def ticket_for_org(organisation: Organisation, ticket_id: int) -> Ticket | None:
    return (
        Ticket.objects.filter(organisation=organisation, pk=ticket_id)
        .select_related("order", "node", "assignee")
        .first()
    )


def ticket_messages(ticket: Ticket, *, staff: bool) -> list[TicketMessage]:
    qs = ticket.messages.select_related("author").order_by("created_at", "pk")
    if not staff:
        qs = qs.filter(internal=False)
    return list(qs)


def ticket_history(ticket: Ticket, *, staff: bool) -> list[TicketEvent]:
    qs = ticket.events.select_related("actor").order_by("created_at", "pk")
    if not staff:
        qs = qs.filter(internal=False)
    return list(qs)


# --- staff's side ----------------------------------------------------------------------

QUEUE_VIEWS = ("active", "mine", "unassigned", "resolved")


def ticket_queue(*, view: str = "active", user: Any = None) -> QuerySet[Ticket]:
    """The staff queue: by the clock that runs out first (paused tickets after), then by
    priority and age."""
    qs = Ticket.objects.select_related("organisation", "order", "node", "assignee")
    if view == "resolved":
        return qs.filter(status=TicketStatus.RESOLVED).order_by("-resolved_at", "-pk")
    qs = qs.filter(status__in=ACTIVE_TICKET_STATUSES)
    if view == "mine":
        qs = qs.filter(assignee=user)
    elif view == "unassigned":
        qs = qs.filter(assignee__isnull=True)
    return _with_next_due(qs).order_by(F("next_due").asc(nulls_last=True), "created_at", "pk")


def ticket_for_staff(ticket_id: int) -> Ticket | None:
    return (
        Ticket.objects.filter(pk=ticket_id)
        .select_related("organisation", "order", "node", "assignee", "opened_by")
        .first()
    )


def missed_clocks_q(now: datetime) -> Q:
    """A clock missed: recorded as missed, stopped late, or running past its due time."""
    running = Q(status=TicketStatus.OPEN, paused_at__isnull=True)
    return (
        Q(response_missed=True)
        | Q(resolution_missed=True)
        | Q(first_response_at__gt=F("response_due_at"))
        | Q(resolved_at__gt=F("resolution_due_at"))
        | (running & Q(first_response_at__isnull=True, response_due_at__lt=now))
        | (running & Q(resolution_due_at__lt=now))
    )


def tickets_missed_clocks(*, days: int = 30, now: datetime | None = None) -> QuerySet[Ticket]:
    """Tickets opened in the last ``days`` whose first-response or resolution clock was
    missed (the ops dashboard's widget and page)."""
    now = now or timezone.now()
    return (
        Ticket.objects.filter(created_at__gte=now - timedelta(days=days))
        .filter(missed_clocks_q(now))
        .select_related("organisation", "assignee")
        .order_by("-created_at", "-pk")
    )


def missed_clocks_summary(*, days: int = 30, now: datetime | None = None) -> dict[str, int]:
    now = now or timezone.now()
    tickets = list(tickets_missed_clocks(days=days, now=now))
    response = sum(1 for t in tickets if ticket_clocks(t, now)[0].state == "missed")
    resolution = sum(1 for t in tickets if ticket_clocks(t, now)[1].state == "missed")
    return {"tickets": len(tickets), "response": response, "resolution": resolution}


# --- status pages ----------------------------------------------------------------------


@dataclass
class ComponentStatus:
    code: str
    label: str
    impact: str  # "" when operational, else the worst open incident's impact
    incidents: list[StatusIncident]
    maintenance: list[MaintenanceWindow] = field(default_factory=list)

    @property
    def state(self) -> str:
        if self.impact:
            return self.impact
        return "maintenance" if self.maintenance else "operational"


@dataclass
class SiteStatus:
    site: Site
    components: list[ComponentStatus]
    open_incidents: list[StatusIncident]
    recent_incidents: list[StatusIncident]

    @property
    def worst(self) -> str:
        impacts = [c.impact for c in self.components if c.impact]
        return min(impacts, key=lambda i: IMPACT_RANK[i]) if impacts else ""


RECENT_DAYS = 14


def _incidents(qs: QuerySet[StatusIncident]) -> QuerySet[StatusIncident]:
    return qs.select_related("site").prefetch_related(
        "racks", "switches", "nodes", _updates_prefetch()
    )


def _updates_prefetch() -> Prefetch:
    return Prefetch("updates", queryset=StatusUpdate.objects.order_by("-created_at", "-pk"))


def _site_status(
    site: Site,
    incidents: list[StatusIncident],
    maintenance: list[MaintenanceWindow] | None = None,
    now: datetime | None = None,
) -> SiteStatus:
    now = now or timezone.now()
    open_ = [i for i in incidents if i.status != IncidentPhase.RESOLVED]
    components = []
    for code, label in Component.choices:
        mine = [i for i in open_ if i.component == code]
        worst = min((i.impact for i in mine), key=lambda x: IMPACT_RANK[x], default="")
        windows = []
        if code == Component.COMPUTE and maintenance:
            windows = [w for w in maintenance if w.start_at <= now < w.end_at]
        components.append(ComponentStatus(code, str(label), worst, mine, windows))
    recent = [
        i
        for i in incidents
        if i.status == IncidentPhase.RESOLVED
        and i.resolved_at is not None
        and i.resolved_at >= now - timedelta(days=RECENT_DAYS)
    ]
    return SiteStatus(site, components, open_, recent)


def site_status(site: Site, now: datetime | None = None) -> SiteStatus:
    """The public page: every incident of the site, open or resolved in the last days."""
    now = now or timezone.now()
    incidents = list(
        _incidents(
            StatusIncident.objects.filter(site=site).filter(
                ~Q(status=IncidentPhase.RESOLVED)
                | Q(resolved_at__gte=now - timedelta(days=RECENT_DAYS))
            )
        )
    )
    return _site_status(site, incidents, now=now)


def status_sites() -> list[SiteStatus]:
    now = timezone.now()
    sites = list(Site.objects.order_by("code"))
    incidents = list(
        _incidents(
            StatusIncident.objects.filter(
                ~Q(status=IncidentPhase.RESOLVED)
                | Q(resolved_at__gte=now - timedelta(days=RECENT_DAYS))
            )
        )
    )
    return [_site_status(s, [i for i in incidents if i.site_id == s.pk], now=now) for s in sites]


@dataclass
class CustomerStatus:
    sites: list[SiteStatus]
    nodes: list[Node]
    affected: dict[int, list[str]]  # incident id → the customer's nodes it touches
    maintenance: list[MaintenanceWindow]


CURRENT_ORDER_STATUSES = (
    OrderStatus.PAID,
    OrderStatus.PROVISIONING,
    OrderStatus.VALIDATING,
    OrderStatus.READY,
)


def customer_status(organisation: Organisation, now: datetime | None = None) -> CustomerStatus:
    """The status pages scoped to the racks, switches and nodes of the organisation's
    current orders: site-wide incidents (no rack, switch or node named) and those touching
    their hardware, with the scheduled maintenance of their nodes."""
    now = now or timezone.now()
    orders = list(
        Order.objects.filter(organisation=organisation, status__in=CURRENT_ORDER_STATUSES)
    )
    node_ids: set[int] = set()
    for order in orders:
        node_ids |= order_node_ids(order)
    nodes = list(
        Node.objects.filter(pk__in=node_ids)
        .select_related("site", "rack", "leaf_switch")
        .order_by("hostname")
    )
    site_ids = {n.site_id for n in nodes} | {o.site_id for o in orders}
    rack_ids = {n.rack_id for n in nodes}
    switch_ids = {n.leaf_switch_id for n in nodes}
    recent = ~Q(status=IncidentPhase.RESOLVED) | Q(
        resolved_at__gte=now - timedelta(days=RECENT_DAYS)
    )
    scoped = (
        Q(racks__isnull=True, switches__isnull=True, nodes__isnull=True)
        | Q(racks__in=rack_ids)
        | Q(switches__in=switch_ids)
        | Q(nodes__in=node_ids)
    )
    incidents = list(
        _incidents(
            StatusIncident.objects.filter(site_id__in=site_ids)
            .filter(recent)
            .filter(scoped)
            .distinct()
        )
    )
    affected: dict[int, list[str]] = {}
    for incident in incidents:
        racks = {r.pk for r in incident.racks.all()}
        switches = {s.pk for s in incident.switches.all()}
        named = {n.pk for n in incident.nodes.all()}
        affected[incident.pk] = [
            n.hostname
            for n in nodes
            if n.rack_id in racks or n.leaf_switch_id in switches or n.pk in named
        ]
    # Windows of a plan show once its customers were told (the plan's notice), never
    # before the announcement; windows without a plan (the back office's) at once.
    maintenance = list(
        MaintenanceWindow.objects.filter(node_id__in=node_ids, end_at__gt=now)
        .filter(Q(plan__isnull=True) | Q(plan__announced_at__isnull=False))
        .exclude(plan__status=MaintenanceStatus.CANCELLED)
        .select_related("node", "plan")
        .order_by("start_at", "pk")
    )
    sites = [
        _site_status(site, [i for i in incidents if i.site_id == site.pk], maintenance, now)
        for site in Site.objects.filter(pk__in=site_ids).order_by("code")
    ]
    return CustomerStatus(sites=sites, nodes=nodes, affected=affected, maintenance=maintenance)


def status_incident_for_staff(incident_id: int) -> StatusIncident | None:
    return _incidents(StatusIncident.objects.filter(pk=incident_id)).first()


def status_incidents_for_staff() -> QuerySet[StatusIncident]:
    return _incidents(StatusIncident.objects.all()).order_by(
        Case(When(status=IncidentPhase.RESOLVED, then=1), default=0), "-started_at", "-pk"
    )


def component_label(code: str) -> str:
    return gettext(str(dict(Component.choices).get(code, code)))
