"""Self-service ordering: a customer configures, sees the instant quote, and accepts.

``order_self_service`` places and holds the nodes, then creates the quote, sends it and
accepts it at once (the gapless numbers are taken last, so concurrent orders do not wait
on one another's placement), so the order holds the nodes until its payment deadline
(``billing.pricing.terms.hold_terms``). When another
customer takes the nodes first, it tries the placement again (they may have taken only
some), then raises ``CapacityTaken`` with the nearest alternatives.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.models import Membership, Organisation
from billing.models import ItemKind, Order, OrderStatus, Quote, Term
from billing.orders.acceptance import quote_accept
from billing.pricing import catalog
from billing.pricing import engine as pricing
from billing.pricing.engine import TERM_DURATION
from billing.pricing.engine import Term as PricingTerm
from billing.pricing.periods import (
    earliest_start_date,
    latest_start_date,
    rental_period,
    site_today,
)
from billing.pricing.selectors import BookSnapshot
from billing.pricing.terms import payment_methods_offered
from billing.quotes.services import (
    DEFAULT_VALIDITY_DAYS,
    ItemSpec,
    NodesGone,
    nodes_place_and_hold,
    nodes_wanted,
    quote_create,
    quote_expiry,
    quote_send,
)
from core.errors import DomainError, DoubleBooking, NotEnoughCapacity
from core.types import Actor
from inventory.models import NodeType, Reservation, ReservationStatus, Site
from inventory.selectors import availability_search

logger = logging.getLogger(__name__)

# One first try and two more: a rival may have taken only some of the nodes we chose.
PLACEMENT_ATTEMPTS = 3


class CapacityTaken(NotEnoughCapacity):
    """Not enough nodes for the order (another customer may just have taken them), with
    the nearest configurations that can be placed (``billing.pricing.catalog.Alternative``)."""

    def __init__(self, message: str, *, alternatives: list | None = None) -> None:
        super().__init__(message)
        self.alternatives = alternatives or []


@dataclass(frozen=True)
class Configuration:
    """What a customer configured: one node type, its count, the term and the add-ons."""

    site: Site
    node_type: NodeType
    node_count: int
    term: str
    duration: int
    start_date: date
    card_gpu_model_id: int | None = None
    cards_per_node: int = 0
    addons: tuple[tuple[str, Decimal], ...] = ()  # (add-on code, quantity > 0)

    @property
    def card_code(self) -> str | None:
        if self.card_gpu_model_id and self.cards_per_node:
            return f"gpu{self.card_gpu_model_id}"
        return None


class ConfigurationInvalid(DomainError):
    """A configuration the rules refuse; ``errors`` maps each field to its message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(" ".join(errors.values()))
        self.errors = errors


@dataclass(frozen=True)
class NodeCount:
    """How many nodes a configuration asks for; ``from_gpus`` when GPUs were rounded up."""

    nodes: int
    gpus: int | None = None
    per_node: int | None = None

    @property
    def from_gpus(self) -> bool:
        return self.gpus is not None


def term_units(term: str) -> str:
    return {
        "day": _("days"),
        "month": _("months"),
        "quarter": _("quarters"),
        "year": _("years"),
    }[term]


