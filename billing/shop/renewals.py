"""Renewals: ``PORTAL_RENEWAL_DAYS`` before an order ends, a renewal quote for its nodes.

``renewals_offer`` is the beat job. For each running order ending within the window and
without a renewal yet, under the order's row lock (one ``Renewal`` per order, so a run
twice makes nothing twice):

- a quote with the same items, term and duration, starting when the order ends, priced
  from the price book in force, made by the same creator (so the same contract or
  standard-terms path applies) in the customer's language;
- checked against the calendar: where the order's own nodes are free after the end they
  are the ones held, for the customer alone (first refusal), until the quote expires;
  where some are booked by someone else, the nearest placement of the same types is held
  instead and the quote's notes say which nodes change;
- no room at all: no quote; the renewal records why (with the earliest full-count start)
  and the customer is told;
- an organisation that renews automatically has the quote accepted at once when it keeps
  the same nodes (a new order with its invoice, and its contract or terms, as usual); a
  renewal that would move them to other nodes waits for the customer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from billing.models import ORDER_IN_SERVICE_STATUSES, Order, Renewal
from billing.orders.acceptance import quote_accept
from billing.orders.selectors import order_nodes
from billing.quotes.services import common as quote_common
from billing.quotes.services.lifecycle import quote_create, quote_send
from billing.quotes.services.pricing import quote_items
from core import jobs, lifecycle
from core.errors import DomainError
from core.texts import Text

logger = logging.getLogger(__name__)

EMAIL_TASK = "billing.tasks.renewal_email"
RENEWABLE_STATUSES = ORDER_IN_SERVICE_STATUSES


@dataclass
class RenewalsResult:
    offered: int = 0
    unavailable: int = 0


def renewals_offer(*, now: datetime | None = None) -> RenewalsResult:
    """The beat job (idempotent): a renewal for each order ending within the window."""
    now = now or timezone.now()
    horizon = now + timedelta(days=settings.PORTAL_RENEWAL_DAYS)
    result = RenewalsResult()
    due = list(
        Order.objects.filter(
            status__in=RENEWABLE_STATUSES,
            end_at__gt=now,
            end_at__lte=horizon,
            renewal__isnull=True,
        )
        .order_by("end_at", "pk")
        .values_list("pk", flat=True)
    )
    for pk in due:
        renewal = renewal_offer(order_id=pk)
        if renewal is None:
            continue
        if renewal.quote_id:
            result.offered += 1
        else:
            result.unavailable += 1
    return result


@transaction.atomic
def renewal_offer(*, order_id: int) -> Renewal | None:
    """Make the order's renewal once; ``None`` when it exists already."""
    order = (
        Order.objects.select_for_update(of=("self",))
        .select_related("quote__created_by", "site", "organisation")
        .get(pk=order_id)
    )
    if Renewal.objects.filter(order=order).exists():
        return None
    old = order.quote
    creator = old.created_by
    current = order_nodes(order)
    start_date = timezone.localtime(order.end_at, order.site.tzinfo).date()
    try:
        with transaction.atomic():
            with translation.override(old.language):
                quote = quote_create(
                    site=order.site,
                    organisation=order.organisation,
                    contact_name=old.contact_name,
                    contact_email=old.contact_email,
                    term=old.term,
                    duration=old.duration,
                    start_date=start_date,
                    items=quote_items(old),
                    actor=creator,
                    extra_discount=min(old.extra_discount, quote_common.discount_limit(creator)),
                    language=old.language,
                )
                quote = quote_send(
                    quote=quote,
                    actor=creator,
                    prefer_nodes=[n.pk for n in current],
                    continues=f"order:{order.number}",
                )
    except DomainError as exc:
        renewal = Renewal.objects.create(order=order, unavailable=exc.message)
        with translation.override(old.language):
            why = Text("No renewal could be offered: %(why)s", why=exc.message)
        lifecycle.record_note([order], reason=why)
        jobs.enqueue(EMAIL_TASK, renewal.pk)
        return renewal
    old_hosts = [n.hostname for n in current]
    new_hosts = [h for g in quote.placement.get("groups", []) for h in g.get("hostnames", [])]
    renewal = Renewal.objects.create(
        order=order,
        quote=quote,
        kept=[h for h in old_hosts if h in new_hosts],
        replaced=[h for h in old_hosts if h not in new_hosts],
        offered=[h for h in new_hosts if h not in old_hosts],
    )
    with translation.override(old.language):
        quote.notes = _renewal_notes(order, renewal)
        offered = Text(
            "Renewal quote %(q)s offered (%(how)s).",
            q=quote.number,
            how=Text("same nodes held") if renewal.same_nodes else Text("other nodes offered"),
        )
    quote.save(update_fields=["notes"])
    lifecycle.record_note([order], reason=offered)
    if order.organisation.auto_renew and renewal.same_nodes:
        _auto_accept(renewal)
    jobs.enqueue(EMAIL_TASK, renewal.pk)
    return renewal


def _renewal_notes(order: Order, renewal: Renewal) -> str:
    ends = timezone.localtime(order.end_at, order.site.tzinfo).strftime("%Y-%m-%d")
    head = _("Renewal of order %(n)s, which ends on %(d)s.") % {"n": order.number, "d": ends}
    if not renewal.replaced:
        return (
            head
            + " "
            + _("The same nodes continue: %(nodes)s.") % {"nodes": ", ".join(renewal.kept)}
        )
    return " ".join(
        [
            head,
            _("No longer free after the end: %(old)s. Offered instead: %(new)s.")
            % {"old": ", ".join(renewal.replaced), "new": ", ".join(renewal.offered)},
            _("Data does not move between nodes: copy what you need before the end."),
        ]
    )


def _auto_accept(renewal: Renewal) -> None:
    """Accept the renewal quote for an organisation that renews automatically; where the
    rules refuse it (e.g. no payment method possible in time) the offer stays open."""
    quote = renewal.quote
    try:
        with transaction.atomic(), translation.override(quote.language):
            quote_accept(
                quote=quote,
                user=None,
                name=_("Automatic renewal (organisation setting)"),
                ip=None,
            )
    except DomainError as exc:
        logger.info("Renewal %s not accepted automatically: %s", quote.number, exc.message)
        with translation.override(quote.language):
            why = Text("The renewal could not be accepted automatically: %(why)s", why=exc.message)
        lifecycle.record_note([renewal.order], reason=why)
        return
    renewal.auto_accepted = True
    renewal.save(update_fields=["auto_accepted"])
