"""Reads for the customer-facing shop: catalog prices, the availability calendar, capacity
over a rental period and the nearest alternatives when an order cannot be placed.

Every function here runs a fixed number of queries whatever the size of the fleet: the
inventory is read in bulk and the arithmetic (weeks, placements, prices) is done in
Python with ``inventory.placement`` and ``billing.pricing.engine``.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from billing.models import DiscountRule, NodePrice, PriceBook, Promotion
from billing.pricing import engine as pricing
from billing.pricing.periods import rental_period, site_today
from billing.pricing.selectors import engine_discount, engine_node_price, engine_promotion
from core import jobs
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    NODE_UNBOOKABLE_STATUSES,
    MaintenanceWindow,
    Node,
    NodeType,
    Reservation,
    Site,
)
from inventory.placement import Candidate, place
from inventory.selectors import Availability

CALENDAR_WEEKS = 13  # the next 90 days, in whole weeks
# The calendar is computed off the request by a beat job (``calendar_refresh``) every
# CALENDAR_REFRESH_SECONDS (the page says "updated every minute"); a stored calendar is
# shown for at most CALENDAR_KEEP_SECONDS if the refreshes stop.
CALENDAR_REFRESH_SECONDS = 60
CALENDAR_KEEP_SECONDS = 15 * 60
PRICES_CACHE_SECONDS = 60
# The calendar's leaf count is for a typical training cluster of this many nodes (or all
# the free nodes of the week when fewer are free).
TYPICAL_CLUSTER_NODES = 8
# The most nodes one self-service order may ask for (larger clusters go through sales).
MAX_NODES_PER_ORDER = 128
CATALOG_TERMS = (pricing.Term.MONTH, pricing.Term.QUARTER, pricing.Term.YEAR)


def _cache_prefix() -> str:
    """Cache keys name the database, so two databases sharing one cache never mix."""
    return f"portal:shop:v1:{connection.settings_dict.get('NAME', '')}"


def _midnight(site: Site, day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=site.tzinfo)


# --- Catalog prices -----------------------------------------------------------------------


@dataclass(frozen=True)
class TermPrice:
    term: str
    per_month: Decimal  # net per node per month for this term, before VAT


@dataclass(frozen=True)
class CatalogPrice:
    """What the catalog shows of one node type's price at one site (one node, no cards)."""

    currency: str
    terms: tuple[TermPrice, ...]
    from_per_month: Decimal  # the lowest monthly-equivalent over the terms
    week_slot: dict[date, Decimal]  # one node for 7 days (daily term), by week start
    vat_rate: Decimal


def _books_in_force(sites: Sequence[Site], at: datetime) -> dict[int, PriceBook]:
    """The latest price book of each site in its own currency effective by ``at``: one
    query for all sites (the same rule as ``billing.pricing.selectors.price_book_in_force``)."""
    books: dict[int, PriceBook] = {}
    rows = (
        PriceBook.objects.filter(
            site__in=sites, currency=F("site__currency"), effective_from__lte=at
        )
        .select_related("site")
        .order_by("site_id", "-effective_from")
    )
    for book in rows:
        books.setdefault(book.site_id, book)
    return books


def _engine_books(
    books: dict[int, PriceBook],
) -> tuple[dict[int, pricing.PriceBook], dict[str, int]]:
    """The engine's view of several books at once, for one node without cards or add-ons:
    node prices, term discounts and promotions, in three queries for all books. Also
    returns the node type ids by code.

    Rows are converted by the same functions as ``billing.pricing.selectors.price_book_snapshot``
    (which loads one whole book in eight queries); ``tests/portal/test_catalog.py``
    checks both give the same prices.
    """
    by_pk = {b.pk: b for b in books.values()}
    type_ids: dict[str, int] = {}
    nodes: dict[int, dict[str, pricing.NodePrice]] = defaultdict(dict)
    for np in NodePrice.objects.filter(price_book__in=by_pk).select_related("node_type__gpu_model"):
        type_ids[np.node_type.code] = np.node_type.pk
        nodes[np.price_book_id][np.node_type.code] = engine_node_price(np)
    discounts: dict[int, list[pricing.DiscountRule]] = defaultdict(list)
    for d in DiscountRule.objects.filter(price_book__in=by_pk).select_related(
        "node_type", "gpu_model"
    ):
        discounts[d.price_book_id].append(engine_discount(d))
    promotions: dict[int, list[pricing.Promotion]] = defaultdict(list)
    for p in Promotion.objects.filter(price_book__in=by_pk).select_related("node_type"):
        promotions[p.price_book_id].append(
            engine_promotion(p, site_code=by_pk[p.price_book_id].site.code)
        )
    engines = {
        site_id: pricing.PriceBook(
            site=book.site.code,
            currency=book.currency,
            vat_rate=book.site.vat_rate,
            nodes=nodes[book.pk],
            discounts=tuple(discounts[book.pk]),
            promotions=tuple(promotions[book.pk]),
        )
        for site_id, book in books.items()
    }
    return engines, type_ids


