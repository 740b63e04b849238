"""The pricing engine: pure functions over Decimal, no Django.

Inputs in (a price book snapshot and what the customer asks for), priced lines out. Each
line carries its list price, quantity, term, every adjustment with its reason, net, VAT
and gross. Amounts are rounded to the cent with ``ROUNDING`` (half up, the rule Chinese
invoices use): a line's discounts are rounded as a running total, so its net is the exact
discounted price rounded once, not a pile of per-step roundings; totals are the sums of
the rounded lines, so the lines always add up to the total to the cent.

Rules the engine guarantees (and the property tests in tests/billing check):
- nothing is ever negative; an adjustment never raises a price;
- a longer commitment never costs more per month than a shorter one for the same item
  (term multipliers are capped by every shorter term's, and a price book's daily rate
  must be at least its monthly rate / 30, checked by ``validate_book``);
- the most specific term discount wins (node type > GPU model > category > everything),
  and the line says which rule applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum

CENT = Decimal("0.01")
ROUNDING = ROUND_HALF_UP
ROUNDING_RULE = "half up to the cent"
ZERO = Decimal("0.00")
DAYS_PER_MONTH = 30  # the daily term's month, for comparing and prorating add-ons


class PricingError(ValueError):
    """Input the engine cannot price; the message says what is wrong."""


def money(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUNDING)


class Term(StrEnum):
    DAY = "day"
    MONTH = "month"
    QUARTER = "quarter"
    YEAR = "year"


TERM_ORDER = (Term.DAY, Term.MONTH, Term.QUARTER, Term.YEAR)
TERM_INDEX = {t: i for i, t in enumerate(TERM_ORDER)}
TERM_MONTHS = {Term.MONTH: 1, Term.QUARTER: 3, Term.YEAR: 12}
# Allowed durations, in units of the term: days 1-89, then whole months/quarters/years.
TERM_DURATION = {Term.DAY: (1, 89), Term.MONTH: (1, 36), Term.QUARTER: (1, 12), Term.YEAR: (1, 5)}


class Basis(StrEnum):
    PER_NODE = "node"
    PER_GPU = "gpu"


class Category(StrEnum):
    GPU = "gpu"  # GPU servers and GPU cards
    BARE_METAL = "bare_metal"  # CPU servers


class AddonUnit(StrEnum):
    TB_MONTH = "tb_month"  # per TB per month (checkpoint storage)
    TB = "tb"  # per TB transferred (egress, estimated)
    IP_MONTH = "ip_month"  # per address per month
    MONTH = "month"  # flat per month (DDoS tier)
    ONCE = "once"  # one-off


@dataclass(frozen=True, slots=True)
class CardOption:
    """An optional GPU card for a server (RTX 3090 ¥1,750 per card per month)."""

    code: str
    name: str
    gpu_model: str
    monthly: Decimal
    daily: Decimal
    max_per_node: int


@dataclass(frozen=True, slots=True)
class NodePrice:
    node_type: str
    name: str
    category: Category
    basis: Basis
    units_per_node: int  # GPUs per node for PER_GPU, else 1
    monthly: Decimal  # per unit per month
    daily: Decimal  # per unit per day (its own price-book entry)
    gpu_model: str | None = None
    options: tuple[CardOption, ...] = ()
    tax_category: str = "it_service"


#: The 24-hour burn-in before hand-over (issue 20): an add-on priced per node, once; the
#: quote's node count is its quantity whatever was asked, and clusters of
#: ``BURN_IN_FREE_FROM_NODES`` nodes or more get it free (a burn-in that finds one bad
#: node of sixteen pays for itself in the first week of a large training run).
BURN_IN_CODE = "burn-in-24h"
BURN_IN_FREE_FROM_NODES = 16


def burn_in_included(node_count: int) -> bool:
    """Whether a cluster of ``node_count`` nodes gets the burn-in without buying it."""
    return node_count >= BURN_IN_FREE_FROM_NODES


@dataclass(frozen=True, slots=True)
class AddonPrice:
    code: str
    name: str
    unit: AddonUnit
    price: Decimal  # per unit; 0 for a free tier
    note: str = ""
    tax_category: str = "it_service"


@dataclass(frozen=True, slots=True)
class DiscountRule:
    """Pay ``multiplier`` of list for ``term`` (0.85 = 85% of list, "15% off")."""

    code: str
    label: str
    term: Term
    multiplier: Decimal
    node_type: str | None = None
    gpu_model: str | None = None
    category: Category | None = None

    @property
    def specificity(self) -> int:
        if self.node_type:
            return 3
        if self.gpu_model:
            return 2
        if self.category:
            return 1
        return 0

    def matches(self, *, node_type: str | None, gpu_model: str | None, category: Category) -> bool:
        return (
            (self.node_type is None or self.node_type == node_type)
            and (self.gpu_model is None or self.gpu_model == gpu_model)
            and (self.category is None or self.category == category)
        )


@dataclass(frozen=True, slots=True)
class Promotion:
    """Buy ``buy`` nodes, get ``get`` more free, between two dates (inclusive)."""

    code: str
    label: str
    valid_from: date
    valid_until: date
    buy: int = 1
    get: int = 1
    site: str | None = None
    category: Category | None = None
    node_type: str | None = None

    def applies(self, *, on: date, site: str, node_type: str, category: Category) -> bool:
        return (
            self.valid_from <= on <= self.valid_until
            and (self.site is None or self.site == site)
            and (self.category is None or self.category == category)
            and (self.node_type is None or self.node_type == node_type)
        )


@dataclass(frozen=True)
class PriceBook:
    """A snapshot of one site's prices in one currency, as the engine sees it."""

    site: str
    currency: str
    vat_rate: Decimal
    nodes: dict[str, NodePrice]
    addons: dict[str, AddonPrice] = field(default_factory=dict)
    discounts: tuple[DiscountRule, ...] = ()
    promotions: tuple[Promotion, ...] = ()
    free_services: tuple[str, ...] = ()
    # VAT rate per tax category (what is sold); a category not listed pays ``vat_rate``.
    tax_rates: dict[str, Decimal] = field(default_factory=dict)


