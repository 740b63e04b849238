"""The calendar's row query: the nodes matching the filters, ordered by site, scalable unit
(or leaf switch), rack and hostname, one page of them, read as tuples (no model instance
per row) with their sites and node types from two small queries."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet, Value
from django.db.models.functions import Coalesce, NullIf

from inventory.models import Node, NodeStatus, NodeType, Reservation, Site
from portal.operations.calendar.bars import Bar
from portal.operations.selectors import SHOWN_RESERVATION_STATUSES, owner_refs_of_organisation

COLUMNS = (
    "pk",
    "hostname",
    "status",
    "status_changed_at",
    "site_id",
    "node_type_id",
    "unit",
    "rack__name",
)


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
    status_changed_at: datetime
    bars: list[Bar] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    unhealthy: bool = False


@dataclass
class RowPage:
    """The rows of one page by node id, and how the other reads of the page name them."""

    rows: dict[int, Row]
    ids: Any  # the page's node ids, or a subquery of all matching nodes when not paged
    total: int  # nodes matching the filters
    page: int
    pages: int

    def faulty_now(self) -> dict[int, datetime]:
        """The nodes faulty now and since when their status says so."""
        return {
            pk: row.status_changed_at
            for pk, row in self.rows.items()
            if row.status == NodeStatus.FAULTY
        }


def nodes_matching(
    *,
    site_id: int | None,
    node_type_id: int | None,
    status: str,
    organisation_id: int | None,
    start: datetime,
    end: datetime,
) -> QuerySet[Node]:
    """The nodes the filters keep; the customer filter keeps the nodes that customer's
    orders book within ``[start, end)``."""
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


def rows_read(matching: QuerySet[Node], *, page: int, page_size: int | None) -> RowPage:
    """One page of ``page_size`` rows of ``matching`` (its count a query of its own), or
    all of them with ``None``; a page past the last is the last."""
    ordered = matching.annotate(
        unit=Coalesce(NullIf("leaf_switch__scalable_unit", Value("")), "leaf_switch__name")
    ).order_by("site__code", "unit", "rack__name", "hostname")
    ids: Any
    if page_size:
        total = matching.count()
        pages = max(1, math.ceil(total / page_size))
        page = min(max(page, 1), pages)
        values = list(ordered.values_list(*COLUMNS)[(page - 1) * page_size : page * page_size])
        ids = [v[0] for v in values]
    else:
        values = list(ordered.values_list(*COLUMNS))
        total, pages, page = len(values), 1, 1
        ids = matching.values("pk")  # a subquery: no list of ids to send back
    if not values:
        return RowPage({}, ids, total, page, pages)
    sites = {s.pk: s for s in Site.objects.all()}
    types = {t.pk: t for t in NodeType.objects.all()}
    labels = {value: str(label) for value, label in NodeStatus.choices}
    rows = {
        pk: Row(
            pk=pk,
            hostname=hostname,
            status=node_status,
            status_label=labels.get(node_status, node_status),
            site=sites[s_id],
            node_type=types[t_id],
            unit=unit or "",
            rack=rack,
            status_changed_at=changed_at,
        )
        for pk, hostname, node_status, changed_at, s_id, t_id, unit, rack in values
    }
    return RowPage(rows, ids, total, page, pages)