def _one_node(
    engine: pricing.PriceBook, code: str, term: pricing.Term, duration: int, on: date
) -> pricing.PricedQuote:
    request = pricing.QuoteRequest(
        term=term,
        duration=duration,
        on=on,
        nodes=(pricing.NodeRequest(node_type=code, quantity=1),),
    )
    return pricing.price_quote(engine, request)


def catalog_prices(*, sites: Sequence[Site]) -> dict[tuple[int, int], CatalogPrice]:
    """``{(site_id, node_type_id): CatalogPrice}`` from each site's price book in force.

    Four queries for all sites, then the pricing engine for one node per term and per
    calendar week; the result is cached for a minute (the key names each site's today).
    """
    now = timezone.now()
    key = f"{_cache_prefix()}:prices:" + ",".join(f"{s.pk}@{site_today(s)}" for s in sites)
    cached = cache.get(key)
    if cached is not None:
        return cached
    books = _books_in_force(sites, now)
    engines, type_ids = _engine_books(books) if books else ({}, {})
    result: dict[tuple[int, int], CatalogPrice] = {}
    for site in sites:
        engine = engines.get(site.pk)
        if engine is None:
            continue
        today = site_today(site)
        for code in engine.nodes:
            terms = []
            for term in CATALOG_TERMS:
                priced = _one_node(engine, code, term, 1, today)
                terms.append(TermPrice(term=term.value, per_month=priced.net_per_month))
            week_slot = {}
            for i in range(CALENDAR_WEEKS):
                start = today + timedelta(days=7 * i)
                week_slot[start] = _one_node(engine, code, pricing.Term.DAY, 7, start).net_total
            result[(site.pk, type_ids[code])] = CatalogPrice(
                currency=engine.currency,
                terms=tuple(terms),
                from_per_month=min(t.per_month for t in terms),
                week_slot=week_slot,
                vat_rate=engine.vat_rate,
            )
    cache.set(key, result, PRICES_CACHE_SECONDS)
    return result


# --- Availability calendar ----------------------------------------------------------------


@dataclass(frozen=True)
class CalendarWeek:
    """One week of one node type at one site: ``[start, end)`` in the site's days."""

    start: date
    end: date  # exclusive: the first day of the next week
    free: int  # nodes free for the whole week
    cluster: int  # min(TYPICAL_CLUSTER_NODES, free): the cluster the leaf count is for
    leaves: int | None  # leaf switches its best placement spans (None when nothing free)

    @property
    def last_day(self) -> date:
        return self.end - timedelta(days=1)


def _calendar_key() -> str:
    return f"{_cache_prefix()}:calendar:all"


def _calendar_requested_key() -> str:
    return f"{_cache_prefix()}:calendar:requested"


@dataclass(frozen=True)
class StoredCalendar:
    """Every (site, node type) calendar, as the last refresh computed it."""

    computed_at: datetime
    weeks: dict[tuple[int, int], list[CalendarWeek]]


def calendar_refresh(*, weeks: int = CALENDAR_WEEKS) -> int:
    """Compute the calendar of every site and node type that has nodes and store it for
    the landing page (the beat job, every minute). Safe to run twice or at once: each
    run computes from the database and replaces the whole stored calendar.

    Returns how many (site, node type) calendars were stored.
    """
    sites = {site.pk: site for site in Site.objects.order_by("code")}
    pairs = sorted(
        {
            (site_id, nt_id)
            for site_id, nt_id in Node.objects.order_by()
            .values_list("site_id", "node_type_id")
            .distinct()
            if site_id in sites
        }
    )
    site_pairs = [(sites[site_id], nt_id) for site_id, nt_id in pairs]
    starts = {site.pk: site_today(site) for site, _ in site_pairs}
    computed = _calendar_compute(pairs=site_pairs, starts=starts, weeks=weeks) if pairs else {}
    cache.set(
        _calendar_key(),
        StoredCalendar(computed_at=timezone.now(), weeks=computed),
        CALENDAR_KEEP_SECONDS,
    )
    cache.delete(_calendar_requested_key())
    return len(computed)


