"""Reads for billing: the price book in force, its engine snapshot, quote lists."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Prefetch
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import (
    AddonPrice,
    CardOptionPrice,
    DiscountRule,
    FreeService,
    NodePrice,
    PriceBook,
    Promotion,
)
from billing.pricing import engine as pricing
from core.errors import DomainError
from inventory.models import Site
from inventory.sizing import NodeOption


def price_book_in_force(*, site: Site, at: datetime | None = None) -> PriceBook:
    """The latest price book of the site effective at ``at`` (now by default)."""
    at = at or timezone.now()
    book = (
        PriceBook.objects.filter(site=site, currency=site.currency, effective_from__lte=at)
        .order_by("-effective_from")
        .first()
    )
    if book is None:
        raise DomainError(
            _("No price book for %(site)s in %(currency)s is in force yet.")
            % {"site": site.display_name, "currency": site.currency}
        )
    return book


@dataclass(frozen=True)
class BookSnapshot:
    """The engine's view of a price book, plus the Chinese names for line descriptions."""

    book: PriceBook
    engine: pricing.PriceBook
    names_zh: dict[str, str]  # engine line code -> Chinese description


def engine_node_price(
    np: NodePrice, options: tuple[pricing.CardOption, ...] = ()
) -> pricing.NodePrice:
    """One ``NodePrice`` row as the engine sees it (``node_type__gpu_model`` loaded)."""
    nt = np.node_type
    return pricing.NodePrice(
        node_type=nt.code,
        name=nt.name,
        category=pricing.Category(np.category),
        basis=pricing.Basis(np.basis),
        units_per_node=nt.gpu_count if np.basis == "gpu" else 1,
        monthly=np.monthly,
        daily=np.daily,
        gpu_model=nt.gpu_model.name if nt.gpu_model else None,
        options=options,
        tax_category=np.tax_category,
    )


def engine_discount(d: DiscountRule) -> pricing.DiscountRule:
    """One ``DiscountRule`` row as the engine sees it (``node_type``, ``gpu_model`` loaded)."""
    return pricing.DiscountRule(
        code=d.code,
        label=d.name,
        term=pricing.Term(d.term),
        multiplier=d.multiplier,
        node_type=d.node_type.code if d.node_type else None,
        gpu_model=d.gpu_model.name if d.gpu_model else None,
        category=pricing.Category(d.category) if d.category else None,
    )


def engine_promotion(p: Promotion, *, site_code: str) -> pricing.Promotion:
    """One ``Promotion`` row as the engine sees it (``node_type`` loaded)."""
    return pricing.Promotion(
        code=p.code,
        label=p.name,
        valid_from=p.valid_from,
        valid_until=p.valid_until,
        buy=p.buy,
        get=p.get,
        site=site_code,
        category=pricing.Category(p.category) if p.category else None,
        node_type=p.node_type.code if p.node_type else None,
    )


