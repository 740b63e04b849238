"""A quote's life on the sales side: create, edit, revise, send, expire."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Organisation
from billing.documents.numbers import next_number
from billing.models import Order, OrderStatus, Quote, QuoteStatus
from billing.pricing import selectors
from billing.pricing.periods import quote_expiry, site_today
from billing.pricing.terms import acceptance_refusal
from billing.quotes.services.common import (
    DEFAULT_VALIDITY_DAYS,
    ItemSpec,
    discount_limit,
    lock,
    lock_family,
    move,
)
from billing.quotes.services.holds import Held, place_and_hold, release_holds, supersede_others
from billing.quotes.services.pricing import quote_items, reprice, save_items, validate_terms
from core import jobs, lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor
from core.validators import name_check
from inventory.models import Site


@transaction.atomic
def quote_create(
    *,
    site: Site,
    organisation: Organisation,
    contact_name: str,
    contact_email: str,
    term: str,
    duration: int,
    start_date: date,
    items: list[ItemSpec],
    actor: Actor,
    extra_discount: Decimal = Decimal("0"),
    language: str = "zh-hans",
    notes: str = "",
    valid_days: int = DEFAULT_VALIDITY_DAYS,
) -> Quote:
    """A new draft quote, numbered and priced from the price book in force."""
    validate_terms(
        site=site,
        term=term,
        duration=duration,
        start_date=start_date,
        extra_discount=extra_discount,
    )
    if not items:
        raise DomainError(_("Add at least one line to the quote."))
    contact_name = name_check(contact_name, max_length=200, label=_("The contact name"))
    try:
        validate_email(contact_email)
    except ValidationError as exc:
        raise DomainError(_("The contact email address is not valid.")) from exc
    today = site_today(site)
    book = selectors.price_book_in_force(site=site)
    quote = Quote.objects.create(
        number=next_number(kind="Q", site=site, year=today.year),
        site=site,
        organisation=organisation,
        contact_name=contact_name,
        contact_email=contact_email,
        language=language,
        price_book=book,
        currency=book.currency,
        vat_rate=site.vat_rate,
        term=term,
        duration=duration,
        start_date=start_date,
        valid_until=today + timedelta(days=valid_days),
        extra_discount=extra_discount,
        notes=notes,
        created_by=actor,
    )
    save_items(quote, items)
    reprice(quote, items)
    quote.save()
    lifecycle.record_creation([quote], actor=actor, reason=Text("Created."))
    return quote


@transaction.atomic
def quote_update(
    *,
    quote: Quote,
    actor: Actor,
    organisation: Organisation,
    contact_name: str,
    contact_email: str,
    term: str,
    duration: int,
    start_date: date,
    items: list[ItemSpec],
    extra_discount: Decimal,
    language: str,
    notes: str,
    valid_until: date,
) -> Quote:
    """Change a quote that was not sent yet. Editing withdraws a pending approval."""
    quote = lock(quote)
    if not quote.is_editable:
        raise DomainError(
            _("Quote %(number)s v%(version)s was sent and cannot change; make a revision.")
            % {"number": quote.number, "version": quote.version}
        )
    validate_terms(
        site=quote.site,
        term=term,
        duration=duration,
        start_date=start_date,
        extra_discount=extra_discount,
    )
    if valid_until < site_today(quote.site):
        raise DomainError(_("The validity date is in the past."))
    if not items:
        raise DomainError(_("Add at least one line to the quote."))
    if quote.status != QuoteStatus.DRAFT:
        move(quote, QuoteStatus.DRAFT, actor, _("Edited; the approval request was withdrawn."))
    quote.organisation = organisation
    quote.contact_name = name_check(contact_name, max_length=200, label=_("The contact name"))
    quote.contact_email = contact_email
    quote.term = term
    quote.duration = duration
    quote.start_date = start_date
    quote.extra_discount = extra_discount
    quote.language = language
    quote.notes = notes
    quote.valid_until = valid_until
    save_items(quote, items)
    reprice(quote, items)
    quote.save()
    return quote


@transaction.atomic
def quote_revise(*, quote: Quote, actor: Actor) -> Quote:
    """A new version (v2 after v1) with the same number, priced from today's price book.

    The old version stays readable; it is superseded when the new one is sent.
    """
    quote = lock(quote)
    lapsed = (
        quote.status == QuoteStatus.ACCEPTED
        and Order.objects.filter(
            quote=quote, status__in=[OrderStatus.EXPIRED, OrderStatus.CANCELLED]
        ).exists()
    )
    if quote.status in (QuoteStatus.ACCEPTED, QuoteStatus.SUPERSEDED) and not lapsed:
        raise DomainError(
            _("Quote %(number)s v%(version)s is %(status)s; it cannot be revised.")
            % {
                "number": quote.number,
                "version": quote.version,
                "status": quote.get_status_display(),
            }
        )
    if Quote.objects.filter(previous=quote).exists():
        raise DomainError(_("This version already has a revision; edit that one."))
    items = quote_items(quote)
    today = site_today(quote.site)
    start_date = max(quote.start_date, today)
    revision = Quote.objects.create(
        number=quote.number,
        version=quote.version + 1,
        previous=quote,
        site=quote.site,
        organisation=quote.organisation,
        contact_name=quote.contact_name,
        contact_email=quote.contact_email,
        language=quote.language,
        price_book=quote.price_book,
        currency=quote.currency,
        vat_rate=quote.site.vat_rate,
        term=quote.term,
        duration=quote.duration,
        start_date=start_date,
        valid_until=today + timedelta(days=DEFAULT_VALIDITY_DAYS),
        extra_discount=quote.extra_discount,
        notes=quote.notes,
        created_by=actor,
    )
    save_items(revision, items)
    reprice(revision, items)
    revision.save()
    lifecycle.record_creation(
        [revision], actor=actor, reason=Text("Revision of v%(version)s.", version=quote.version)
    )
    return revision


def quote_send_refusal(quote: Quote, *, now: datetime | None = None) -> str:
    """Why the customer could not accept ``quote`` if it were sent now ("" when they
    could): ``acceptance_refusal`` for its site, start, expiry and the payment methods
    offered. ``quote_send`` refuses such a quote and the sales page says why first."""
    return acceptance_refusal(
        site=quote.site,
        start_date=quote.start_date,
        quote_expires_at=quote.expires_at
        or quote_expiry(
            site=quote.site, valid_until=quote.valid_until, start_date=quote.start_date
        ),
        self_service=not quote.created_by.is_staff,
        now=now,
    )


@transaction.atomic
def quote_send(
    *,
    quote: Quote,
    actor: Actor,
    held: Held | None = None,
    prefer_nodes: Collection[int] = (),
    continues: str = "",
) -> Quote:
    """Freeze the quote, hold its nodes until it expires, then email it with its PDF.
    ``prefer_nodes``: hold these where they are free (a renewal's current nodes);
    ``continues``: the owner of the bookings this quote's period continues on the same
    nodes (a renewal's order), so no cleaning or lead time falls between them.

    Every other open version of the same number is superseded (and its holds released);
    if a version was accepted already, nothing is sent. ``held``: the nodes were placed
    and held by the caller already, in this transaction (``nodes_place_and_hold``).
    """
    quote, others = lock_family(quote)
    live = Order.objects.filter(quote__in=others).exclude(
        status__in=[OrderStatus.EXPIRED, OrderStatus.CANCELLED]
    )
    accepted = next(
        (q for q in others if q.status == QuoteStatus.ACCEPTED and live.filter(quote=q).exists()),
        None,
    )
    if accepted is not None:
        raise DomainError(
            _("Version %(v)s of quote %(number)s was accepted already; this one cannot be sent.")
            % {"v": accepted.version, "number": quote.number}
        )
    if quote.status == QuoteStatus.DRAFT and quote.extra_discount > discount_limit(actor):
        raise DomainError(
            _(
                "A %(discount)s discount is above your limit of %(limit)s: request approval "
                "from a sales manager first."
            )
            % {
                "discount": f"{quote.extra_discount:.2%}",
                "limit": f"{discount_limit(actor):.2%}",
            }
        )
    if quote.status not in (QuoteStatus.DRAFT, QuoteStatus.APPROVED):
        raise DomainError(
            _("Quote %(number)s v%(version)s is %(status)s and cannot be sent.")
            % {
                "number": quote.number,
                "version": quote.version,
                "status": quote.get_status_display(),
            }
        )
    today = site_today(quote.site)
    if quote.start_date < today:
        raise DomainError(_("The start date has passed; edit the quote first."))
    if quote.valid_until < today:
        raise DomainError(_("The validity date has passed; edit the quote first."))
    # Open until the end of the validity day, but never past the last moment accepting
    # can still meet the start (the site's lead time before it).
    quote.expires_at = quote_expiry(
        site=quote.site, valid_until=quote.valid_until, start_date=quote.start_date
    )
    refusal = quote_send_refusal(quote)
    if refusal:
        raise DomainError(refusal)
    supersede_others(others, by=quote, actor=actor)
    place_and_hold(quote, actor, held, prefer=prefer_nodes, continues=continues)
    move(quote, QuoteStatus.SENT, actor)
    quote.sent_at = timezone.now()
    quote.save()
    jobs.enqueue_chain(
        [
            ("billing.tasks.document_render_quote", (quote.pk, quote.language)),
            ("billing.tasks.quote_email", (quote.pk,)),
        ]
    )
    return quote


# --- Expiry -----------------------------------------------------------------------------


def quote_expire_due(*, now: datetime | None = None) -> int:
    """Expire sent quotes past their validity and release their holds. Safe to run twice."""
    now = now or timezone.now()
    expired = 0
    due = list(
        Quote.objects.filter(status=QuoteStatus.SENT, expires_at__lte=now).values_list(
            "pk", flat=True
        )
    )
    for pk in due:
        with transaction.atomic():
            quote = lock(Quote(pk=pk))
            if quote.status != QuoteStatus.SENT:
                continue
            release_holds(quote, None, _("The quote expired."))
            move(quote, QuoteStatus.EXPIRED, None, _("Validity ended."))
            expired += 1
    return expired
