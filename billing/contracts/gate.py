"""The gate to provisioning: an order is provisioned only when it is paid **and** its
contract is signed by both parties (or, for a short self-service order, the standard terms
were accepted).

``order_release_for_provisioning`` checks both and records the release once (the unique
``ProvisioningRelease`` row makes it idempotent); the payment path and the signing path
both call it, whichever comes second opens the gate. The release records **when** the run
may start: the rental's start minus the site's lead time (``provision_at``), at once when
that is already past. Before then the nodes may still be another customer's, so the run
must not claim them: ``provisioning_start`` is enqueued at once all the same, and the
provisioning layer starts the run only when ``provision_at`` has come (its beat job
``provisioning_start_due`` starts those whose time comes later).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import (
    CONTRACT_SIGNED,
    ORDER_IN_SERVICE_STATUSES,
    Contract,
    Order,
    OrderStatus,
    ProvisioningRelease,
    Quote,
    Term,
    TermsAcceptance,
)
from core import jobs, lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor

PROVISIONING_START_TASK = "provisioning.tasks.provisioning_start"
SHORT_DAYS = 31  # a daily rental up to a month is "short"


def needs_contract(quote: Quote) -> bool:
    """Sales quotes and terms longer than one month need a signed contract; a short
    self-service order accepts the standard terms instead."""
    if quote.created_by.is_staff:
        return True
    if quote.term == Term.DAY:
        return quote.duration > SHORT_DAYS
    return not (quote.term == Term.MONTH and quote.duration == 1)


def order_status_label(*, status: str, needs_contract: bool, agreed: bool) -> str:
    """The order's status as the customer reads it: before it is released for
    provisioning, what is still missing (the contract or the standard terms, the payment,
    or both); after, its lifecycle status. The one label of every page and the API."""
    if status == OrderStatus.AWAITING_PAYMENT:
        if agreed:
            return _("awaiting payment")
        if needs_contract:
            return _("awaiting contract and payment")
        return _("awaiting terms and payment")
    if status == OrderStatus.PAID and not agreed:
        return _("paid, awaiting contract") if needs_contract else _("paid, awaiting terms")
    return str(OrderStatus(status).label)


def orders_with_agreement(orders: QuerySet[Order]) -> QuerySet[Order]:
    """``orders`` with what ``listed_status_label`` needs, in the same query (lists)."""
    return orders.select_related("quote__created_by").annotate(
        contract_signed=Exists(
            Contract.objects.filter(
                order=OuterRef("pk"), amends__isnull=True, status__in=CONTRACT_SIGNED
            )
        ),
        terms_accepted=Exists(TermsAcceptance.objects.filter(order=OuterRef("pk"))),
    )


def listed_status_label(order: Order) -> str:
    """``order_status_label`` of an order from ``orders_with_agreement``."""
    contract_needed = needs_contract(order.quote)
    signed = bool(getattr(order, "contract_signed", False))
    agreed = signed if contract_needed else signed or bool(getattr(order, "terms_accepted", False))
    return order_status_label(status=order.status, needs_contract=contract_needed, agreed=agreed)


@dataclass(frozen=True)
class GateState:
    paid: bool
    agreed: bool  # contract countersigned or terms accepted
    needs_contract: bool
    contract: Contract | None
    terms: TermsAcceptance | None
    released: bool
    # When the provisioning run begins (recorded at release; planned before it).
    provision_at: datetime | None = None
    lead_time_hours: int = 0
    status: str = ""  # the order's lifecycle status
    # What the organisation must add before the contract can be drafted (translated).
    legal_missing: tuple[str, ...] = ()

    @property
    def status_label(self) -> str:
        return order_status_label(
            status=self.status, needs_contract=self.needs_contract, agreed=self.agreed
        )

    @property
    def missing(self) -> list[str]:
        out = []
        if not self.agreed:
            out.append(_("the signed contract") if self.needs_contract else _("the standard terms"))
        if not self.paid:
            out.append(_("the payment"))
        return out


def gate_state(order: Order) -> GateState:
    contract = order.contracts.filter(amends__isnull=True).order_by("-pk").first()
    terms = TermsAcceptance.objects.filter(order=order).first()
    contract_needed = needs_contract(order.quote)
    if contract_needed:
        agreed = contract is not None and contract.status in CONTRACT_SIGNED
    else:
        agreed = terms is not None or (contract is not None and contract.status in CONTRACT_SIGNED)
    release = ProvisioningRelease.objects.filter(order=order).first()
    if release is not None:
        provision_at = release.provision_at or release.released_at
    else:
        provision_at = provisioning_planned_at(order)
    return GateState(
        paid=order.status in ORDER_IN_SERVICE_STATUSES,  # an ended rental is never released
        agreed=agreed,
        needs_contract=contract_needed,
        contract=contract,
        terms=terms,
        released=release is not None,
        provision_at=provision_at,
        lead_time_hours=order.site.lead_time_hours,
        status=order.status,
        legal_missing=tuple(order.organisation.legal_entity_missing())
        if contract_needed and contract is None
        else (),
    )


def provisioning_planned_at(order: Order) -> datetime:
    """When the order's nodes are set up: its start minus the site's lead time (the site
    needs that long; before it the nodes may still serve the previous booking)."""
    return order.start_at - timedelta(hours=order.site.lead_time_hours)


def order_release_for_provisioning(*, order: Order, actor: Actor = None) -> bool:
    """Enqueue provisioning once the order is paid and agreed; ``True`` when this call
    released it. Safe to call any number of times from either path."""
    with transaction.atomic():
        order = (
            Order.objects.select_for_update(of=("self",))
            .select_related("quote__created_by", "site")
            .get(pk=order.pk)
        )
        state = gate_state(order)
        if state.released or not (state.paid and state.agreed):
            return False
        now = timezone.now()
        provision_at = max(now, provisioning_planned_at(order))
        basis = (
            Text("contract %(n)s signed", n=state.contract.number)
            if state.contract is not None and state.contract.status in CONTRACT_SIGNED
            else Text("standard terms %(v)s accepted", v=state.terms.version)
        )
        try:
            with transaction.atomic():
                ProvisioningRelease.objects.create(
                    order=order, released_at=now, provision_at=provision_at, basis=basis
                )
        except IntegrityError:
            return False
        if provision_at > now:
            reason = Text(
                "Paid and %(basis)s: provisioning begins at %(at)s, %(hours)s hours before "
                "the start.",
                basis=basis,
                at=timezone.localtime(provision_at, order.site.tzinfo).strftime("%Y-%m-%d %H:%M"),
                hours=order.site.lead_time_hours,
            )
        else:
            reason = Text("Paid and %(basis)s: provisioning starts.", basis=basis)
        lifecycle.record_note([order], actor=actor, reason=reason)
        # Billing knows provisioning only by its task's name: the higher layer subscribes
        # (and starts the run when provision_at has come; a beat job starts later ones).
        jobs.enqueue(PROVISIONING_START_TASK, order.pk)
        return True


def terms_accept(*, order: Order, user: Actor, name: str, ip: str | None) -> TermsAcceptance:
    """A short self-service order accepts the standard terms (version, time, person)."""
    name = name.strip()
    if not name or len(name) > 200:
        raise DomainError(_("Type your full name to accept the terms."))
    try:
        ip = str(ipaddress.ip_address(ip)) if ip else None
    except ValueError:
        ip = None
    with transaction.atomic():
        order = (
            Order.objects.select_for_update().select_related("quote__created_by").get(pk=order.pk)
        )
        if needs_contract(order.quote):
            raise DomainError(
                _("Order %(n)s needs a signed contract; standard terms do not apply.")
                % {"n": order.number}
            )
        existing = TermsAcceptance.objects.filter(order=order).first()
        if existing is not None:
            return existing
        acceptance = TermsAcceptance.objects.create(
            order=order,
            version=settings.PORTAL_TERMS_VERSION,
            user=user,
            name=name,
            accepted_at=timezone.now(),
            ip=ip,
        )
        lifecycle.record_note(
            [order],
            actor=user,
            reason=Text(
                "Standard terms %(v)s accepted by %(name)s.", v=acceptance.version, name=name
            ),
        )
    order_release_for_provisioning(order=order, actor=user)
    return acceptance