# --- Requests -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeRequest:
    node_type: str
    quantity: int
    cards: tuple[tuple[str, int], ...] = ()  # (option code, cards per node)


@dataclass(frozen=True, slots=True)
class AddonRequest:
    code: str
    quantity: Decimal


@dataclass(frozen=True, slots=True)
class CustomRequest:
    """A free-text line a salesperson adds: priced as given, per unit, once."""

    description: str
    quantity: Decimal
    unit_price: Decimal
    discountable: bool = False


@dataclass(frozen=True)
class QuoteRequest:
    term: Term
    duration: int
    on: date  # the day prices and promotions are taken from
    nodes: tuple[NodeRequest, ...] = ()
    addons: tuple[AddonRequest, ...] = ()
    custom: tuple[CustomRequest, ...] = ()
    extra_discount: Decimal = Decimal("0")  # sales discount, a fraction (0.05 = 5%)


# --- Results --------------------------------------------------------------------------


class AdjustmentKind(StrEnum):
    TERM = "term"  # params: multiplier, capped
    PROMOTION = "promotion"  # params: free, quantity, valid_from, valid_until
    SALES = "sales"  # params: percent


@dataclass(frozen=True, slots=True)
class Adjustment:
    """One discount on a line. ``reason`` is plain English for logs; pages and PDFs
    render a translated reason from ``kind`` and ``params``."""

    code: str
    label: str
    amount: Decimal  # negative or zero
    reason: str
    kind: AdjustmentKind = AdjustmentKind.SALES
    params: tuple[tuple[str, str], ...] = ()

    @property
    def param_dict(self) -> dict[str, str]:
        return dict(self.params)


class LineKind(StrEnum):
    NODE = "node"
    CARD = "card"
    ADDON = "addon"
    FREE = "free"
    CUSTOM = "custom"


@dataclass(frozen=True, slots=True)
class PricedLine:
    kind: LineKind
    code: str
    description: str
    quantity: Decimal
    unit: str
    unit_price: Decimal  # list price per unit per period
    periods: Decimal  # months (or days for the daily term; 1 for one-offs)
    period_unit: str
    list_amount: Decimal
    adjustments: tuple[Adjustment, ...]
    net: Decimal
    vat: Decimal
    gross: Decimal
    note: str = ""
    tax_category: str = "it_service"
    vat_rate: Decimal = Decimal("0")

    @property
    def discount_total(self) -> Decimal:
        return sum((a.amount for a in self.adjustments), ZERO)