def configuration_check(
    *,
    site: Site,
    node_type: NodeType,
    node_count: int | None,
    gpu_count: int | None = None,
    cards_per_node: int = 0,
    term: str,
    duration: int,
    start_date: date,
) -> NodeCount:
    """The configuration rules every entry point meets (the configure form, the
    self-service order, the API): a node cap per order, GPUs rounded up to whole nodes,
    the term's duration bounds and a start date not in the past (site time).

    Returns the node count; raises ``ConfigurationInvalid`` with one message per field.
    """
    errors: dict[str, str] = {}
    count: NodeCount | None = None
    cap = catalog.MAX_NODES_PER_ORDER
    if gpu_count is not None:
        per_node = node_type.gpu_count or cards_per_node
        if gpu_count <= 0:
            errors["gpu_count"] = _("Ask for at least one GPU.")
        elif not per_node:
            errors["gpu_count"] = _(
                "%(type)s has no GPUs built in: give a number of nodes, or choose GPU cards first."
            ) % {"type": node_type.display_name}
        else:
            nodes = -(-gpu_count // per_node)
            count = NodeCount(nodes=nodes, gpus=gpu_count, per_node=per_node)
            if nodes > cap:
                errors["gpu_count"] = _(
                    "That is %(nodes)s nodes; one order takes at most %(max)s. For a larger "
                    "cluster, ask our sales team."
                ) % {"nodes": nodes, "max": cap}
    elif node_count is None:
        errors["node_count"] = _("How many nodes? Give a number of nodes or GPUs.")
    elif node_count <= 0:
        errors["node_count"] = _("Order at least one node.")
    elif node_count > cap:
        errors["node_count"] = _(
            "One order takes at most %(max)s nodes. For a larger cluster, ask our sales team."
        ) % {"max": cap}
    else:
        count = NodeCount(nodes=node_count)
    if term not in TERM_DURATION:
        errors["term"] = _("Choose a term.")
    else:
        lo, hi = TERM_DURATION[PricingTerm(term)]
        if not (lo <= duration <= hi):
            errors["duration"] = _("A %(term)s rental runs from %(lo)s to %(hi)s %(units)s.") % {
                "term": dict(Term.choices)[term],
                "lo": lo,
                "hi": hi,
                "units": term_units(term),
            }
    today = site_today(site)
    earliest = earliest_start_date(site)
    latest = latest_start_date(site, months=settings.PRICE_BOOK_HORIZON_MONTHS)
    if start_date < today:
        errors["start_date"] = _(
            "The start date is in the past: today in %(site)s is %(today)s."
        ) % {"site": site.display_name, "today": today.isoformat()}
    elif start_date < earliest:
        errors["start_date"] = ngettext(
            "%(site)s needs %(hours)s hour to prepare the nodes: the earliest start is %(date)s.",
            "%(site)s needs %(hours)s hours to prepare the nodes: the earliest start is %(date)s.",
            site.lead_time_hours,
        ) % {"site": site.display_name, "hours": site.lead_time_hours, "date": earliest.isoformat()}
    elif start_date > latest:
        errors["start_date"] = _(
            "Prices are published for starts up to %(date)s (%(months)s months ahead): "
            "choose an earlier start, or ask our sales team for a quote."
        ) % {"date": latest.isoformat(), "months": settings.PRICE_BOOK_HORIZON_MONTHS}
    if errors or count is None:
        raise ConfigurationInvalid(errors)
    return count


def configuration_items(config: Configuration) -> list[ItemSpec]:
    """The quote items of a configuration: the nodes (with cards), then the add-ons."""
    items = [
        ItemSpec(
            kind=ItemKind.NODE,
            quantity=Decimal(config.node_count),
            node_type_id=config.node_type.pk,
            card_gpu_model_id=config.card_gpu_model_id if config.card_code else None,
            cards_per_node=config.cards_per_node if config.card_code else 0,
        )
    ]
    items.extend(
        ItemSpec(kind=ItemKind.ADDON, quantity=quantity, addon_code=code)
        for code, quantity in config.addons
        if quantity > 0
    )
    return items


def configuration_price(*, snapshot: BookSnapshot, config: Configuration) -> pricing.PricedQuote:
    """The instant quote: the engine over a snapshot the caller already holds.

    The same engine request ``quote_price_preview`` builds for ``configuration_items``,
    without loading the price book again (the configure page keeps to 15 queries).
    """
    cards: tuple[tuple[str, int], ...] = ()
    if config.card_code:
        cards = ((config.card_code, config.cards_per_node),)
    request = pricing.QuoteRequest(
        term=pricing.Term(config.term),
        duration=config.duration,
        on=config.start_date,
        nodes=(
            pricing.NodeRequest(
                node_type=config.node_type.code, quantity=config.node_count, cards=cards
            ),
        ),
        addons=tuple(
            pricing.AddonRequest(code=code, quantity=quantity)
            for code, quantity in config.addons
            if quantity > 0
        ),
    )
    try:
        return pricing.price_quote(snapshot.engine, request)
    except pricing.PricingError as exc:
        raise DomainError(_("This quote cannot be priced: %(reason)s.") % {"reason": exc}) from exc


def _contact(user: Actor, organisation: Organisation) -> tuple[str, str]:
    full_name = getattr(user, "get_full_name", lambda: "")() or ""
    name = full_name.strip() or user.get_username()
    email = (getattr(user, "email", "") or organisation.billing_email or "").strip()
    if not email:
        raise DomainError(
            _("Your account has no email address: add one to your profile before ordering.")
        )
    return name, email


def _alternatives(config: Configuration) -> list:
    """The nearest alternatives to a configuration that could not be placed."""
    start_at, end_at = rental_period(
        site=config.site, start_date=config.start_date, term=config.term, duration=config.duration
    )
    found = availability_search(
        site=config.site,
        node_type=config.node_type,
        count=config.node_count,
        start_at=start_at,
        end_at=end_at,
    )
    sites = list(Site.objects.order_by("code"))
    node_types = list(NodeType.objects.select_related("gpu_model").order_by("code"))
    capacity = catalog.capacity_for_period(
        sites=sites, start_date=config.start_date, term=config.term, duration=config.duration
    )
    return catalog.nearest_alternatives(
        site=config.site,
        node_type=config.node_type,
        node_count=config.node_count,
        cards_per_node=config.cards_per_node,
        start_date=config.start_date,
        availability=None if found.can_place else found,
        capacity=capacity,
        sites=sites,
        node_types=node_types,
    )


class HoldLimitReached(DomainError):
    """The organisation holds as many unpaid orders or nodes as it may."""


def hold_limits(organisation: Organisation) -> dict[str, int]:
    """How many unpaid orders and held nodes an organisation may have at once
    (``SELF_SERVICE_HOLD_LIMITS``; lower without verified legal details)."""
    limits = settings.SELF_SERVICE_HOLD_LIMITS
    key = "verified" if organisation.legal_details_complete else "unverified"
    return limits[key]


def organisation_lock(organisation: Organisation) -> Organisation:
    """Lock the organisation's row until the caller's transaction ends, so that two of its
    orders are checked against the hold limits one after the other, never side by side.

    PostgreSQL: ``SELECT … FOR UPDATE`` on the row. SQLite has no row locks (Django
    drops ``FOR UPDATE``), but the embedded default's transactions are ``IMMEDIATE``
    (``portal.settings.base``): each takes the database's write lock when it begins, so
    writers run one at a time and the check and the write are in the same one."""
    return Organisation.objects.select_for_update().get(pk=organisation.pk)


def hold_limits_check(*, organisation: Organisation, node_count: int) -> None:
    """Refuse an order that would take the organisation past its hold limits. Call it
    inside the transaction that places the order, after ``organisation_lock``: a check
    outside it would let parallel requests each see the limit not yet reached."""
    limits = hold_limits(organisation)
    unpaid = Order.objects.filter(
        organisation=organisation, status=OrderStatus.AWAITING_PAYMENT
    ).values("reservation_group")
    orders = unpaid.count()
    held = Reservation.objects.filter(group__in=unpaid, status=ReservationStatus.HOLD).count()
    hint = (
        ""
        if organisation.legal_details_complete
        else " "
        + _(
            "Organisations with their legal name and tax ID on file may hold more: add them "
            "in the organisation's settings."
        )
    )
    if orders + 1 > limits["unpaid_orders"]:
        raise HoldLimitReached(
            ngettext(
                "Your organisation already has %(n)s unpaid order, the most it may have at "
                "once: pay or cancel it first.",
                "Your organisation already has %(n)s unpaid orders, the most it may have at "
                "once: pay or cancel one first.",
                orders,
            )
            % {"n": orders}
            + hint
        )
    if held + node_count > limits["held_nodes"]:
        raise HoldLimitReached(
            ngettext(
                "Unpaid orders may hold at most %(max)s node for your organisation at once; "
                "%(held)s are held now and this order asks for %(n)s.",
                "Unpaid orders may hold at most %(max)s nodes for your organisation at once; "
                "%(held)s are held now and this order asks for %(n)s.",
                limits["held_nodes"],
            )
            % {"max": limits["held_nodes"], "held": held, "n": node_count}
            + hint
        )


def order_self_service(
    *,
    user: Actor,
    organisation: Organisation,
    site: Site,
    node_type: NodeType,
    node_count: int,
    card_gpu_model_id: int | None,
    cards_per_node: int,
    term: str,
    duration: int,
    start_date: date,
    addons: dict[str, Decimal],
    payment_method: str,
    ip: str | None,
    idempotency_key: str = "",
) -> Order:
    """Quote, send (placing and holding the nodes) and accept in one go: an order awaiting
    payment whose nodes are held until its payment deadline.

    Each try runs in its own transaction, so a failed one leaves nothing behind (no
    quote, no number used, no hold). Raises ``CapacityTaken`` (a ``NotEnoughCapacity``)
    with the nearest alternatives when the nodes cannot be had, and ``DomainError`` for
    anything else the rules refuse.
    """
    if not Membership.objects.filter(user=user, organisation=organisation).exists():
        raise DomainError(_("You are not a member of this organisation."))
    idempotency_key = idempotency_key.strip()[:64]
    existing = _order_for_key(organisation=organisation, idempotency_key=idempotency_key)
    if existing is not None:
        # The same configure form accepted again (Back, then Accept): its order.
        return existing
    if payment_method not in payment_methods_offered():
        raise DomainError(_("Choose a payment method."))
    placed = _self_service_place(
        user=user,
        organisation=organisation,
        site=site,
        node_type=node_type,
        node_count=node_count,
        card_gpu_model_id=card_gpu_model_id,
        cards_per_node=cards_per_node,
        term=term,
        duration=duration,
        start_date=start_date,
        addons=addons,
        payment_method=payment_method,
        ip=ip,
        idempotency_key=idempotency_key,
    )
    assert isinstance(placed, Order)
    return placed


def quote_self_service(
    *,
    user: Actor,
    organisation: Organisation,
    site: Site,
    node_type: NodeType,
    node_count: int,
    card_gpu_model_id: int | None,
    cards_per_node: int,
    term: str,
    duration: int,
    start_date: date,
    addons: dict[str, Decimal],
) -> Quote:
    """A firm quote without accepting it (the API's ``POST /quotes/``): priced, sent, and
    holding the placed nodes until it expires; the same rules and retries as
    ``order_self_service``."""
    if not Membership.objects.filter(user=user, organisation=organisation).exists():
        raise DomainError(_("You are not a member of this organisation."))
    placed = _self_service_place(
        user=user,
        organisation=organisation,
        site=site,
        node_type=node_type,
        node_count=node_count,
        card_gpu_model_id=card_gpu_model_id,
        cards_per_node=cards_per_node,
        term=term,
        duration=duration,
        start_date=start_date,
        addons=addons,
        payment_method=None,
        ip=None,
        idempotency_key="",
    )
    assert isinstance(placed, Quote)
    return placed


def _self_service_place(
    *,
    user: Actor,
    organisation: Organisation,
    site: Site,
    node_type: NodeType,
    node_count: int,
    card_gpu_model_id: int | None,
    cards_per_node: int,
    term: str,
    duration: int,
    start_date: date,
    addons: dict[str, Decimal],
    payment_method: str | None,
    ip: str | None,
    idempotency_key: str,
) -> Order | Quote:
    """Check, place and hold with retries; accept too unless ``payment_method`` is None."""
    configuration_check(
        site=site,
        node_type=node_type,
        node_count=node_count,
        cards_per_node=cards_per_node,
        term=term,
        duration=duration,
        start_date=start_date,
    )
    config = Configuration(
        site=site,
        node_type=node_type,
        node_count=node_count,
        term=term,
        duration=duration,
        start_date=start_date,
        card_gpu_model_id=card_gpu_model_id,
        cards_per_node=cards_per_node,
        addons=tuple(sorted((c, q) for c, q in addons.items() if q > 0)),
    )
    # A quick refusal before any placement; the check that counts is repeated under the
    # organisation's lock inside each try (``_order_place``).
    hold_limits_check(organisation=organisation, node_count=node_count)
    items = configuration_items(config)
    last: DomainError | None = None
    for attempt in range(1, PLACEMENT_ATTEMPTS + 1):
        try:
            return _order_place(
                config=config,
                items=items,
                organisation=organisation,
                user=user,
                payment_method=payment_method,
                ip=ip,
                idempotency_key=idempotency_key,
            )
        except IntegrityError:
            # The same form accepted twice at once: the other request's order stands.
            found = Order.objects.filter(
                organisation=organisation, idempotency_key=idempotency_key
            ).first()
            if found is None:
                raise
            return found
        except (DoubleBooking, NotEnoughCapacity, NodesGone) as exc:
            last = exc
            logger.info(
                "Self-service order for %s × %s at %s, try %s: %s",
                node_count,
                node_type.code,
                site.code,
                attempt,
                exc.message,
            )
            if isinstance(exc, NotEnoughCapacity):
                break  # counted against what is committed now: another try sees the same
    raise _capacity_taken(last, config)


def _order_for_key(*, organisation: Organisation, idempotency_key: str) -> Order | None:
    """The order already placed with this idempotency key, if any."""
    if not idempotency_key:
        return None
    return Order.objects.filter(organisation=organisation, idempotency_key=idempotency_key).first()


def _order_place(
    *,
    config: Configuration,
    items: list[ItemSpec],
    organisation: Organisation,
    user: Actor,
    payment_method: str | None,
    ip: str | None,
    idempotency_key: str,
) -> Order | Quote:
    """One try, in its own transaction: hold the nodes, then quote, send and accept (only
    send when ``payment_method`` is None)."""
    site, term, duration, start_date = config.site, config.term, config.duration, config.start_date
    name, email = _contact(user, organisation)
    language = translation.get_language() or "zh-hans"
    with transaction.atomic():
        # The organisation's orders one at a time: counted under its lock, so five
        # accepts sent at once cannot each see the limit not yet reached.
        organisation = organisation_lock(organisation)
        hold_limits_check(organisation=organisation, node_count=config.node_count)
        # Place and hold first: the search is the slow part, and it needs no
        # number. The gapless numbers (quote, order, invoice) are taken after
        # it, so their sequence rows stay locked only for the short rest of the
        # transaction and a refused order never takes them at all.
        today = site_today(site)
        held = nodes_place_and_hold(
            site=site,
            start_date=start_date,
            term=term,
            duration=duration,
            wanted=nodes_wanted(items),
            owner_ref=f"self-service:{uuid.uuid4()}",
            expires_at=quote_expiry(
                site=site,
                valid_until=today + timedelta(days=DEFAULT_VALIDITY_DAYS),
                start_date=start_date,
            ),
            actor=user,
        )
        quote = quote_create(
            site=site,
            organisation=organisation,
            contact_name=name,
            contact_email=email,
            term=term,
            duration=duration,
            start_date=start_date,
            items=items,
            actor=user,
            language=language,
            notes=_("Self-service order."),
        )
        quote = quote_send(quote=quote, actor=user, held=held)
        if payment_method is None:
            return quote
        order = quote_accept(
            quote=quote, user=user, name=name, ip=ip, payment_method=payment_method
        )
        if idempotency_key:
            order.idempotency_key = idempotency_key
            with transaction.atomic():
                order.save(update_fields=["idempotency_key"])
        return order


def _capacity_taken(last: DomainError | None, config: Configuration) -> CapacityTaken:
    """The refusal when no try could hold the nodes, with the nearest alternatives."""
    if isinstance(last, NotEnoughCapacity):
        message = _(
            "Not enough nodes are free any more (another customer may have just booked "
            "them): %(reason)s Nothing was booked or charged; here are the nearest "
            "alternatives."
        ) % {"reason": last.message}
    else:
        message = _(
            "Another customer has just booked the nodes for this order. Nothing was booked "
            "or charged; here are the nearest alternatives."
        )
    return CapacityTaken(message, alternatives=_alternatives(config))
