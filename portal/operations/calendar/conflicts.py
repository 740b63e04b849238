"""The rules that make a calendar bar stand out, each with the reads it needs:

- a firm booking still to run on a node that is faulty, in maintenance or unhealthy (an
  open health incident);
- a hold that expires soon while other customers ask for that kind of node at that site
  (a quote not yet sent, starting before the hold ends);
- a maintenance window over an active booking of the node.

Each rule answers the text of the conflict, empty when there is none."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings

from billing.models import QuoteItem, QuoteStatus
from inventory.models import ACTIVE_RESERVATION_STATUSES, NodeStatus, ReservationStatus
from portal.operations.calendar.bars import Booking, Frame, Slot
from portal.operations.calendar.rows import Row
from portal.operations.calendar.texts import Texts
from portal.operations.selectors import Owner
from provisioning.models import HealthIncident
from provisioning.models.health import OPEN_INCIDENT_STATUSES

# A quote not yet sent: a customer asking for nodes (what a soon-expiring hold blocks).
ASKING_QUOTE_STATUSES = (QuoteStatus.DRAFT, QuoteStatus.PENDING_APPROVAL, QuoteStatus.APPROVED)
# The node states a firm booking cannot be served on.
BROKEN_NODE_STATUSES = (NodeStatus.FAULTY, NodeStatus.MAINTENANCE)


# --- Firm bookings on broken nodes ---------------------------------------------------------


def unhealthy_read(ids: Any) -> set[int]:
    """The nodes among ``ids`` with an open health incident."""
    return set(
        HealthIncident.objects.filter(node_id__in=ids, status__in=OPEN_INCIDENT_STATUSES)
        .values_list("node_id", flat=True)
        .distinct()
    )


def firm_under_broken_node(booking: Booking, row: Row, now: datetime, texts: Texts) -> str:
    """A firm booking not yet over on a node that is faulty, in maintenance or unhealthy."""
    if not (
        booking.status == ReservationStatus.FIRM
        and booking.end_at > now
        and (row.status in BROKEN_NODE_STATUSES or row.unhealthy)
    ):
        return ""
    state = texts.unhealthy if row.unhealthy else row.status_label
    return texts.under % {"node": row.hostname, "state": state}


# --- Holds that expire while others ask ----------------------------------------------------


@dataclass
class Demand:
    """The holds that expire soon (their ids) and, per (site, node type), the customers
    asking for such nodes: ``(start date, organisation id, organisation name)``."""

    expiring: set[int] = field(default_factory=set)
    asking: dict[tuple[int, int], list[tuple[date, int | None, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )


def demand_read(bookings: Iterable[Booking], rows: Mapping[int, Row], now: datetime) -> Demand:
    """The holds expiring within ``PORTAL_CALENDAR_HOLD_EXPIRY_HOURS`` of ``now`` and the
    quotes not yet sent for their sites and node types (no query when no hold expires)."""
    warn_until = now + timedelta(hours=settings.PORTAL_CALENDAR_HOLD_EXPIRY_HOURS)
    expiring = [
        b
        for b in bookings
        if b.status == ReservationStatus.HOLD and b.expires_at and b.expires_at <= warn_until
    ]
    demand = Demand(expiring={b.pk for b in expiring})
    if not expiring:
        return demand
    for site_pk, type_pk, start_date, org_id, org_name in (
        QuoteItem.objects.filter(
            quote__status__in=ASKING_QUOTE_STATUSES,
            node_type__isnull=False,
            quote__site_id__in={rows[b.node_id].site.pk for b in expiring},
            node_type_id__in={rows[b.node_id].node_type.pk for b in expiring},
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
        demand.asking[(site_pk, type_pk)].append((start_date, org_id, org_name))
    return demand


def hold_wanted_by_others(
    booking: Booking, owner: Owner, row: Row, demand: Demand, frame: Frame, texts: Texts
) -> str:
    """A hold that expires soon while other customers ask for its kind of node at its
    site, from before the hold ends."""
    if booking.pk not in demand.expiring or booking.expires_at is None:
        return ""
    others = {
        name
        for start_date, org_id, name in demand.asking.get((row.site.pk, row.node_type.pk), [])
        if org_id != owner.organisation_id and start_date < booking.end_at.date()
    }
    if not others:
        return ""
    return texts.asked % {
        "at": frame.fmt(booking.expires_at),
        "customers": ", ".join(sorted(others)),
    }


def booking_conflict(
    booking: Booking, owner: Owner, row: Row, demand: Demand, frame: Frame, texts: Texts
) -> str:
    """What makes a hold or firm bar stand out (the two rules apply to different kinds)."""
    return firm_under_broken_node(booking, row, frame.now, texts) or hold_wanted_by_others(
        booking, owner, row, demand, frame, texts
    )


# --- Maintenance over bookings -------------------------------------------------------------


def maintenance_over_bookings(
    slot: Slot, bookings: Sequence[Booking], owners: Mapping[str, Owner], texts: Texts
) -> str:
    """A maintenance window that meets an active booking (its cleaning included) of
    its node: the orders or quotes it would interrupt."""
    over = sorted(
        {
            owners[b.owner_ref].number
            for b in bookings
            if b.status in ACTIVE_RESERVATION_STATUSES
            and b.start_at < slot.end_at
            and b.held_until > slot.start_at
        }
    )
    return texts.over % {"owners": ", ".join(over)} if over else ""