@dataclass(frozen=True)
class PricedQuote:
    currency: str
    vat_rate: Decimal
    term: Term
    duration: int
    months: Decimal  # the commitment in months (days / 30 for the daily term)
    lines: tuple[PricedLine, ...]
    list_total: Decimal
    discount_total: Decimal
    net_total: Decimal
    vat_total: Decimal
    gross_total: Decimal
    rounding_rule: str = ROUNDING_RULE

    @property
    def net_per_month(self) -> Decimal:
        return money(self.net_total / self.months) if self.months else ZERO


# --- Validation -----------------------------------------------------------------------


def validate_book(book: PriceBook) -> list[str]:
    """Problems with a price book that would make the engine's promises false."""
    problems: list[str] = []
    if not (Decimal("0") <= book.vat_rate <= Decimal("1")):
        problems.append(f"VAT rate {book.vat_rate} is not between 0 and 1")
    for np in book.nodes.values():
        if np.monthly < 0 or np.daily < 0:
            problems.append(f"{np.node_type}: negative price")
        if np.daily * DAYS_PER_MONTH < np.monthly:
            problems.append(
                f"{np.node_type}: daily {np.daily} × {DAYS_PER_MONTH} is below monthly "
                f"{np.monthly}; renting by the day would be cheaper than by the month"
            )
        if np.units_per_node < 1:
            problems.append(f"{np.node_type}: units per node must be at least 1")
        for opt in np.options:
            if opt.monthly < 0 or opt.daily < 0:
                problems.append(f"{np.node_type}/{opt.code}: negative price")
            if opt.daily * DAYS_PER_MONTH < opt.monthly:
                problems.append(f"{np.node_type}/{opt.code}: daily × 30 is below monthly")
    for rule in book.discounts:
        if not (Decimal("0") < rule.multiplier <= Decimal("1")):
            problems.append(f"discount {rule.code}: multiplier must be in (0, 1]")
    for a in book.addons.values():
        if a.price < 0:
            problems.append(f"add-on {a.code}: negative price")
    for p in book.promotions:
        if p.buy < 1 or p.get < 1:
            problems.append(f"promotion {p.code}: buy and get must be at least 1")
        if p.valid_until < p.valid_from:
            problems.append(f"promotion {p.code}: ends before it starts")
    return problems


# --- The engine -----------------------------------------------------------------------


def term_multiplier(
    rules: Iterable[DiscountRule],
    *,
    term: Term,
    node_type: str | None,
    gpu_model: str | None,
    category: Category,
) -> tuple[Decimal, DiscountRule | None, bool]:
    """The multiplier for ``term``: the most specific matching rule, capped by every
    shorter term's so that committing longer never costs more per month.

    Returns (multiplier, the rule that set it, whether a shorter term's cap applied).
    """
    # One pass over the rules: the most specific matching rule of each term up to this
    # one (ties: the lower multiplier, then the code; the first of equals is kept).
    wanted = TERM_ORDER[: TERM_INDEX[term] + 1]
    best: dict[Term, tuple[tuple[int, Decimal, str], DiscountRule]] = {}
    for r in rules:
        if r.term not in wanted or not r.matches(
            node_type=node_type, gpu_model=gpu_model, category=category
        ):
            continue
        key = (r.specificity, -r.multiplier, r.code)
        current = best.get(r.term)
        if current is None or key > current[0]:
            best[r.term] = (key, r)

    chosen = best.get(term)
    rule = chosen[1] if chosen else None
    multiplier = rule.multiplier if rule else Decimal("1")
    capped = False
    for shorter in wanted[:-1]:
        found = best.get(shorter)
        if found and found[1].multiplier < multiplier:
            multiplier, rule, capped = found[1].multiplier, found[1], True
    return multiplier, rule, capped


def _periods(term: Term, duration: int) -> tuple[Decimal, str, Decimal]:
    """(billing periods, their unit, the commitment in months)."""
    lo, hi = TERM_DURATION[term]
    if not (lo <= duration <= hi):
        raise PricingError(f"a {term.value} term runs {lo} to {hi} {term.value}s, not {duration}")
    if term == Term.DAY:
        return Decimal(duration), "day", Decimal(duration) / DAYS_PER_MONTH
    months = Decimal(duration * TERM_MONTHS[term])
    return months, "month", months


def _vat(net: Decimal, rate: Decimal) -> Decimal:
    return money(net * rate)