def availability_calendar(
    *, pairs: Iterable[tuple[Site, int]]
) -> dict[tuple[int, int], list[CalendarWeek]] | None:
    """Free nodes per week for the next ``CALENDAR_WEEKS`` weeks, per ``(site,
    node_type_id)``, as the last ``calendar_refresh`` stored them: no query, nothing
    computed in the caller's request.

    ``None`` when no calendar is stored (a cold cache, before the first refresh); a
    refresh is then requested once (``billing.tasks.catalog_calendar_refresh_task``),
    and the page says the calendar is being computed. A pair the refresh did not know
    (a node type added since) gets no weeks until the next refresh.

    A week starts at midnight of a site-local day (the refresh's today, then every 7
    days) and a node counts as free when it is bookable and neither reserved nor in a
    maintenance window at any moment of the week. Each week also says how many leaf
    switches the best topology-aware placement of a typical cluster
    (``TYPICAL_CLUSTER_NODES``, or all free nodes when fewer) would span.
    """
    stored = cache.get(_calendar_key())
    if stored is None:
        if cache.add(_calendar_requested_key(), True, CALENDAR_REFRESH_SECONDS):
            jobs.enqueue("billing.tasks.catalog_calendar_refresh_task")
        return None
    return {(site.pk, nt_id): stored.weeks.get((site.pk, nt_id), []) for site, nt_id in pairs}


def _calendar_compute(
    *, pairs: list[tuple[Site, int]], starts: dict[int, date], weeks: int
) -> dict[tuple[int, int], list[CalendarWeek]]:
    sites = {site.pk: site for site, _ in pairs}
    type_ids = {nt_id for _, nt_id in pairs}
    bounds = {
        pk: [_midnight(sites[pk], starts[pk] + timedelta(days=7 * i)) for i in range(weeks + 1)]
        for pk in sites
    }
    period_start = min(b[0] for b in bounds.values())
    period_end = max(b[-1] for b in bounds.values())

    candidates: dict[tuple[int, int], list[Candidate]] = defaultdict(list)
    site_of: dict[int, int] = {}
    rows = (
        Node.objects.filter(site__in=list(sites), node_type__in=type_ids)
        .exclude(status__in=NODE_UNBOOKABLE_STATUSES)
        .order_by()
        .values_list("pk", "site_id", "node_type_id", "hostname", "leaf_switch__name", "rack__name")
    )
    for pk, site_id, nt_id, host, leaf, rack in rows:
        candidates[(site_id, nt_id)].append(
            Candidate(node_id=pk, hostname=host, leaf=leaf, rack=rack)
        )
        site_of[pk] = site_id

    on_our_nodes = Q(node__site__in=list(sites), node__node_type__in=type_ids)
    # No ORDER BY in the parts of a UNION (SQLite refuses it; the models have orderings).
    # A booking keeps its node over its held range (lead time and cleaning).
    reservations = (
        Reservation.objects.filter(
            on_our_nodes,
            held_from__lt=period_end,
            held_until__gt=period_start,
            status__in=ACTIVE_RESERVATION_STATUSES,
        )
        .order_by()
        .values_list("node_id", "held_from", "held_until")
    )
    windows = (
        MaintenanceWindow.objects.filter(
            on_our_nodes, start_at__lt=period_end, end_at__gt=period_start
        )
        .order_by()
        .values_list("node_id", "start_at", "end_at")
    )
    busy_weeks: dict[int, set[int]] = defaultdict(set)
    for node_id, s, e in reservations.union(windows, all=True).order_by():
        site_id = site_of.get(node_id)
        if site_id is None:  # an unbookable node: not a candidate anyway
            continue
        b = bounds[site_id]
        first = max(bisect_right(b, s) - 1, 0)
        last = min(bisect_left(b, e) - 1, weeks - 1)
        busy_weeks[node_id].update(range(first, last + 1))

    result: dict[tuple[int, int], list[CalendarWeek]] = {}
    for site_id, nt_id in ((site.pk, nt_id) for site, nt_id in pairs):
        cands = candidates.get((site_id, nt_id), [])
        start = starts[site_id]
        row = []
        for i in range(weeks):
            free = [c for c in cands if i not in busy_weeks.get(c.node_id, ())]
            cluster = min(TYPICAL_CLUSTER_NODES, len(free))
            placement = place(free, cluster) if cluster else None
            row.append(
                CalendarWeek(
                    start=start + timedelta(days=7 * i),
                    end=start + timedelta(days=7 * (i + 1)),
                    free=len(free),
                    cluster=cluster,
                    leaves=len(placement.leaves) if placement else None,
                )
            )
        result[(site_id, nt_id)] = row
    return result


# --- Capacity over a rental period and the nearest alternatives ---------------------------


@dataclass(frozen=True)
class Capacity:
    total: int  # nodes of the type at the site (any status)
    free: int  # bookable and free over the whole period


