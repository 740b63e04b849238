"""Quotes: create, price, approve, send (with holds), accept, reject, revise, expire."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from celery import chain
from dateutil.relativedelta import relativedelta
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import pricing, selectors
from billing.models import (
    QUOTE_TRANSITIONS,
    ItemKind,
    Order,
    OrderStatus,
    PaymentMethod,
    Quote,
    QuoteEvent,
    QuoteItem,
    QuoteLine,
    QuoteStatus,
    SalesProfile,
    Term,
)
from billing.services.numbers import next_number, site_today
from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from inventory.models import NodeType, Reservation, ReservationStatus, Site
from inventory.placement import leaf_summary
from portal.errors import DomainError, NotEnoughCapacity
from portal.models import Membership, Organisation
from portal.statemachine import transition_check

logger = logging.getLogger(__name__)

DEFAULT_VALIDITY_DAYS = 15
User = AbstractBaseUser


class NodesGone(DomainError):
    """The nodes held for a quote were released or taken before it was accepted."""


@dataclass(frozen=True)
class ItemSpec:
    """One thing a quote asks for: nodes (with optional cards), an add-on, a custom line."""

    kind: str
    quantity: Decimal
    node_type_id: int | None = None
    card_gpu_model_id: int | None = None
    cards_per_node: int = 0
    addon_code: str = ""
    description: str = ""
    unit_price: Decimal | None = None
    discountable: bool = False


# --- Helpers ----------------------------------------------------------------------------


def rental_period(
    *, site: Site, start_date: date, term: str, duration: int
) -> tuple[datetime, datetime]:
    """``[start, end)`` of a rental: from midnight of the start day, site time."""
    start = datetime.combine(start_date, time.min, tzinfo=site.tzinfo)
    if term == pricing.Term.DAY:
        end = start + timedelta(days=duration)
    else:
        end = start + relativedelta(months=duration * pricing.TERM_MONTHS[pricing.Term(term)])
    return start, end


def end_of_day(*, site: Site, day: date) -> datetime:
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=site.tzinfo)


def discount_limit(user: User) -> Decimal:
    profile = SalesProfile.objects.filter(user=user).first()
    return profile.max_discount if profile else Decimal("0")


def _event(quote: Quote, source: str, target: str, actor: User | None, comment: str = "") -> None:
    QuoteEvent.objects.create(
        quote=quote, from_status=source, to_status=target, actor=actor, comment=comment
    )


def _move(quote: Quote, target: str, actor: User | None, comment: str = "") -> None:
    transition_check(
        table=QUOTE_TRANSITIONS,
        labels=QuoteStatus,
        what=_("Quote %(number)s v%(version)s")
        % {"number": quote.number, "version": quote.version},
        source=quote.status,
        target=target,
    )
    _event(quote, quote.status, target, actor, comment)
    quote.status = target


def _lock(quote: Quote) -> Quote:
    return Quote.objects.select_for_update().select_related("site", "organisation").get(pk=quote.pk)


OPEN_STATUSES = (
    QuoteStatus.DRAFT,
    QuoteStatus.PENDING_APPROVAL,
    QuoteStatus.APPROVED,
    QuoteStatus.SENT,
)


def _lock_family(quote: Quote) -> tuple[Quote, list[Quote]]:
    """Lock every version of the quote's number (in one order, so two sends of different
    versions cannot deadlock); return this version and the others."""
    family = list(
        Quote.objects.select_for_update()
        .select_related("site", "organisation")
        .filter(number=quote.number)
        .order_by("pk")
    )
    this = next(q for q in family if q.pk == quote.pk)
    return this, [q for q in family if q.pk != quote.pk]


def _supersede_others(others: list[Quote], *, by: Quote, actor: User | None) -> None:
    """Only one version of a quote may be open: the others stop, and free their nodes."""
    reason = _("Superseded by v%(v)s.") % {"v": by.version}
    for other in others:
        if other.status in OPEN_STATUSES:
            _release_holds(other, actor, reason)
            _move(other, QuoteStatus.SUPERSEDED, actor, reason)
            other.save(update_fields=["status"])


# --- Pricing ----------------------------------------------------------------------------


def _engine_request(
    *, items: list[ItemSpec], term: str, duration: int, on: date, extra_discount: Decimal
) -> pricing.QuoteRequest:
    type_codes = dict(
        NodeType.objects.filter(
            pk__in=[i.node_type_id for i in items if i.node_type_id]
        ).values_list("pk", "code")
    )
    nodes, addons, custom = [], [], []
    for item in items:
        if item.kind == ItemKind.NODE:
            if item.quantity != int(item.quantity):
                raise DomainError(_("Nodes are rented whole: give a whole number of nodes."))
            cards: tuple[tuple[str, int], ...] = ()
            if item.card_gpu_model_id and item.cards_per_node:
                cards = ((f"gpu{item.card_gpu_model_id}", item.cards_per_node),)
            nodes.append(
                pricing.NodeRequest(
                    node_type=type_codes.get(item.node_type_id, f"#{item.node_type_id}"),
                    quantity=int(item.quantity),
                    cards=cards,
                )
            )
        elif item.kind == ItemKind.ADDON:
            addons.append(pricing.AddonRequest(code=item.addon_code, quantity=item.quantity))
        elif item.kind == ItemKind.CUSTOM:
            custom.append(
                pricing.CustomRequest(
                    description=item.description,
                    quantity=item.quantity,
                    unit_price=item.unit_price if item.unit_price is not None else Decimal("-1"),
                    discountable=item.discountable,
                )
            )
        else:
            raise DomainError(_("Unknown line kind “%(kind)s”.") % {"kind": item.kind})
    return pricing.QuoteRequest(
        term=pricing.Term(term),
        duration=duration,
        on=on,
        nodes=tuple(nodes),
        addons=tuple(addons),
        custom=tuple(custom),
        extra_discount=extra_discount,
    )


def quote_price_preview(
    *,
    site: Site,
    term: str,
    duration: int,
    start_date: date,
    items: list[ItemSpec],
    extra_discount: Decimal = Decimal("0"),
) -> tuple[selectors.BookSnapshot, pricing.PricedQuote]:
    """Price without saving anything: live totals, the wizard, instant quotes."""
    snapshot = selectors.price_book_snapshot(book=selectors.price_book_in_force(site=site))
    request = _engine_request(
        items=items, term=term, duration=duration, on=start_date, extra_discount=extra_discount
    )
    try:
        priced = pricing.price_quote(snapshot.engine, request)
    except pricing.PricingError as exc:
        raise DomainError(_("This quote cannot be priced: %(reason)s.") % {"reason": exc}) from exc
    return snapshot, priced


def _line_zh(snapshot: selectors.BookSnapshot, line: pricing.PricedLine) -> str:
    if line.kind == pricing.LineKind.ADDON:
        return snapshot.names_zh.get(f"addon:{line.code}", "")
    if line.kind == pricing.LineKind.FREE:
        return snapshot.names_zh.get(f"free:{line.description}", "")
    return ""


def priced_lines_as_rows(
    snapshot: selectors.BookSnapshot, priced: pricing.PricedQuote, *, quote: Quote | None = None
) -> list[QuoteLine]:
    """The engine's lines as (unsaved) ``QuoteLine`` rows: what quotes store, and what
    previews, the wizard and the PDF show, through the same template partial."""
    return [
        QuoteLine(
            quote=quote,
            position=i,
            kind=line.kind.value,
            code=line.code,
            description=line.description,
            description_zh=_line_zh(snapshot, line),
            quantity=line.quantity,
            unit=line.unit,
            unit_price=line.unit_price,
            periods=line.periods,
            period_unit=line.period_unit,
            list_amount=line.list_amount,
            discount_amount=line.discount_total,
            net=line.net,
            vat=line.vat,
            gross=line.gross,
            note=line.note,
            note_zh=(
                snapshot.names_zh.get(f"addon_note:{line.code}", "")
                if line.kind == pricing.LineKind.ADDON
                else ""
            ),
            adjustments=[
                {
                    "code": a.code,
                    "label": a.label,
                    "label_zh": snapshot.names_zh.get(f"rule:{a.code}", ""),
                    "amount": str(a.amount),
                    "kind": a.kind.value,
                    "params": a.param_dict,
                }
                for a in line.adjustments
            ],
        )
        for i, line in enumerate(priced.lines)
    ]


def _store_pricing(
    quote: Quote, snapshot: selectors.BookSnapshot, priced: pricing.PricedQuote
) -> None:
    quote.lines.all().delete()
    QuoteLine.objects.bulk_create(priced_lines_as_rows(snapshot, priced, quote=quote))
    quote.price_book = snapshot.book
    quote.currency = priced.currency
    quote.vat_rate = priced.vat_rate
    quote.list_total = priced.list_total
    quote.discount_total = priced.discount_total
    quote.net_total = priced.net_total
    quote.vat_total = priced.vat_total
    quote.gross_total = priced.gross_total


def _validate_terms(
    *, site: Site, term: str, duration: int, start_date: date, extra_discount: Decimal
) -> None:
    if term not in pricing.TERM_DURATION:
        raise DomainError(_("Choose a term: daily, monthly, quarterly or annual."))
    lo, hi = pricing.TERM_DURATION[pricing.Term(term)]
    if not (lo <= duration <= hi):
        units = {
            "day": _("days"),
            "month": _("months"),
            "quarter": _("quarters"),
            "year": _("years"),
        }[term]
        raise DomainError(
            _("A %(term)s rental runs from %(lo)s to %(hi)s %(units)s; %(n)s is outside that.")
            % {"term": Term(term).label, "lo": lo, "hi": hi, "units": units, "n": duration}
        )
    if start_date < site_today(site):
        raise DomainError(_("The start date is in the past."))
    if not (Decimal("0") <= extra_discount < Decimal("1")):
        raise DomainError(_("The extra discount must be at least 0% and below 100%."))


def _save_items(quote: Quote, items: list[ItemSpec]) -> None:
    quote.items.all().delete()
    QuoteItem.objects.bulk_create(
        [
            QuoteItem(
                quote=quote,
                position=i,
                kind=item.kind,
                node_type_id=item.node_type_id,
                quantity=item.quantity,
                card_gpu_model_id=item.card_gpu_model_id,
                cards_per_node=item.cards_per_node,
                addon_code=item.addon_code,
                description=item.description,
                unit_price=item.unit_price,
                discountable=item.discountable,
            )
            for i, item in enumerate(items)
        ]
    )


def quote_items(quote: Quote) -> list[ItemSpec]:
    return [
        ItemSpec(
            kind=i.kind,
            quantity=i.quantity,
            node_type_id=i.node_type_id,
            card_gpu_model_id=i.card_gpu_model_id,
            cards_per_node=i.cards_per_node,
            addon_code=i.addon_code,
            description=i.description,
            unit_price=i.unit_price,
            discountable=i.discountable,
        )
        for i in quote.items.order_by("position", "pk")
    ]


def _reprice(quote: Quote, items: list[ItemSpec]) -> None:
    snapshot, priced = quote_price_preview(
        site=quote.site,
        term=quote.term,
        duration=quote.duration,
        start_date=quote.start_date,
        items=items,
        extra_discount=quote.extra_discount,
    )
    _store_pricing(quote, snapshot, priced)


# --- Create and edit --------------------------------------------------------------------


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
    actor: User,
    extra_discount: Decimal = Decimal("0"),
    language: str = "zh-hans",
    notes: str = "",
    valid_days: int = DEFAULT_VALIDITY_DAYS,
) -> Quote:
    """A new draft quote, numbered and priced from the price book in force."""
    _validate_terms(
        site=site,
        term=term,
        duration=duration,
        start_date=start_date,
        extra_discount=extra_discount,
    )
    if not items:
        raise DomainError(_("Add at least one line to the quote."))
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
    _save_items(quote, items)
    _reprice(quote, items)
    quote.save()
    _event(quote, "", QuoteStatus.DRAFT, actor, _("Created."))
    return quote


@transaction.atomic
def quote_update(
    *,
    quote: Quote,
    actor: User,
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
    quote = _lock(quote)
    if not quote.is_editable:
        raise DomainError(
            _("Quote %(number)s v%(version)s was sent and cannot change; make a revision.")
            % {"number": quote.number, "version": quote.version}
        )
    _validate_terms(
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
        _move(quote, QuoteStatus.DRAFT, actor, _("Edited; the approval request was withdrawn."))
    quote.organisation = organisation
    quote.contact_name = contact_name
    quote.contact_email = contact_email
    quote.term = term
    quote.duration = duration
    quote.start_date = start_date
    quote.extra_discount = extra_discount
    quote.language = language
    quote.notes = notes
    quote.valid_until = valid_until
    _save_items(quote, items)
    _reprice(quote, items)
    quote.save()
    return quote


@transaction.atomic
def quote_revise(*, quote: Quote, actor: User) -> Quote:
    """A new version (v2 after v1) with the same number, priced from today's price book.

    The old version stays readable; it is superseded when the new one is sent.
    """
    quote = _lock(quote)
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
    _save_items(revision, items)
    _reprice(revision, items)
    revision.save()
    _event(
        revision,
        "",
        QuoteStatus.DRAFT,
        actor,
        _("Revision of v%(version)s.") % {"version": quote.version},
    )
    return revision


# --- Approval ---------------------------------------------------------------------------


def _approvers_emails() -> list[str]:
    return list(
        SalesProfile.objects.filter(can_approve=True)
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    )


def _notify(subject: str, body: str, to: list[str]) -> None:
    if not to:
        return
    from django.core.mail import send_mail

    transaction.on_commit(lambda: send_mail(subject, body, None, to, fail_silently=True))


@transaction.atomic
def quote_request_approval(*, quote: Quote, actor: User, comment: str = "") -> Quote:
    quote = _lock(quote)
    limit = discount_limit(actor)
    if quote.extra_discount <= limit:
        raise DomainError(
            _("A %(discount)s discount is within your limit of %(limit)s: send the quote.")
            % {"discount": f"{quote.extra_discount:.2%}", "limit": f"{limit:.2%}"}
        )
    _move(quote, QuoteStatus.PENDING_APPROVAL, actor, comment)
    quote.save(update_fields=["status"])
    _notify(
        _("Approval needed: quote %(number)s v%(version)s")
        % {"number": quote.number, "version": quote.version},
        _("%(user)s asks to give %(discount)s extra discount to %(org)s. %(comment)s")
        % {
            "user": actor.get_username(),
            "discount": f"{quote.extra_discount:.2%}",
            "org": quote.organisation.name,
            "comment": comment,
        },
        _approvers_emails(),
    )
    return quote


def _check_approver(quote: Quote, actor: User) -> None:
    profile = SalesProfile.objects.filter(user=actor).first()
    if profile is None or not profile.can_approve:
        raise DomainError(_("Only a sales manager can decide on a discount approval."))
    if quote.extra_discount > profile.max_discount:
        raise DomainError(
            _("A %(discount)s discount is above your own limit of %(limit)s.")
            % {"discount": f"{quote.extra_discount:.2%}", "limit": f"{profile.max_discount:.2%}"}
        )


@transaction.atomic
def quote_approve(*, quote: Quote, actor: User, comment: str = "") -> Quote:
    quote = _lock(quote)
    _check_approver(quote, actor)
    _move(quote, QuoteStatus.APPROVED, actor, comment)
    quote.save(update_fields=["status"])
    _notify(
        _("Approved: quote %(number)s v%(version)s")
        % {"number": quote.number, "version": quote.version},
        _("%(user)s approved the discount. %(comment)s")
        % {"user": actor.get_username(), "comment": comment},
        [quote.created_by.email] if quote.created_by.email else [],
    )
    return quote


@transaction.atomic
def quote_decline_approval(*, quote: Quote, actor: User, comment: str) -> Quote:
    if not comment.strip():
        raise DomainError(_("Say why the discount is not approved."))
    quote = _lock(quote)
    _check_approver(quote, actor)
    if quote.status != QuoteStatus.PENDING_APPROVAL:
        raise DomainError(_("This quote is not waiting for approval."))
    _move(quote, QuoteStatus.DRAFT, actor, _("Approval declined: %(c)s") % {"c": comment})
    quote.save(update_fields=["status"])
    _notify(
        _("Not approved: quote %(number)s v%(version)s")
        % {"number": quote.number, "version": quote.version},
        _("%(user)s did not approve the discount: %(comment)s")
        % {"user": actor.get_username(), "comment": comment},
        [quote.created_by.email] if quote.created_by.email else [],
    )
    return quote


# --- Send: placement and holds ----------------------------------------------------------


def _place_and_hold(quote: Quote, actor: User | None) -> None:
    """Choose concrete nodes per node type (topology-aware) and hold them until expiry."""
    start_at, end_at = rental_period(
        site=quote.site, start_date=quote.start_date, term=quote.term, duration=quote.duration
    )
    wanted: dict[int, int] = defaultdict(int)
    for item in quote.items.filter(kind=ItemKind.NODE):
        wanted[item.node_type_id] += int(item.quantity)
    types = NodeType.objects.in_bulk(list(wanted))
    chosen = []
    placement: dict[str, Any] = {
        "start_at": start_at.isoformat(),
        "end_at": end_at.isoformat(),
        "groups": [],
    }
    for type_id, count in sorted(wanted.items()):
        nt = types[type_id]
        found = inventory_selectors.availability_search(
            site=quote.site, node_type=nt, count=count, start_at=start_at, end_at=end_at
        )
        if found.placement is None:
            when = (
                found.earliest_start.astimezone(quote.site.tzinfo).strftime("%Y-%m-%d %H:%M")
                if found.earliest_start
                else _("not within a year")
            )
            raise NotEnoughCapacity(
                _(
                    "Only %(free)s of %(count)s %(type)s nodes are free at %(site)s for the "
                    "whole period; the full count is free from %(when)s."
                )
                % {
                    "free": found.free_count,
                    "count": count,
                    "type": nt.name,
                    "site": quote.site.display_name,
                    "when": when,
                }
            )
        chosen.extend(found.placement.node_ids)
        placement["groups"].append(
            {
                "node_type": nt.code,
                "node_type_name": nt.name,
                "count": count,
                "fabric": nt.get_fabric_display(),
                "fabric_code": nt.fabric,
                "leaves": leaf_summary(found.placement),
                "racks": len(found.placement.racks),
                "hostnames": [c.hostname for c in found.placement.nodes],
            }
        )
    if not chosen:
        quote.placement = placement
        return
    from inventory.models import Node

    reservations = inventory_services.reservation_hold(
        nodes=list(Node.objects.filter(pk__in=chosen)),
        start_at=start_at,
        end_at=end_at,
        owner_ref=f"quote:{quote.number}-v{quote.version}",
        expires_at=quote.expires_at,
        actor=actor,
    )
    quote.reservation_group = reservations[0].group
    quote.placement = placement


def _release_holds(quote: Quote, actor: User | None, reason: str) -> None:
    if quote.reservation_group:
        inventory_services.reservation_group_release(
            group=quote.reservation_group, actor=actor, reason=reason
        )


@transaction.atomic
def quote_send(*, quote: Quote, actor: User) -> Quote:
    """Freeze the quote, hold its nodes until it expires, then email it with its PDF.

    Every other open version of the same number is superseded (and its holds released);
    if a version was accepted already, nothing is sent.
    """
    quote, others = _lock_family(quote)
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
    # Open until the end of the validity day, but never past the rental's first day.
    quote.expires_at = end_of_day(site=quote.site, day=min(quote.valid_until, quote.start_date))
    _supersede_others(others, by=quote, actor=actor)
    _place_and_hold(quote, actor)
    _move(quote, QuoteStatus.SENT, actor)
    quote.sent_at = timezone.now()
    quote.save()
    from billing import tasks

    quote_id, language = quote.pk, quote.language
    transaction.on_commit(
        lambda: chain(
            tasks.document_render_quote.si(quote_id, language),
            tasks.quote_email.si(quote_id),
        ).delay()
    )
    return quote


# --- The customer's decision ------------------------------------------------------------


def _check_customer(quote: Quote, user: User | None) -> None:
    if user is not None and user.is_authenticated and not user.is_staff:
        if not Membership.objects.filter(user=user, organisation=quote.organisation).exists():
            raise DomainError(_("This quote belongs to another organisation."))


def _decision_input(name: str, ip: str | None, comment: str = "") -> tuple[str, str | None]:
    """The customer's typed name (and comment) checked; an unusable IP becomes None."""
    import ipaddress

    name = name.strip()
    if len(name) > 200:
        raise DomainError(_("Your name can be at most 200 characters."))
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
            _("Quote %(number)s expired on %(day)s.")
            % {"number": quote.number, "day": quote.valid_until.isoformat()}
        )


