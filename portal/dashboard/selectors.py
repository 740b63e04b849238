"""Reads for the customer dashboard: one organisation's orders, quotes, invoices, members,
and one order's documents, contract, suspensions and renewal.

Every function takes the organisation (``request.organisation`` behind
``customer_required``) and filters by it: another organisation's order, invoice or quote
is simply not found. The list reads fetch their related rows with ``select_related`` /
``prefetch_related`` here, so a page runs the same number of queries however many rows
it shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Exists, OuterRef, Prefetch, QuerySet
from django.utils.translation import gettext as _

from accounts.models import Membership, Organisation, SshPublicKey
from accounts.selectors import display_name
from billing.contracts import gate
from billing.dunning import services as dunning
from billing.invoicing import ledger
from billing.invoicing import services as invoicing
from billing.models import (
    ORDER_PAID_STATUSES,
    QUOTE_SENT_STATUSES,
    Contract,
    ContractDocument,
    ContractDocumentKind,
    CreditNote,
    Invoice,
    InvoiceStatus,
    Order,
    OrderEvent,
    OrderStatus,
    Quote,
    Renewal,
    Suspension,
    SuspensionEvent,
    UsageRecord,
)
from core.timezones import period_days
from inventory.models import Reservation
from provisioning.models import ValidationRun, ValidationRunStatus
from provisioning.validation import selectors as validation_selectors

# How many members the dashboard names before "and N more".
MEMBERS_SHOWN = 8


def local_period(start_at: datetime, end_at: datetime, tz: tzinfo) -> tuple[date, date]:
    """The first and the last day of the half-open range ``[start_at, end_at)`` in ``tz``."""
    return period_days(start_at, end_at, tz)


def _with_periods(orders: list[Order]) -> list[Order]:
    for order in orders:
        order.first_day, order.last_day = local_period(
            order.start_at, order.end_at, order.site.tzinfo
        )
    return orders


# --- The dashboard ------------------------------------------------------------------------


def order_list_for_org(organisation: Organisation) -> list[Order]:
    """The organisation's orders, newest first, with their site and invoices loaded.

    Each order gets ``first_day`` / ``last_day`` (its period in the site's time zone) and
    ``status_label`` (``billing.contracts.gate.order_status_label``).
    """
    orders = list(
        gate.orders_with_agreement(Order.objects.filter(organisation=organisation))
        .select_related("site")
        .prefetch_related(
            Prefetch("invoices", queryset=Invoice.objects.order_by("issued_at", "pk"))
        )
        .order_by("-created_at", "-pk")
    )
    for order in orders:  # what is still missing, as on the order's page
        order.status_label = gate.listed_status_label(order)
    return _with_periods(orders)


def quote_list_for_org(organisation: Organisation) -> QuerySet[Quote]:
    """Quotes sent to the organisation (every version), newest first."""
    return (
        Quote.objects.filter(organisation=organisation, status__in=QUOTE_SENT_STATUSES)
        .select_related("site")
        .order_by("-created_at", "-pk")
    )


def invoice_list_for_org(organisation: Organisation) -> QuerySet[Invoice]:
    """The organisation's invoices, newest first, with their order and site."""
    return (
        Invoice.objects.filter(organisation=organisation)
        .select_related("order__site")
        .order_by("-issued_at", "-pk")
    )


@dataclass(frozen=True)
class MembersSummary:
    count: int
    shown: list[Membership] = field(default_factory=list)

    @property
    def more(self) -> int:
        return self.count - len(self.shown)


def members_summary(organisation: Organisation, *, limit: int = MEMBERS_SHOWN) -> MembersSummary:
    """How many members the organisation has, and the first ``limit`` of them (one query)."""
    members = list(
        Membership.objects.filter(organisation=organisation)
        .select_related("user")
        .order_by("role", "user__first_name", "user__username")
    )
    return MembersSummary(count=len(members), shown=members[:limit])


# --- One order ----------------------------------------------------------------------------


def order_for_org(organisation: Organisation, number: str) -> Order | None:
    """The organisation's order with this number (``None`` for anyone else's), with the
    site, the quote, the history (and who acted) and the invoices loaded."""
    order = (
        Order.objects.filter(organisation=organisation, number=number)
        .select_related("site", "site__seller", "quote")
        .prefetch_related(
            Prefetch(
                "events",
                queryset=OrderEvent.objects.select_related("actor").order_by("created_at", "pk"),
            ),
            Prefetch("invoices", queryset=Invoice.objects.order_by("issued_at", "pk")),
        )
        .first()
    )
    if order is not None:
        _with_periods([order])
    return order


def order_access_keys(order: Order) -> list[SshPublicKey]:
    """The organisation's SSH keys, each with ``chosen``: whether the order installs it
    (one query)."""
    chosen = Order.ssh_keys.through.objects.filter(order=order, sshpublickey=OuterRef("pk"))
    return list(
        SshPublicKey.objects.filter(organisation_id=order.organisation_id)
        .annotate(chosen=Exists(chosen))
        .order_by("name", "pk")
    )


def order_quote_for_org(organisation: Organisation, number: str) -> Quote | None:
    """The quote the organisation's order ``number`` was accepted from, or ``None``."""
    return (
        Quote.objects.filter(
            organisation=organisation, order__organisation=organisation, order__number=number
        )
        .select_related("site")
        .first()
    )


def acceptance_runs_for_order(order: Order) -> list[ValidationRun]:
    """The order's passed validation runs (each with an acceptance report), newest first."""
    return validation_selectors.passed_runs_for_order(order.pk)


def acceptance_run_for_org(
    organisation: Organisation, number: str, run_id: int
) -> ValidationRun | None:
    """A passed validation run of the organisation's order ``number``, or ``None``."""
    return (
        ValidationRun.objects.filter(
            pk=run_id,
            order__organisation=organisation,
            order__number=number,
            status=ValidationRunStatus.PASSED,
        )
        .select_related("order")
        .first()
    )


def order_reservations(order: Order) -> list[Reservation]:
    """The nodes booked for the order (its current booking group), by hostname."""
    if not order.reservation_group:
        return []
    return list(
        Reservation.objects.filter(group=order.reservation_group)
        .select_related("node__node_type")
        .order_by("node__hostname", "start_at")
    )


@dataclass(frozen=True)
class Booking:
    """Nodes booked over one range, shown as one row: dates in the site's time zone."""

    start_at: datetime
    end_at: datetime
    first_day: date
    last_day: date
    status: str
    status_label: str
    nodes: list[tuple[str, str]]  # (hostname, node type name)


def bookings(order: Order, reservations: list[Reservation]) -> list[Booking]:
    """The reservations grouped by range and status: one row per range."""
    groups: dict[tuple[datetime, datetime, str], list[Reservation]] = {}
    for r in reservations:
        groups.setdefault((r.start_at, r.end_at, r.status), []).append(r)
    tz = order.site.tzinfo
    out = []
    for (start_at, end_at, status), rows in sorted(groups.items(), key=lambda kv: kv[0][:2]):
        first_day, last_day = local_period(start_at, end_at, tz)
        out.append(
            Booking(
                start_at=start_at,
                end_at=end_at,
                first_day=first_day,
                last_day=last_day,
                status=status,
                status_label=rows[0].get_status_display(),
                nodes=[(r.node.hostname, r.node.node_type.display_name) for r in rows],
            )
        )
    return out


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    from_label: str
    to_label: str
    to_status: str
    who: str
    comment: str


def _status_label(status: str) -> str:
    if not status:
        return ""
    return str(OrderStatus(status).label) if status in OrderStatus.values else status


def _who(
    actor: AbstractBaseUser | None,
    viewer: AbstractBaseUser | AnonymousUser,
    member_ids: set[int],
) -> str:
    """Who moved the order, as a customer may read it: never a staff member's name."""
    if actor is None:
        return _("system")
    if actor.pk == viewer.pk:
        return _("you")
    if getattr(actor, "is_staff", False) or getattr(actor, "is_superuser", False):
        return _("staff")
    if actor.pk in member_ids:
        return display_name(actor)
    return _("a former member")


def order_timeline(
    order: Order, *, viewer: AbstractBaseUser | AnonymousUser
) -> list[TimelineEntry]:
    """The order's history (``OrderEvent`` rows, oldest first) for a customer's eyes."""
    member_ids = set(
        Membership.objects.filter(organisation_id=order.organisation_id).values_list(
            "user_id", flat=True
        )
    )
    return [
        TimelineEntry(
            at=event.created_at,
            from_label=_status_label(event.from_status),
            to_label=_status_label(event.to_status),
            to_status=event.to_status,
            who=_who(event.actor, viewer, member_ids),
            comment=event.why(),
        )
        for event in order.events.all()
    ]


def payable_invoice(order: Order, now: datetime) -> Invoice | None:
    """The invoice a "Pay now" link pays: the order awaits payment before its deadline,
    or a later billing period (or usage) of a paid order is open."""
    if order.status != OrderStatus.AWAITING_PAYMENT:
        later = [
            i
            for i in order.invoices.all()
            if i.status == InvoiceStatus.ISSUED and i.period_seq != 1
        ]
        paid = order.status in ORDER_PAID_STATUSES
        return later[0] if paid and later else None
    if order.payment_due_at is not None and now >= order.payment_due_at:
        return None
    invoices = [i for i in order.invoices.all() if i.status == InvoiceStatus.ISSUED]
    return invoices[0] if invoices else None


def invoice_for_org(organisation: Organisation, number: str) -> Invoice | None:
    """The organisation's invoice with this number, or ``None``."""
    return (
        Invoice.objects.filter(organisation=organisation, number=number)
        .select_related("order__site")
        .first()
    )


# --- One order's money documents -----------------------------------------------------------


def order_money(order: Order) -> dict[str, Any]:
    """The order page's credit notes, the customer's credit balance, and the periods of
    the term still to be invoiced with their planned totals (an issued period is its
    invoice row, with what it really charges and whether it is paid)."""
    issued = {i.period_seq for i in order.invoices.all() if i.period_seq}
    periods = invoicing.order_schedule(order)
    return {
        "credit_notes": list(order.credit_notes.select_related("invoice")),
        "credit_balance": ledger.credit_balance(
            organisation=order.organisation_id, currency=order.currency
        ),
        "has_schedule": len(periods) > 1,
        "invoice_schedule": [
            {
                "seq": p.seq,
                "start": p.start,
                "issue_on": p.issue_on,
                "due_on": p.due_on,
                "gross": p.gross,
            }
            for p in periods
            if p.seq not in issued
        ]
        if len(periods) > 1
        else [],
    }


def credit_note_for_org(organisation: Organisation, number: str) -> CreditNote | None:
    """The organisation's credit note with this number, or ``None``."""
    return (
        CreditNote.objects.filter(organisation=organisation, number=number)
        .select_related("order")
        .first()
    )


def order_usage_records(order: Order) -> QuerySet[UsageRecord]:
    """The order's usage records as they were received, with the invoice that billed each."""
    return UsageRecord.objects.filter(order=order).select_related("invoice")


# --- One order's contract ------------------------------------------------------------------


def contract_draft(contract: Contract) -> ContractDocument | None:
    """The contract's draft document (the exact PDF for signature), or ``None``."""
    return ContractDocument.objects.filter(
        contract=contract, kind=ContractDocumentKind.DRAFT
    ).first()


def contract_current_document(contract: Contract) -> ContractDocument | None:
    """The most signed file of the contract: sealed, else signed by the customer, else
    None (the draft)."""
    found = {
        d.kind: d
        for d in ContractDocument.objects.filter(
            contract=contract,
            kind__in=(ContractDocumentKind.SEALED, ContractDocumentKind.SIGNED),
        )
    }
    return found.get(ContractDocumentKind.SEALED) or found.get(ContractDocumentKind.SIGNED)


def contract_sealed(contract: Contract) -> ContractDocument | None:
    """The contract's first sealed document (once countersigned), or ``None``."""
    return (
        ContractDocument.objects.filter(contract=contract, kind=ContractDocumentKind.SEALED)
        .order_by("pk")
        .first()
    )


# --- One order's suspension and renewal -------------------------------------------------


def order_renewal(order: Order) -> Renewal | None:
    """The order's renewal offer with its quote, or ``None``."""
    return Renewal.objects.filter(order=order).select_related("quote").first()


def order_continuity(order: Order) -> dict[str, object]:
    """What the order page shows of dunning and renewal (two small queries)."""
    return {
        "open_suspension": dunning.open_suspension(order),
        "announced_suspension": dunning.announced_suspension(order),
        "renewal": order_renewal(order),
    }


def order_suspensions(order: Order) -> list[Suspension]:
    """The order's suspensions, newest first, with the invoice each was for."""
    return list(order.suspensions.select_related("invoice").order_by("-suspended_at"))


def order_suspension_events(order: Order) -> list[SuspensionEvent]:
    """Every event of the order's suspensions, oldest first."""
    return list(
        SuspensionEvent.objects.filter(suspension__order=order)
        .select_related("suspension__invoice")
        .order_by("created_at", "pk")
    )