def _line(
    *,
    kind: LineKind,
    code: str,
    description: str,
    quantity: Decimal,
    unit: str,
    unit_price: Decimal,
    periods: Decimal,
    period_unit: str,
    list_amount: Decimal,
    adjustments: Sequence[Adjustment],
    book: PriceBook,
    tax_category: str = "it_service",
    note: str = "",
) -> PricedLine:
    net = list_amount
    for a in adjustments:
        net += a.amount
    if net < 0:  # adjustments are capped below; this is a guard, not a path
        raise PricingError(f"{description}: adjustments exceed the list price")
    vat_rate = book.tax_rates.get(tax_category, book.vat_rate)
    vat = _vat(net, vat_rate)
    return PricedLine(
        kind=kind,
        code=code,
        description=description,
        quantity=quantity,
        unit=unit,
        unit_price=unit_price,
        periods=periods,
        period_unit=period_unit,
        list_amount=list_amount,
        adjustments=tuple(adjustments),
        net=net,
        vat=vat,
        gross=net + vat,
        note=note,
        tax_category=tax_category,
        vat_rate=vat_rate,
    )


def _pct(fraction: Decimal) -> str:
    return f"{fraction * 100:.2f}".rstrip("0").rstrip(".") + "%"


def _sales_adjustment(amount: Decimal, fraction: Decimal) -> Adjustment | None:
    """The sales discount of ``fraction`` as an adjustment of ``amount`` (≤ 0; none if 0)."""
    if not amount:
        return None
    percent = _pct(fraction)
    return Adjustment(
        "sales",
        "Sales discount",
        amount,
        f"Sales discount {percent}",
        AdjustmentKind.SALES,
        (("percent", percent),),
    )