@transaction.atomic
def quote_accept(
    *,
    quote: Quote,
    user: User | None,
    name: str,
    ip: str | None,
    payment_method: str = PaymentMethod.BANK_TRANSFER,
) -> Order:
    """Accept a sent quote: an order with its first invoice, holding the quote's nodes
    until the payment deadline (payment makes them firm).

    Raises ``NodesGone`` when any held node was released or taken meanwhile; nothing is
    booked twice and nothing is accepted.
    """
    from billing.services.orders import order_create_from_quote

    name, ip = _decision_input(name, ip)
    quote, others = _lock_family(quote)
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
    _move(quote, QuoteStatus.ACCEPTED, actor, _("Accepted by %(name)s.") % {"name": name})
    quote.decided_at = timezone.now()
    quote.decided_by = actor
    quote.decided_by_name = name.strip()
    quote.decided_ip = ip
    quote.save()
    _supersede_others(others, by=quote, actor=actor)
    return order_create_from_quote(quote=quote, actor=actor, payment_method=payment_method)


@transaction.atomic
def quote_reject(
    *, quote: Quote, user: User | None, name: str, ip: str | None, reason: str = ""
) -> Quote:
    name, ip = _decision_input(name, ip, reason)
    quote = _lock(quote)
    _check_customer(quote, user)
    if quote.status != QuoteStatus.SENT:
        raise DomainError(_("Only a sent quote can be rejected."))
    actor = user if user is not None and user.is_authenticated else None
    _release_holds(quote, actor, _("Quote rejected."))
    _move(quote, QuoteStatus.REJECTED, actor, reason)
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
        revision = _lock(revision)
        if revision.extra_discount > discount_limit(quote.created_by):
            _move(revision, QuoteStatus.PENDING_APPROVAL, None, _("Carried over."))
            _move(
                revision,
                QuoteStatus.APPROVED,
                None,
                _("Discount approved on v%(v)s carried over.") % {"v": quote.version},
            )
            revision.save(update_fields=["status"])
    try:
        return quote_send(quote=revision, actor=quote.created_by)
    except NotEnoughCapacity as exc:
        with transaction.atomic():
            _notify(
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
            quote = _lock(Quote(pk=pk))
            if quote.status != QuoteStatus.SENT:
                continue
            _release_holds(quote, None, _("The quote expired."))
            _move(quote, QuoteStatus.EXPIRED, None, _("Validity ended."))
            quote.save(update_fields=["status"])
            expired += 1
    return expired
