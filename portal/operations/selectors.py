"""Reads of the operations console.

``calendar_window`` is the reservation calendar's one selector: every node row of the page
with its bars (holds with their expiry, firm bookings, cleaning, maintenance, faulty
periods, swaps), the order, customer and contract behind each booking and the conflicts,
in a fixed number of queries whatever the number of nodes shown (pinned in
tests/portal/test_operations_calendar.py, measured by bench/operations.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet, Value
from django.db.models.functions import Coalesce, Concat, NullIf
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Organisation
from billing.models import Contract, Order, Quote, QuoteItem, QuoteStatus
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    MaintenanceWindow,
    Node,
    NodeEvent,
    NodeStatus,
    NodeType,
    Reservation,
    ReservationStatus,
    Site,
)
from provisioning.models import HealthIncident, NodeSwap
from provisioning.models.health import OPEN_INCIDENT_STATUSES

# Bookings shown on the calendar: active ones and those that ran to their end.
SHOWN_RESERVATION_STATUSES = (*ACTIVE_RESERVATION_STATUSES, ReservationStatus.ENDED)
# A quote not yet sent: a customer asking for nodes (what a soon-expiring hold blocks).
ASKING_QUOTE_STATUSES = (QuoteStatus.DRAFT, QuoteStatus.PENDING_APPROVAL, QuoteStatus.APPROVED)
ZOOM_DAYS = {"day": 1, "week": 7, "month": 30, "quarter": 90}
BAR_KINDS = ("hold", "firm", "cleaning", "maintenance", "faulty", "swap")


# --- Who a booking belongs to -------------------------------------------------------------


@dataclass(frozen=True)
class Owner:
    """What a reservation's ``owner_ref`` names: an order or a quote, its customer."""

    ref: str
    kind: str  # "order" | "quote" | "other"
    number: str
    organisation_id: int | None = None
    customer: str = ""
    contract: str = ""
    url: str = ""
    order_pk: int | None = None


def owners_of(refs: Iterable[str]) -> dict[str, Owner]:
    """The order or quote behind each ``owner_ref`` (``order:NUMBER``,
    ``quote:NUMBER-vN``): three queries whatever their number."""
    refs = set(refs)
    order_numbers = {r.split(":", 1)[1] for r in refs if r.startswith("order:")}
    quote_keys: dict[tuple[str, int], str] = {}
    for r in refs:
        if r.startswith("quote:") and "-v" in r:
            number, _sep, version = r.split(":", 1)[1].rpartition("-v")
            if version.isdigit():
                quote_keys[(number, int(version))] = r
    out: dict[str, Owner] = {}
    orders = list(
        Order.objects.filter(number__in=order_numbers).select_related("organisation")
        if order_numbers
        else []
    )
    contracts: dict[int, str] = {}
    if orders:
        for order_id, number in (
            Contract.objects.filter(order__in=orders)
            .order_by("order_id", "pk")
            .values_list("order_id", "number")
        ):
            contracts[order_id] = number  # the latest contract of the order
    for o in orders:
        out[f"order:{o.number}"] = Owner(
            ref=f"order:{o.number}",
            kind="order",
            number=o.number,
            organisation_id=o.organisation_id,
            customer=o.organisation.name,
            contract=contracts.get(o.pk, ""),
            url=reverse("admin:billing_order_change", args=[o.pk]),
            order_pk=o.pk,
        )
    if quote_keys:
        numbers = {n for n, _v in quote_keys}
        for q in Quote.objects.filter(number__in=numbers).select_related("organisation"):
            ref = quote_keys.get((q.number, q.version))
            if ref is not None:
                out[ref] = Owner(
                    ref=ref,
                    kind="quote",
                    number=f"{q.number} v{q.version}",
                    organisation_id=q.organisation_id,
                    customer=q.organisation.name,
                    url=reverse("sales:quote_detail", args=[q.pk]),
                )
    for r in refs - set(out):
        out[r] = Owner(ref=r, kind="other", number=r)
    return out