def price_book_snapshot(*, book: PriceBook) -> BookSnapshot:
    """Load a whole price book in a fixed number of queries and convert it for the engine."""
    book = (
        PriceBook.objects.select_related("site")
        .prefetch_related(
            Prefetch(
                "node_prices",
                queryset=NodePrice.objects.select_related("node_type__gpu_model"),
            ),
            Prefetch("card_prices", queryset=CardOptionPrice.objects.select_related("gpu_model")),
            Prefetch("addons", queryset=AddonPrice.objects.order_by("position", "code")),
            Prefetch("free_services", queryset=FreeService.objects.order_by("position", "pk")),
            Prefetch(
                "discounts",
                queryset=DiscountRule.objects.select_related("node_type", "gpu_model"),
            ),
            Prefetch("promotions", queryset=Promotion.objects.select_related("node_type")),
        )
        .get(pk=book.pk)
    )
    cards_by_type: dict[int, list[pricing.CardOption]] = {}
    names_zh: dict[str, str] = {}
    for cp in book.card_prices.all():
        cards_by_type.setdefault(cp.node_type_id, []).append(
            pricing.CardOption(
                code=cp.code,
                name=cp.gpu_model.name,
                gpu_model=cp.gpu_model.name,
                monthly=cp.monthly,
                daily=cp.daily,
                max_per_node=cp.max_per_node,
            )
        )
    nodes = {
        np.node_type.code: engine_node_price(np, tuple(cards_by_type.get(np.node_type_id, ())))
        for np in book.node_prices.all()
    }
    for np in book.node_prices.all():
        if np.node_type.name_zh:
            names_zh[f"node:{np.node_type.code}"] = np.node_type.name_zh
    addons = {}
    for a in book.addons.all():
        addons[a.code] = pricing.AddonPrice(
            code=a.code,
            name=a.name,
            unit=pricing.AddonUnit(a.unit),
            price=a.price,
            note=a.note,
            tax_category=a.tax_category,
        )
        if a.name_zh:
            names_zh[f"addon:{a.code}"] = a.name_zh
        if a.note_zh:
            names_zh[f"addon_note:{a.code}"] = a.note_zh
    free = []
    for fs in book.free_services.all():
        free.append(fs.name)
        if fs.name_zh:
            names_zh[f"free:{fs.name}"] = fs.name_zh
    discounts = tuple(engine_discount(d) for d in book.discounts.all())
    promotions = tuple(engine_promotion(p, site_code=book.site.code) for p in book.promotions.all())
    for d in book.discounts.all():
        if d.name_zh:
            names_zh[f"rule:{d.code}"] = d.name_zh
    for p in book.promotions.all():
        if p.name_zh:
            names_zh[f"rule:{p.code}"] = p.name_zh
    engine = pricing.PriceBook(
        site=book.site.code,
        currency=book.currency,
        vat_rate=book.site.vat_rate,
        nodes=nodes,
        addons=addons,
        discounts=discounts,
        promotions=promotions,
        free_services=tuple(free),
        tax_rates={k: Decimal(str(v)) for k, v in (book.tax_rates or {}).items()},
    )
    return BookSnapshot(book=book, engine=engine, names_zh=names_zh)


def sizing_options(*, site: Site) -> list[Any]:
    """The site's priced GPU configurations as the sizing calculator sees them.

    A CPU server with optional cards gives one option per card model, fully populated.
    """
    snapshot = price_book_snapshot(book=price_book_in_force(site=site))
    prices = {np.node_type.code: np for np in snapshot.book.node_prices.all()}
    cards: dict[int, list[Any]] = {}
    for cp in snapshot.book.card_prices.all():
        cards.setdefault(cp.node_type_id, []).append(cp)
    options: list[NodeOption] = []
    for code, np in sorted(prices.items()):
        nt = np.node_type
        units = nt.gpu_count if np.basis == "gpu" else 1
        base = np.monthly * units
        common: dict[str, Any] = {
            "intra_node": nt.interconnect,
            "nic_count": nt.nic_count,
            "nic_speed_gbps": nt.nic_speed_gbps,
            "fabric": nt.fabric,
            "host_ram_gb": nt.ram_gb,
        }
        if nt.gpu_model is not None:
            options.append(
                NodeOption(
                    code=code,
                    name=nt.name,
                    gpu_model=nt.gpu_model.name,
                    gpus_per_node=nt.gpu_count,
                    gpu_memory_gib=nt.gpu_model.memory_gb,
                    bf16_tflops=nt.gpu_model.reference_tflops,
                    memory_bandwidth_tbs=nt.gpu_model.memory_bandwidth_tbs,
                    monthly_price_per_node=base,
                    **common,
                )
            )
        for cp in cards.get(nt.pk, []):
            options.append(
                NodeOption(
                    code=f"{code}+{cp.code}",
                    name=f"{nt.name} + {cp.max_per_node}× {cp.gpu_model.name}",
                    gpu_model=cp.gpu_model.name,
                    gpus_per_node=cp.max_per_node,
                    gpu_memory_gib=cp.gpu_model.memory_gb,
                    bf16_tflops=cp.gpu_model.reference_tflops,
                    memory_bandwidth_tbs=cp.gpu_model.memory_bandwidth_tbs,
                    monthly_price_per_node=base + cp.monthly * cp.max_per_node,
                    **common,
                )
            )
    return options


def card_option_max_per_node(*, node_type_id: int, gpu_model_id: int, site: Site) -> int:
    """How many extra cards of ``gpu_model_id`` a node of the type takes at the site's price
    books (0 when the option is not offered)."""
    return (
        CardOptionPrice.objects.filter(
            node_type_id=node_type_id, gpu_model_id=gpu_model_id, price_book__site=site
        )
        .values_list("max_per_node", flat=True)
        .first()
        or 0
    )
