"""Reads of the operations console that more than one page needs: who a booking belongs
to (the order or quote behind a reservation's ``owner_ref``, its customer and contract) and
the bookings a maintenance window touches. The reservation calendar is the
``portal.operations.calendar`` package.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet, Value
from django.db.models.functions import Concat
from django.urls import reverse

from accounts.models import Organisation
from billing.models import Contract, Order, Quote
from inventory.models import ACTIVE_RESERVATION_STATUSES, Reservation, ReservationStatus

# Bookings shown on the calendar: active ones and those that ran to their end.
SHOWN_RESERVATION_STATUSES = (*ACTIVE_RESERVATION_STATUSES, ReservationStatus.ENDED)


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