def owner_refs_of_organisation(organisation_id: int) -> QuerySet[Any]:
    """The ``owner_ref`` values of an organisation's orders (a subquery)."""
    return (
        Order.objects.filter(organisation_id=organisation_id)
        .annotate(ref=Concat(Value("order:"), "number"))
        .values("ref")
    )


# --- The calendar --------------------------------------------------------------------------


@dataclass
class Bar:
    kind: str
    start: datetime
    end: datetime
    left: float = 0.0  # percent of the visible window
    width: float = 0.0
    title: str = ""  # the hover text: order, customer, contract, times
    url: str = ""  # a click opens the order (or the maintenance plan)
    conflict: str = ""  # why it stands out, empty when it does not
    owner: Owner | None = None
    expires_at: datetime | None = None


@dataclass
class Row:
    """One node's row: its place (site, scalable unit or leaf, rack) and its bars."""

    pk: int
    hostname: str
    status: str
    status_label: str
    site: Site
    node_type: NodeType
    unit: str  # scalable unit, or the leaf switch
    rack: str
    bars: list[Bar] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    unhealthy: bool = False


@dataclass
class Calendar:
    start: datetime
    end: datetime
    rows: list[Row]
    total: int  # nodes matching the filters
    page: int
    pages: int
    conflicts: int


class _Booking(NamedTuple):
    pk: int
    node_id: int
    start_at: datetime
    end_at: datetime
    held_until: datetime
    status: str
    expires_at: datetime | None
    owner_ref: str


def _node_queryset(
    *,
    site_id: int | None,
    node_type_id: int | None,
    status: str,
    organisation_id: int | None,
    start: datetime,
    end: datetime,
) -> QuerySet[Node]:
    nodes = Node.objects.all()
    if site_id:
        nodes = nodes.filter(site_id=site_id)
    if node_type_id:
        nodes = nodes.filter(node_type_id=node_type_id)
    if status:
        nodes = nodes.filter(status=status)
    if organisation_id:
        nodes = nodes.filter(
            Exists(
                Reservation.objects.filter(
                    node=OuterRef("pk"),
                    status__in=SHOWN_RESERVATION_STATUSES,
                    held_from__lt=end,
                    held_until__gt=start,
                    owner_ref__in=owner_refs_of_organisation(organisation_id),
                )
            )
        )
    return nodes


def _place(bar: Bar, start: datetime, end: datetime, span: float) -> Bar:
    a, b = max(bar.start, start), min(bar.end, end)
    bar.left = round(100 * (a - start).total_seconds() / span, 3)
    bar.width = round(max(100 * (b - a).total_seconds() / span, 0.15), 3)
    return bar


def _fmt(value: datetime, tz: Any) -> str:
    return value.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def _faulty_periods(
    events: Sequence[tuple[int, str, str, datetime]],
    faulty_now: dict[int, datetime],
    end: datetime,
) -> dict[int, list[tuple[datetime, datetime]]]:
    """Per node, ``[from, to)`` while it was faulty (from its event history; a node that
    is faulty now with no event is faulty since its status changed)."""
    out: dict[int, list[tuple[datetime, datetime]]] = defaultdict(list)
    since: dict[int, datetime] = {}
    for node_id, from_status, to_status, at in events:
        if to_status == NodeStatus.FAULTY:
            since.setdefault(node_id, at)
        elif from_status == NodeStatus.FAULTY and node_id in since:
            out[node_id].append((since.pop(node_id), at))
    for node_id, changed_at in faulty_now.items():
        out[node_id].append((since.pop(node_id, changed_at), end))
    return out