def _rental_adjustments(
    *,
    book: PriceBook,
    request: QuoteRequest,
    list_amount: Decimal,
    quantity: int,
    node_type: str,
    gpu_model: str | None,
    category: Category,
) -> list[Adjustment]:
    """Term discount, then promotion, then the sales discount, each on what is left."""
    adjustments: list[Adjustment] = []
    multiplier, rule, capped = term_multiplier(
        book.discounts,
        term=request.term,
        node_type=node_type,
        gpu_model=gpu_model,
        category=category,
    )
    # Every step takes its share of the exact price left by the steps before it, and the
    # cumulative discount is what gets rounded: each adjustment is the change in
    # money(list - exact). So the net is the exact price (list x multiplier x share paid x
    # (1 - sales discount)) rounded once, to the nearest cent, instead of carrying up to
    # half a cent of error per step; chained errors let a quarterly or annual term cost more
    # than a cent a month more than the monthly term with the same multiplier.
    exact = list_amount  # the unrounded price after the steps so far
    taken = ZERO  # the rounded discount so far (≥ 0)
    if rule is not None and multiplier < 1:
        exact = list_amount * multiplier
        now = money(list_amount - exact)
        amount, taken = taken - now, now
        reason = f"{rule.label}: pay {_pct(multiplier)} of list"
        if capped:
            reason += f" (a shorter term's rule, so a {request.term.value} term costs no more)"
        adjustments.append(
            Adjustment(
                rule.code,
                rule.label,
                amount,
                reason,
                AdjustmentKind.TERM,
                (("multiplier", str(multiplier)), ("capped", "1" if capped else "")),
            )
        )
    # One promotion per line: the one that gives the most free (ties: by code).
    best: tuple[int, str, Promotion] | None = None
    for promo in book.promotions:
        if not promo.applies(on=request.on, site=book.site, node_type=node_type, category=category):
            continue
        free = (quantity // (promo.buy + promo.get)) * promo.get
        if free and (best is None or (-free, promo.code) < (-best[0], best[1])):
            best = (free, promo.code, promo)
    if best is not None:
        free, _code, promo = best
        exact = exact * (quantity - free) / quantity
        now = money(list_amount - exact)
        amount, taken = taken - now, now
        adjustments.append(
            Adjustment(
                promo.code,
                promo.label,
                amount,
                f"{promo.label}: {free} of {quantity} free "
                f"(valid {promo.valid_from.isoformat()} to {promo.valid_until.isoformat()})",
                AdjustmentKind.PROMOTION,
                (
                    ("free", str(free)),
                    ("quantity", str(quantity)),
                    ("valid_from", promo.valid_from.isoformat()),
                    ("valid_until", promo.valid_until.isoformat()),
                ),
            )
        )
    if request.extra_discount:
        exact = exact * (Decimal(1) - request.extra_discount)
        now = money(list_amount - exact)
        sales = _sales_adjustment(taken - now, request.extra_discount)
        if sales:
            adjustments.append(sales)
    return adjustments


def price_quote(book: PriceBook, request: QuoteRequest) -> PricedQuote:
    """Price a request against a price book. Raises ``PricingError`` on bad input."""
    if not (Decimal("0") <= request.extra_discount < Decimal("1")):
        raise PricingError("the sales discount must be at least 0% and below 100%")
    periods, period_unit, months = _periods(request.term, request.duration)
    lines = [
        *_node_lines(book, request, periods=periods, period_unit=period_unit),
        *_addon_lines(book, request, months=months),
        *_custom_lines(book, request),
        *_free_lines(book),
    ]
    return _priced_quote(book, request, months=months, lines=lines)


def _node_lines(
    book: PriceBook, request: QuoteRequest, *, periods: Decimal, period_unit: str
) -> list[PricedLine]:
    """The rented nodes, each followed by its optional cards."""
    lines: list[PricedLine] = []
    daily = request.term == Term.DAY
    for nr in request.nodes:
        np = book.nodes.get(nr.node_type)
        if np is None:
            raise PricingError(f"no price for node type {nr.node_type!r} in this price book")
        if nr.quantity < 1:
            raise PricingError(f"{np.name}: at least one node")
        unit_price = np.daily if daily else np.monthly
        units = nr.quantity * np.units_per_node
        list_amount = money(unit_price * units * periods)
        unit = "GPU" if np.basis == Basis.PER_GPU else "node"
        lines.append(
            _line(
                kind=LineKind.NODE,
                code=np.node_type,
                description=np.name,
                quantity=Decimal(units),
                unit=unit,
                unit_price=unit_price,
                periods=periods,
                period_unit=period_unit,
                list_amount=list_amount,
                adjustments=_rental_adjustments(
                    book=book,
                    request=request,
                    list_amount=list_amount,
                    quantity=nr.quantity,
                    node_type=np.node_type,
                    gpu_model=np.gpu_model,
                    category=np.category,
                ),
                book=book,
                tax_category=np.tax_category,
                note=f"{nr.quantity} × {np.units_per_node} GPU" if unit == "GPU" else "",
            )
        )
        for code, per_node in nr.cards:
            opt = next((o for o in np.options if o.code == code), None)
            if opt is None:
                raise PricingError(f"{np.name} has no card option {code!r}")
            if not (1 <= per_node <= opt.max_per_node):
                raise PricingError(
                    f"{opt.name}: 1 to {opt.max_per_node} cards per node, not {per_node}"
                )
            unit_price = opt.daily if daily else opt.monthly
            cards = nr.quantity * per_node
            card_list = money(unit_price * cards * periods)
            lines.append(
                _line(
                    kind=LineKind.CARD,
                    code=f"{np.node_type}:{opt.code}",
                    description=opt.name,
                    quantity=Decimal(cards),
                    unit="card",
                    unit_price=unit_price,
                    periods=periods,
                    period_unit=period_unit,
                    list_amount=card_list,
                    adjustments=_rental_adjustments(
                        book=book,
                        request=request,
                        list_amount=card_list,
                        quantity=nr.quantity,
                        node_type=np.node_type,
                        gpu_model=opt.gpu_model,
                        category=Category.GPU,
                    ),
                    book=book,
                    tax_category=np.tax_category,
                    note=f"{nr.quantity} node(s) × {per_node}",
                )
            )
    return lines


def _addon_lines(book: PriceBook, request: QuoteRequest, *, months: Decimal) -> list[PricedLine]:
    """The add-ons: recurring ones for every month of the term, the others once."""
    lines: list[PricedLine] = []
    for ar in request.addons:
        addon = book.addons.get(ar.code)
        if addon is None:
            raise PricingError(f"no add-on {ar.code!r} in this price book")
        if ar.quantity <= 0:
            raise PricingError(f"{addon.name}: the quantity must be above 0")
        recurring = addon.unit in (AddonUnit.TB_MONTH, AddonUnit.IP_MONTH, AddonUnit.MONTH)
        addon_periods = months if recurring else Decimal(1)
        quantity, price = ar.quantity, addon.price
        if addon.code == BURN_IN_CODE:  # per node of the quote, free for large clusters
            nodes = sum(nr.quantity for nr in request.nodes)
            if nodes <= 0:
                raise PricingError(f"{addon.name}: the burn-in is per node, and no node is quoted")
            quantity = Decimal(nodes)
            price = ZERO if burn_in_included(nodes) else addon.price
        lines.append(
            _line(
                kind=LineKind.ADDON,
                code=addon.code,
                description=addon.name,
                quantity=quantity,
                unit=addon.unit.value,
                unit_price=price,
                periods=addon_periods,
                period_unit="month" if recurring else "once",
                list_amount=money(price * quantity * addon_periods),
                adjustments=(),
                book=book,
                tax_category=addon.tax_category,
                note=addon.note,
            )
        )
    return lines


def _custom_lines(book: PriceBook, request: QuoteRequest) -> list[PricedLine]:
    """Custom lines written by sales (the sales discount applies where discountable)."""
    lines: list[PricedLine] = []
    for cr in request.custom:
        if cr.quantity <= 0 or cr.unit_price < 0:
            raise PricingError(f"{cr.description}: quantity above 0 and a price of at least 0")
        if not cr.description.strip():
            raise PricingError("a custom line needs a description")
        custom_list = money(cr.unit_price * cr.quantity)
        adjustments: list[Adjustment] = []
        if cr.discountable and request.extra_discount:
            sales = _sales_adjustment(
                -money(custom_list * request.extra_discount), request.extra_discount
            )
            if sales:
                adjustments.append(sales)
        lines.append(
            _line(
                kind=LineKind.CUSTOM,
                code="custom",
                description=cr.description,
                quantity=cr.quantity,
                unit="each",
                unit_price=cr.unit_price,
                periods=Decimal(1),
                period_unit="once",
                list_amount=custom_list,
                adjustments=adjustments,
                book=book,
            )
        )
    return lines


def _free_lines(book: PriceBook) -> list[PricedLine]:
    """The free services the price book includes, at no charge."""
    lines: list[PricedLine] = []
    for service in book.free_services:
        lines.append(
            _line(
                kind=LineKind.FREE,
                code="free",
                description=service,
                quantity=Decimal(1),
                unit="service",
                unit_price=ZERO,
                periods=Decimal(1),
                period_unit="once",
                list_amount=ZERO,
                adjustments=(),
                book=book,
                note="included",
            )
        )
    return lines


def _priced_quote(
    book: PriceBook, request: QuoteRequest, *, months: Decimal, lines: list[PricedLine]
) -> PricedQuote:
    """The priced quote: its lines and their totals."""
    list_total = net_total = vat_total = ZERO
    for ln in lines:
        list_total += ln.list_amount
        net_total += ln.net
        vat_total += ln.vat
    # Every line's net is its list amount plus its adjustments, exactly (cents add
    # without rounding), so the discounts add up to the difference of the totals.
    discount_total = net_total - list_total
    return PricedQuote(
        currency=book.currency,
        vat_rate=book.vat_rate,
        term=request.term,
        duration=request.duration,
        months=months,
        lines=tuple(lines),
        list_total=list_total,
        discount_total=discount_total,
        net_total=net_total,
        vat_total=vat_total,
        gross_total=net_total + vat_total,
    )


# --- Comparable prices ------------------------------------------------------------------

# Hours in an average month (365 × 24 / 12): how public GPU clouds turn a monthly price
# into an hourly one.
HOURS_PER_MONTH = Decimal("730")


@dataclass(frozen=True, slots=True)
class GpuEquivalent:
    per_gpu_month: Decimal
    per_gpu_hour: Decimal


def gpu_equivalent(*, amount: Decimal, gpus: int, months: Decimal) -> GpuEquivalent | None:
    """``amount`` (net, for ``gpus`` GPUs over ``months``) per GPU-month and per GPU-hour,
    rounded half up to the cent; ``None`` without GPUs or months."""
    if gpus <= 0 or months <= 0:
        return None
    per_month = amount / Decimal(gpus) / months
    return GpuEquivalent(
        per_gpu_month=per_month.quantize(CENT, rounding=ROUND_HALF_UP),
        per_gpu_hour=(per_month / HOURS_PER_MONTH).quantize(CENT, rounding=ROUND_HALF_UP),
    )
