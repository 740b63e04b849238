"""The customer's decision on a sent quote: accept (an order), reject, or a fresh revision."""

from __future__ import annotations

import ipaddress

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Membership
from billing.models import Order, PaymentMethod, Quote, QuoteStatus
from billing.orders.services import order_create_from_quote
from billing.pricing.periods import site_today
from billing.quotes.services.common import (
    NodesGone,
    discount_limit,
    lock,
    lock_family,
    move,
    notify_staff,
)
from billing.quotes.services.holds import release_holds, supersede_others
from billing.quotes.services.lifecycle import quote_revise, quote_send
from core.errors import DomainError, NotEnoughCapacity
from core.types import Actor
from core.validators import name_check
from inventory.models import Reservation, ReservationStatus


def _check_customer(quote: Quote, user: Actor) -> None:
    if user is not None and user.is_authenticated and not user.is_staff:
        if not Membership.objects.filter(user=user, organisation=quote.organisation).exists():
            raise DomainError(_("This quote belongs to another organisation."))


def _decision_input(name: str, ip: str | None, comment: str = "") -> tuple[str, str | None]:
    """The customer's typed name (and comment) checked; an unusable IP becomes None."""
    name = name_check(name, max_length=200, label=_("Your name"))
    if "\x00" in name or "\x00" in comment:
        raise DomainError(_("The text contains characters that are not allowed."))
    try:
        ip = str(ipaddress.ip_address(ip)) if ip else None
    except ValueError:
        ip = None
    return name, ip


def _check_open(quote: Quote) -> None:
    if quote.status != QuoteStatus.SENT:
        raise DomainError(
            _("Quote %(number)s v%(version)s is %(status)s; it can no longer be accepted.")
            % {
                "number": quote.number,
                "version": quote.version,
                "status": quote.get_status_display(),
            }
        )
    if quote.start_date < site_today(quote.site):
        raise DomainError(
            _("Quote %(number)s was for a rental starting %(day)s; ask for a fresh quote.")
            % {"number": quote.number, "day": quote.start_date.isoformat()}
        )
    if quote.expires_at and timezone.now() >= quote.expires_at:
        raise DomainError(
            _("Quote %(number)s expired at %(when)s.")
            % {"number": quote.number, "when": quote.expiry_text}
        )


@transaction.atomic
def quote_accept(
    *,
    quote: Quote,
    user: Actor,
    name: str,
    ip: str | None,
    payment_method: str = PaymentMethod.BANK_TRANSFER,
) -> Order:
    """Accept a sent quote: an order with its first invoice, holding the quote's nodes
    until the payment deadline (payment makes them firm).

    Raises ``NodesGone`` when any held node was released or taken meanwhile; nothing is
    booked twice and nothing is accepted.
    """
    name, ip = _decision_input(name, ip)
    quote, others = lock_family(quote)
    _check_customer(quote, user)
    _check_open(quote)
    if not name:
        raise DomainError(_("Type your name to accept the quote."))
    if quote.reservation_group:
        held = list(
            Reservation.objects.select_for_update()
            .filter(group=quote.reservation_group)
            .select_related("node")
        )
        lost = [r.node.hostname for r in held if r.status != ReservationStatus.HOLD]
        if lost or not held:
            raise NodesGone(
                _(
                    "The nodes reserved for this quote are no longer held (%(nodes)s). "
                    "Nothing was booked; a fresh quote is needed."
                )
                % {"nodes": ", ".join(lost) or "—"}
            )
    actor = user if user is not None and user.is_authenticated else None
    move(quote, QuoteStatus.ACCEPTED, actor, _("Accepted by %(name)s.") % {"name": name})
    quote.decided_at = timezone.now()
    quote.decided_by = actor
    quote.decided_by_name = name.strip()
    quote.decided_ip = ip
    quote.save()
    supersede_others(others, by=quote, actor=actor)
    return order_create_from_quote(quote=quote, actor=actor, payment_method=payment_method)


@transaction.atomic
def quote_reject(
    *, quote: Quote, user: Actor, name: str, ip: str | None, reason: str = ""
) -> Quote:
    name, ip = _decision_input(name, ip, reason)
    quote = lock(quote)
    _check_customer(quote, user)
    if quote.status != QuoteStatus.SENT:
        raise DomainError(_("Only a sent quote can be rejected."))
    actor = user if user is not None and user.is_authenticated else None
    release_holds(quote, actor, _("Quote rejected."))
    move(quote, QuoteStatus.REJECTED, actor, reason)
    quote.decided_at = timezone.now()
    quote.decided_by = actor
    quote.decided_by_name = name.strip()
    quote.decided_ip = ip
    quote.decision_comment = reason
    quote.save()
    return quote


def quote_refresh(*, quote: Quote) -> Quote:
    """After ``NodesGone``: a fresh revision with other nodes, sent at today's prices.

    The discount approved for the old version carries over; a draft revision left by an
    earlier try is reused. If not enough nodes are free, the revision stays a draft, the
    salesperson is emailed, and ``NotEnoughCapacity`` says how many are free and from when.
    """
    revision = Quote.objects.filter(previous=quote, status=QuoteStatus.DRAFT).first()
    if revision is None:
        revision = quote_revise(quote=quote, actor=quote.created_by)
    with transaction.atomic():
        revision = lock(revision)
        if revision.extra_discount > discount_limit(quote.created_by):
            move(revision, QuoteStatus.PENDING_APPROVAL, None, _("Carried over."))
            move(
                revision,
                QuoteStatus.APPROVED,
                None,
                _("Discount approved on v%(v)s carried over.") % {"v": quote.version},
            )
    try:
        return quote_send(quote=revision, actor=quote.created_by)
    except NotEnoughCapacity as exc:
        with transaction.atomic():
            notify_staff(
                _("Customer could not accept quote %(number)s: nodes gone")
                % {"number": quote.number},
                _(
                    "%(org)s tried to accept quote %(number)s v%(version)s but its nodes were "
                    "no longer held, and a fresh revision (v%(new)s, a draft) could not be "
                    "placed: %(reason)s"
                )
                % {
                    "org": quote.organisation.name,
                    "number": quote.number,
                    "version": quote.version,
                    "new": revision.version,
                    "reason": exc.message,
                },
                [quote.created_by.email] if quote.created_by.email else [],
            )
        raise