def calendar_window(
    *,
    start: datetime,
    end: datetime,
    site_id: int | None = None,
    node_type_id: int | None = None,
    status: str = "",
    organisation_id: int | None = None,
    page: int = 1,
    page_size: int | None = None,
    now: datetime | None = None,
) -> Calendar:
    """The calendar of ``[start, end)`` for the nodes matching the filters (one page of
    ``page_size`` rows, or all of them with ``None``), in a fixed number of queries:
    the nodes (and their count when paged), sites, node types, bookings, maintenance
    windows, faulty events, swaps, open health incidents, the orders and quotes behind
    the bookings (with contracts), and the quotes asking for nodes a soon-expiring hold
    keeps. Rows and bookings are read as tuples: no model instance per row."""
    now = now or timezone.now()
    tz = timezone.get_current_timezone()
    span = (end - start).total_seconds()
    matching = _node_queryset(
        site_id=site_id,
        node_type_id=node_type_id,
        status=status,
        organisation_id=organisation_id,
        start=start,
        end=end,
    )
    ordered = matching.annotate(
        unit=Coalesce(NullIf("leaf_switch__scalable_unit", Value("")), "leaf_switch__name")
    ).order_by("site__code", "unit", "rack__name", "hostname")
    columns = (
        "pk",
        "hostname",
        "status",
        "status_changed_at",
        "site_id",
        "node_type_id",
        "unit",
        "rack__name",
    )
    ids: Any
    if page_size:
        total = matching.count()
        pages = max(1, math.ceil(total / page_size))
        page = min(max(page, 1), pages)
        values = list(ordered.values_list(*columns)[(page - 1) * page_size : page * page_size])
        ids = [v[0] for v in values]
    else:
        values = list(ordered.values_list(*columns))
        total, pages, page = len(values), 1, 1
        ids = matching.values("pk")  # a subquery: no list of ids to send back
    if not values:
        return Calendar(start, end, [], total, page, pages, 0)
    sites = {s.pk: s for s in Site.objects.all()}
    types = {t.pk: t for t in NodeType.objects.all()}
    labels = {value: str(label) for value, label in NodeStatus.choices}
    rows: dict[int, Row] = {}
    faulty_now: dict[int, datetime] = {}
    for pk, hostname, node_status, changed_at, s_id, t_id, unit, rack in values:
        rows[pk] = Row(
            pk=pk,
            hostname=hostname,
            status=node_status,
            status_label=labels.get(node_status, node_status),
            site=sites[s_id],
            node_type=types[t_id],
            unit=unit or "",
            rack=rack,
        )
        if node_status == NodeStatus.FAULTY:
            faulty_now[pk] = changed_at

    reservations = [
        _Booking(*v)
        for v in Reservation.objects.filter(
            node_id__in=ids,
            status__in=SHOWN_RESERVATION_STATUSES,
            held_from__lt=end,
            held_until__gt=start,
        ).values_list(
            "pk", "node_id", "start_at", "end_at", "held_until", "status", "expires_at", "owner_ref"
        )
    ]
    windows = list(
        MaintenanceWindow.objects.filter(node_id__in=ids, start_at__lt=end, end_at__gt=start)
        .order_by()
        .values_list("node_id", "start_at", "end_at", "reason", "plan_id", "plan__title")
    )
    events = list(
        NodeEvent.objects.filter(node_id__in=ids, created_at__lt=end)
        .filter(Q(to_status=NodeStatus.FAULTY) | Q(from_status=NodeStatus.FAULTY))
        .order_by("created_at", "pk")
        .values_list("node_id", "from_status", "to_status", "created_at")
    )
    swaps = list(
        NodeSwap.objects.filter(Q(failed_node_id__in=ids) | Q(spare_node_id__in=ids))
        .filter(failed_at__lt=end)
        .filter(Q(restored_at__isnull=True) | Q(restored_at__gt=start))
        .values_list(
            "failed_node_id",
            "failed_node__hostname",
            "spare_node_id",
            "spare_node__hostname",
            "failed_at",
            "restored_at",
            "reason",
        )
    )
    unhealthy = set(
        HealthIncident.objects.filter(node_id__in=ids, status__in=OPEN_INCIDENT_STATUSES)
        .values_list("node_id", flat=True)
        .distinct()
    )
    owners = owners_of({r.owner_ref for r in reservations})
    warn_until = now + timedelta(hours=settings.PORTAL_CALENDAR_HOLD_EXPIRY_HOURS)
    expiring = [
        r
        for r in reservations
        if r.status == ReservationStatus.HOLD and r.expires_at and r.expires_at <= warn_until
    ]
    expiring_ids = {r.pk for r in expiring}
    asking: dict[tuple[int, int], list[tuple[Any, int | None, str]]] = defaultdict(list)
    if expiring:
        for site_pk, type_pk, start_date, org_id, org_name in (
            QuoteItem.objects.filter(
                quote__status__in=ASKING_QUOTE_STATUSES,
                node_type__isnull=False,
                quote__site_id__in={rows[r.node_id].site.pk for r in expiring},
                node_type_id__in={rows[r.node_id].node_type.pk for r in expiring},
            )
            .values_list(
                "quote__site_id",
                "node_type_id",
                "quote__start_date",
                "quote__organisation_id",
                "quote__organisation__name",
            )
            .distinct()
        ):
            asking[(site_pk, type_pk)].append((start_date, org_id, org_name))

    # The texts, translated once (not once per bar).
    t_contract = _("contract %(number)s")
    t_expires = _("hold expires %(at)s")
    t_cleaning = _("Cleaning after %(owner)s until %(at)s")
    t_under = _("%(node)s is %(state)s under a firm booking")
    t_unhealthy = _("unhealthy")
    t_asked = _("The hold expires %(at)s and %(customers)s ask for this kind of node")
    t_over = _("Maintenance over the booking of %(owners)s")
    t_faulty = _("Faulty %(from)s – %(to)s")
    t_swap = _("Swap %(failed)s → %(spare)s: %(reason)s")
    plan_url = reverse("operations:maintenance_detail", args=[0]).replace("/0/", "/{}/")

    for node_id in unhealthy:
        rows[node_id].unhealthy = True
    booked: dict[int, list[_Booking]] = defaultdict(list)
    for r in reservations:
        booked[r.node_id].append(r)
        row = rows[r.node_id]
        owner = owners[r.owner_ref]
        label = owner.number if owner.kind != "other" else r.owner_ref
        parts = [label]
        if owner.customer:
            parts.append(owner.customer)
        if owner.contract:
            parts.append(t_contract % {"number": owner.contract})
        parts.append(f"{_fmt(r.start_at, tz)} – {_fmt(r.end_at, tz)}")
        is_hold = r.status == ReservationStatus.HOLD
        if is_hold and r.expires_at:
            parts.append(t_expires % {"at": _fmt(r.expires_at, tz)})
        bar = Bar(
            kind="hold" if is_hold else "firm",
            start=r.start_at,
            end=r.end_at,
            title=" · ".join(parts),
            url=owner.url,
            owner=owner,
            expires_at=r.expires_at,
        )
        if (
            r.status == ReservationStatus.FIRM
            and r.end_at > now
            and (row.status in (NodeStatus.FAULTY, NodeStatus.MAINTENANCE) or row.unhealthy)
        ):
            bar.conflict = t_under % {
                "node": row.hostname,
                "state": t_unhealthy if row.unhealthy else row.status_label,
            }
        if r.pk in expiring_ids and r.expires_at is not None:
            others = [
                name
                for start_date, org_id, name in asking.get((row.site.pk, row.node_type.pk), [])
                if org_id != owner.organisation_id and start_date < r.end_at.date()
            ]
            if others:
                bar.conflict = t_asked % {
                    "at": _fmt(r.expires_at, tz),
                    "customers": ", ".join(sorted(set(others))),
                }
        if r.start_at < end and r.end_at > start:
            row.bars.append(_place(bar, start, end, span))
        if r.held_until > r.end_at and r.end_at < end and r.held_until > start:
            row.bars.append(
                _place(
                    Bar(
                        kind="cleaning",
                        start=r.end_at,
                        end=r.held_until,
                        title=t_cleaning % {"owner": label, "at": _fmt(r.held_until, tz)},
                        url=owner.url,
                        owner=owner,
                    ),
                    start,
                    end,
                    span,
                )
            )
    for node_id, w_start, w_end, reason, plan_id, plan_title in windows:
        row = rows[node_id]
        bar = Bar(
            kind="maintenance",
            start=w_start,
            end=w_end,
            title=f"{plan_title or reason} · {_fmt(w_start, tz)} – {_fmt(w_end, tz)}",
            url=plan_url.format(plan_id) if plan_id else "",
        )
        over = sorted(
            {
                owners[r.owner_ref].number
                for r in booked.get(node_id, [])
                if r.status in ACTIVE_RESERVATION_STATUSES
                and r.start_at < w_end
                and r.held_until > w_start
            }
        )
        if over:
            bar.conflict = t_over % {"owners": ", ".join(over)}
        row.bars.append(_place(bar, start, end, span))
    for node_id, periods in _faulty_periods(events, faulty_now, end).items():
        for a, b in periods:
            if node_id in rows and a < end and b > start:
                rows[node_id].bars.append(
                    _place(
                        Bar(
                            kind="faulty",
                            start=a,
                            end=b,
                            title=t_faulty
                            % {"from": _fmt(a, tz), "to": _fmt(b, tz) if b < end else "…"},
                        ),
                        start,
                        end,
                        span,
                    )
                )
    for failed_id, failed_name, spare_id, spare_name, failed_at, restored_at, reason in swaps:
        until = restored_at or now
        if until <= failed_at:
            until = failed_at + timedelta(minutes=1)
        title = t_swap % {"failed": failed_name, "spare": spare_name or "—", "reason": reason[:80]}
        for node_id in (failed_id, spare_id):
            if node_id in rows:
                rows[node_id].bars.append(
                    _place(
                        Bar(kind="swap", start=failed_at, end=until, title=title), start, end, span
                    )
                )
    conflicts = 0
    order = {kind: i for i, kind in enumerate(BAR_KINDS)}
    for row in rows.values():
        row.bars.sort(key=lambda b: (order[b.kind], b.start))
        row.conflicts = [b.conflict for b in row.bars if b.conflict]
        conflicts += len(row.conflicts)
    return Calendar(start, end, list(rows.values()), total, page, pages, conflicts)