def capacity_over(*, start_at: datetime, end_at: datetime) -> dict[tuple[int, int], Capacity]:
    """``{(site_id, node_type_id): Capacity}`` over ``[start_at, end_at)``, in one query."""
    reserved = Reservation.objects.filter(
        node=OuterRef("pk"),
        status__in=ACTIVE_RESERVATION_STATUSES,
        held_from__lt=end_at,
        held_until__gt=start_at,
    )
    maintained = MaintenanceWindow.objects.filter(
        node=OuterRef("pk"), start_at__lt=end_at, end_at__gt=start_at
    )
    bookable = Q(~Exists(reserved), ~Exists(maintained)) & ~Q(status__in=NODE_UNBOOKABLE_STATUSES)
    rows = (
        Node.objects.order_by()
        .values("site_id", "node_type_id")
        .annotate(total=Count("pk"), free=Count("pk", filter=bookable))
    )
    return {(r["site_id"], r["node_type_id"]): Capacity(r["total"], r["free"]) for r in rows}


def capacity_for_period(
    *, sites: Sequence[Site], start_date: date, term: str, duration: int
) -> dict[tuple[int, int], Capacity]:
    """Capacity over the rental period as every site counts it (its own midnight).

    Sites in different time zones start the "same" day at different instants; the query
    covers all of them, so a node counted free here is free in every site's period (an
    alternative offered is never wrong; one may very rarely be missed).
    """
    periods = [
        rental_period(site=s, start_date=start_date, term=term, duration=duration) for s in sites
    ]
    return capacity_over(start_at=min(p[0] for p in periods), end_at=max(p[1] for p in periods))


@dataclass(frozen=True)
class Alternative:
    """A configuration close to the one asked for that can be placed."""

    kind: str  # "later": same order, later start; "site": another site; "node_type": same GPUs
    site: Site
    node_type: NodeType
    node_count: int
    start_date: date
    free: int | None = None  # free nodes of that type at that site for the period
    params: dict[str, str] = field(default_factory=dict)  # configure URL query overrides


def gpus_per_node(node_type: NodeType, cards_per_node: int = 0) -> int:
    """GPUs in one node: built in, or the optional cards chosen."""
    return node_type.gpu_count or cards_per_node


def nearest_alternatives(
    *,
    site: Site,
    node_type: NodeType,
    node_count: int,
    cards_per_node: int,
    start_date: date,
    availability: Availability | None,
    capacity: dict[tuple[int, int], Capacity],
    sites: Sequence[Site],
    node_types: Sequence[NodeType],
    offered: set[tuple[int, int]] | None = None,
) -> list[Alternative]:
    """The nearest configurations that can be placed, with no query of their own:

    (a) the same order from the earliest start at which the full count is free;
    (b) the same node type at another site where the count is free for the period;
    (c) another node type at the same site with at least as many GPUs in all, free for
        the period (only when the order has GPUs).

    ``offered`` (``(site_id, node_type_id)`` pairs with a price) filters (b) and (c).
    """
    alternatives: list[Alternative] = []
    if availability is not None and availability.earliest_start is not None:
        local = availability.earliest_start.astimezone(site.tzinfo)
        day = local.date() if local.time() == time.min else local.date() + timedelta(days=1)
        if day > start_date:
            alternatives.append(
                Alternative(
                    kind="later",
                    site=site,
                    node_type=node_type,
                    node_count=node_count,
                    start_date=day,
                    params={"start_date": day.isoformat()},
                )
            )
    for other in sites:
        if other.pk == site.pk or (offered is not None and (other.pk, node_type.pk) not in offered):
            continue
        cap = capacity.get((other.pk, node_type.pk))
        if cap and cap.free >= node_count:
            alternatives.append(
                Alternative(
                    kind="site",
                    site=other,
                    node_type=node_type,
                    node_count=node_count,
                    start_date=start_date,
                    free=cap.free,
                    params={"site": other.code},
                )
            )
    gpus = node_count * gpus_per_node(node_type, cards_per_node)
    if gpus:
        for nt in node_types:
            if nt.pk == node_type.pk or not nt.gpu_count:
                continue
            if offered is not None and (site.pk, nt.pk) not in offered:
                continue
            need = math.ceil(gpus / nt.gpu_count)
            cap = capacity.get((site.pk, nt.pk))
            if need <= MAX_NODES_PER_ORDER and cap and cap.free >= need:
                alternatives.append(
                    Alternative(
                        kind="node_type",
                        site=site,
                        node_type=nt,
                        node_count=need,
                        start_date=start_date,
                        free=cap.free,
                        params={
                            "node_type": nt.code,
                            "node_count": str(need),
                            "gpu_count": "",
                            "card": "",
                            "cards_per_node": "",
                        },
                    )
                )
    return alternatives


def configure_node_types() -> list[NodeType]:
    """Node types with their GPU model, for the configure form (one query)."""
    return list(NodeType.objects.select_related("gpu_model").order_by("code"))