# --- Maintenance: who a window touches ------------------------------------------------------


@dataclass
class Affected:
    """One booking a maintenance window touches: its order or quote, customer, nodes."""

    owner: Owner
    status: str  # hold | firm
    nodes: list[str]
    start_at: datetime
    end_at: datetime


def affected_bookings(reservations: Sequence[Reservation]) -> list[Affected]:
    """The bookings behind ``reservations`` (``inventory.selectors.maintenance_clashes``),
    one per order or quote, with the hostnames it would lose."""
    owners = owners_of({r.owner_ref for r in reservations})
    grouped: dict[str, Affected] = {}
    for r in reservations:
        item = grouped.get(r.owner_ref)
        if item is None:
            item = grouped[r.owner_ref] = Affected(
                owner=owners[r.owner_ref],
                status=r.status,
                nodes=[],
                start_at=r.start_at,
                end_at=r.end_at,
            )
        item.nodes.append(r.node.hostname)
        if r.status == ReservationStatus.FIRM:
            item.status = r.status
    return sorted(grouped.values(), key=lambda a: (a.owner.customer, a.owner.number))


def organisations_of(affected: Sequence[Affected]) -> list[Organisation]:
    ids = {a.owner.organisation_id for a in affected if a.owner.organisation_id}
    return list(Organisation.objects.filter(pk__in=ids).order_by("name"))
