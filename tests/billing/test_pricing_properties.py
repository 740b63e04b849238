"""Property tests of the pricing engine (``billing.pricing.engine``) with Hypothesis, no database.

The strategies draw valid price books (``validate_book(book) == []``: daily × 30 at least
the monthly rate, multipliers in (0, 1], no negative price) with random term discounts of
every scope, promotions, add-ons and free services, and requests of 1 to 10 lines (nodes
with GPU cards, add-ons, custom lines) on any term and duration the engine allows, with a
sales discount of 0 to 50%.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billing.pricing.engine import (
    TERM_DURATION,
    AddonPrice,
    AddonRequest,
    AddonUnit,
    AdjustmentKind,
    Basis,
    CardOption,
    Category,
    CustomRequest,
    DiscountRule,
    LineKind,
    NodePrice,
    NodeRequest,
    PriceBook,
    PricedQuote,
    Promotion,
    QuoteRequest,
    Term,
    price_quote,
    validate_book,
)

D = Decimal
CENT = Decimal("0.01")
HALF_CENT = Decimal("0.005")
BASE_DAY = date(2026, 1, 1)
SITES = ("SZ", "HK")
NODE_TYPES = ("h100-8x", "a100-4x", "e5-bm", "l40s-8x")
GPU_MODELS = ("H100 80G SXM", "A100 40G", "RTX 3090", "V100S 32G")
RENTAL = (LineKind.NODE, LineKind.CARD)

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None)


def scaled(lo: int, hi: int, places: int) -> st.SearchStrategy[Decimal]:
    """Decimals from lo to hi units of 10**-places (cents for places=2)."""
    return st.integers(lo, hi).map(lambda n: Decimal(n).scaleb(-places))


def days_after(base: date, lo: int, hi: int) -> st.SearchStrategy[date]:
    return st.integers(lo, hi).map(lambda n: base + timedelta(days=n))


@st.composite
def monthly_and_daily(draw: st.DrawFn, max_monthly_cents: int) -> tuple[Decimal, Decimal]:
    """A monthly rate and a daily rate with daily × 30 ≥ monthly, both in cents."""
    monthly = draw(st.integers(0, max_monthly_cents))
    daily = -(-monthly // 30) + draw(st.integers(0, max(1, monthly // 10)))
    return Decimal(monthly).scaleb(-2), Decimal(daily).scaleb(-2)


@st.composite
def card_options(draw: st.DrawFn) -> tuple[CardOption, ...]:
    codes = draw(st.lists(st.sampled_from(("rtx3090", "v100s", "a10")), unique=True, max_size=2))
    options = []
    for code in codes:
        monthly, daily = draw(monthly_and_daily(300_000))
        options.append(
            CardOption(
                code,
                code.upper(),
                draw(st.sampled_from(GPU_MODELS)),
                monthly,
                daily,
                draw(st.integers(1, 4)),
            )
        )
    return tuple(options)


@st.composite
def node_prices(draw: st.DrawFn, node_type: str) -> NodePrice:
    category = draw(st.sampled_from(Category))
    basis = draw(st.sampled_from(Basis))
    units = draw(st.integers(1, 8)) if basis == Basis.PER_GPU else 1
    monthly, daily = draw(monthly_and_daily(15_000_000))
    return NodePrice(
        node_type,
        node_type.upper(),
        category,
        basis,
        units,
        monthly,
        daily,
        draw(st.sampled_from(GPU_MODELS)) if category == Category.GPU else None,
        draw(card_options()),
    )


@st.composite
def discount_rules(draw: st.DrawFn) -> DiscountRule:
    return DiscountRule(
        f"rule-{draw(st.integers(0, 999))}",
        "Term discount",
        draw(st.sampled_from(Term)),
        draw(scaled(1, 10_000, 4)),  # (0, 1]
        node_type=draw(st.none() | st.sampled_from(NODE_TYPES)),
        gpu_model=draw(st.none() | st.sampled_from(GPU_MODELS)),
        category=draw(st.none() | st.sampled_from(Category)),
    )


@st.composite
def promotions(draw: st.DrawFn) -> Promotion:
    valid_from = draw(days_after(BASE_DAY, 0, 60))
    return Promotion(
        f"promo-{draw(st.integers(0, 999))}",
        "Promotion",
        valid_from,
        draw(days_after(valid_from, 0, 90)),
        buy=draw(st.integers(1, 3)),
        get=draw(st.integers(1, 2)),
        site=draw(st.none() | st.sampled_from(SITES)),
        category=draw(st.none() | st.sampled_from(Category)),
        node_type=draw(st.none() | st.sampled_from(NODE_TYPES)),
    )


@st.composite
def addon_prices(draw: st.DrawFn) -> dict[str, AddonPrice]:
    codes = draw(
        st.lists(st.sampled_from(("ckpt", "egress", "ip", "ddos5", "ddos20")), unique=True)
    )
    return {
        code: AddonPrice(
            code, code.upper(), draw(st.sampled_from(AddonUnit)), draw(scaled(0, 1_000_000, 2))
        )
        for code in codes
    }


@st.composite
def price_books(draw: st.DrawFn) -> PriceBook:
    types = draw(st.lists(st.sampled_from(NODE_TYPES), unique=True, min_size=1, max_size=4))
    return PriceBook(
        site=draw(st.sampled_from(SITES)),
        currency="CNY",
        vat_rate=draw(
            st.sampled_from([Decimal("0"), Decimal("0.06"), Decimal("0.13")]) | scaled(0, 3000, 4)
        ),
        nodes={t: draw(node_prices(t)) for t in types},
        addons=draw(addon_prices()),
        discounts=tuple(draw(st.lists(discount_rules(), max_size=6))),
        promotions=tuple(draw(st.lists(promotions(), max_size=2))),
        free_services=tuple(
            draw(st.lists(st.sampled_from(("Snapshots", "NCCL tuning")), max_size=2))
        ),
    )


@st.composite
def node_requests(draw: st.DrawFn, book: PriceBook) -> NodeRequest:
    node = book.nodes[draw(st.sampled_from(sorted(book.nodes)))]
    options = draw(st.lists(st.sampled_from(node.options), unique=True)) if node.options else []
    cards = tuple((o.code, draw(st.integers(1, o.max_per_node))) for o in options)
    return NodeRequest(node.node_type, draw(st.integers(1, 10)), cards)


@st.composite
def custom_requests(draw: st.DrawFn) -> CustomRequest:
    return CustomRequest(
        draw(st.sampled_from(("Installation", "Cross-connect", "Acceptance test"))),
        Decimal(draw(st.integers(1, 20))),
        draw(scaled(0, 1_000_000, 2)),
        discountable=draw(st.booleans()),
    )


@st.composite
def terms(draw: st.DrawFn) -> tuple[Term, int]:
    term = draw(st.sampled_from(Term))
    lo, hi = TERM_DURATION[term]
    return term, draw(st.integers(lo, hi))


@st.composite
def books_and_requests(draw: st.DrawFn, nodes_only: bool = False) -> tuple[PriceBook, QuoteRequest]:
    book = draw(price_books())
    kinds = ["node"] if nodes_only else ["node", "custom"] + (["addon"] if book.addons else [])
    picked = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=10))
    nodes = tuple(draw(node_requests(book)) for k in picked if k == "node")
    addons = tuple(
        AddonRequest(draw(st.sampled_from(sorted(book.addons))), draw(scaled(1, 100_000, 3)))
        for k in picked
        if k == "addon"
    )
    custom = tuple(draw(custom_requests()) for k in picked if k == "custom")
    term, duration = draw(terms())
    request = QuoteRequest(
        term=term,
        duration=duration,
        on=draw(days_after(BASE_DAY, -10, 180)),
        nodes=nodes,
        addons=addons,
        custom=custom,
        extra_discount=draw(scaled(0, 5000, 4)),  # 0 to 50%
    )
    return book, request


def priced(book: PriceBook, request: QuoteRequest) -> PricedQuote:
    assert validate_book(book) == []  # the strategy only draws books the engine accepts
    return price_quote(book, request)


# Each property of a single quote is a function of (book, request, quote); one Hypothesis
# test runs them all on the same draws, since drawing books costs far more than pricing.


def nothing_is_ever_negative(book: PriceBook, request: QuoteRequest, q: PricedQuote) -> None:
    for line in q.lines:
        assert line.list_amount >= 0, line
        assert line.net >= 0, line
        assert line.vat >= 0, line
        assert line.gross >= 0, line
    for total in (q.list_total, q.net_total, q.vat_total, q.gross_total, q.net_per_month):
        assert total >= 0, q


def a_discount_never_raises_a_price(book: PriceBook, request: QuoteRequest, q: PricedQuote) -> None:
    for line in q.lines:
        for adjustment in line.adjustments:
            assert adjustment.amount <= 0, adjustment
        assert line.net <= line.list_amount, line
        assert line.net == line.list_amount + line.discount_total, line
    assert q.discount_total <= 0
    assert q.net_total <= q.list_total


def totals_are_the_sums_of_the_lines(
    book: PriceBook, request: QuoteRequest, q: PricedQuote
) -> None:
    assert q.net_total == sum(line.net for line in q.lines)
    assert q.vat_total == sum(line.vat for line in q.lines)
    assert q.list_total == sum(line.list_amount for line in q.lines)
    assert q.discount_total == sum(line.discount_total for line in q.lines)
    assert q.gross_total == q.net_total + q.vat_total
    assert q.list_total + q.discount_total == q.net_total  # discounts are negative
    for line in q.lines:
        assert line.gross == line.net + line.vat, line


def every_amount_has_two_places(book: PriceBook, request: QuoteRequest, q: PricedQuote) -> None:
    amounts = [q.list_total, q.discount_total, q.net_total, q.vat_total, q.gross_total]
    amounts.append(q.net_per_month)
    for line in q.lines:
        amounts += [line.list_amount, line.net, line.vat, line.gross, line.discount_total]
        amounts += [a.amount for a in line.adjustments]
    for amount in amounts:
        assert amount.as_tuple().exponent == -2, amount


def vat_is_the_rate_of_each_net_half_up(
    book: PriceBook, request: QuoteRequest, q: PricedQuote
) -> None:
    for line in q.lines:
        exact = line.net * book.vat_rate
        assert abs(line.vat - exact) <= HALF_CENT, line
        if exact % CENT == HALF_CENT:  # a tie goes up, as on Chinese invoices
            assert line.vat > exact, line


def rental_net_is_the_exact_price_to_the_cent(
    book: PriceBook, request: QuoteRequest, q: PricedQuote
) -> None:
    """Term discount, promotion and sales discount multiply, and the line is rounded once:
    the net never drifts from list × multiplier × share paid × (1 − sales) by more than
    half a cent, however many steps applied."""
    for line in q.lines:
        if line.kind not in RENTAL:
            continue
        exact = line.list_amount * (1 - request.extra_discount)
        for adjustment in line.adjustments:
            params = adjustment.param_dict
            if adjustment.kind == AdjustmentKind.TERM:
                exact *= Decimal(params["multiplier"])
            elif adjustment.kind == AdjustmentKind.PROMOTION:
                paid = int(params["quantity"]) - int(params["free"])
                exact = exact * paid / int(params["quantity"])
        assert abs(line.net - exact) <= HALF_CENT, (line, exact)


SINGLE_QUOTE_PROPERTIES = (
    nothing_is_ever_negative,
    a_discount_never_raises_a_price,
    totals_are_the_sums_of_the_lines,
    every_amount_has_two_places,
    vat_is_the_rate_of_each_net_half_up,
    rental_net_is_the_exact_price_to_the_cent,
)


@PROPERTY_SETTINGS
@given(books_and_requests())
def test_every_quote_keeps_the_engine_promises(case):
    book, request = case
    q = priced(book, request)
    for prop in SINGLE_QUOTE_PROPERTIES:
        prop(book, request, q)


def _example() -> tuple[PriceBook, QuoteRequest, PricedQuote]:
    h100 = NodePrice(
        "h100-8x", "H100", Category.GPU, Basis.PER_NODE, 1, D("100000"), D("4000"), "H100 80G SXM"
    )
    e5 = NodePrice("e5-bm", "E5", Category.BARE_METAL, Basis.PER_NODE, 1, D("3999"), D("160"))
    book = PriceBook(
        "HK",
        "CNY",
        D("0.06"),
        {"h100-8x": h100, "e5-bm": e5},
        discounts=(
            DiscountRule("gpu-y", "GPU annual", Term.YEAR, D("0.8"), category=Category.GPU),
        ),
        promotions=(Promotion("bogo", "BOGO", BASE_DAY, BASE_DAY, category=Category.BARE_METAL),),
    )
    request = QuoteRequest(
        Term.YEAR,
        1,
        BASE_DAY,
        (NodeRequest("h100-8x", 1), NodeRequest("e5-bm", 2)),
        extra_discount=D("0.0333"),
    )
    return book, request, priced(book, request)


def _with_line(q: PricedQuote, **changes: object) -> PricedQuote:
    return replace(q, lines=(replace(q.lines[0], **changes), *q.lines[1:]))


BREAKERS = {
    nothing_is_ever_negative: lambda q: _with_line(q, gross=D("-0.01")),
    a_discount_never_raises_a_price: lambda q: _with_line(
        q,
        adjustments=(*q.lines[0].adjustments, replace(q.lines[0].adjustments[0], amount=D("1.00"))),
    ),
    totals_are_the_sums_of_the_lines: lambda q: replace(q, vat_total=q.vat_total + CENT),
    every_amount_has_two_places: lambda q: replace(q, net_total=q.net_total.quantize(D("0.1"))),
    vat_is_the_rate_of_each_net_half_up: lambda q: _with_line(q, vat=q.lines[0].vat + CENT),
    rental_net_is_the_exact_price_to_the_cent: lambda q: _with_line(q, net=q.lines[0].net - CENT),
}


@pytest.mark.parametrize("prop", SINGLE_QUOTE_PROPERTIES, ids=lambda f: f.__name__)
def test_each_property_rejects_a_quote_broken_the_way_it_guards_against(prop):
    book, request, q = _example()
    prop(book, request, q)
    with pytest.raises(AssertionError):
        prop(book, request, BREAKERS[prop](q))


# A day term of 30 days, a month, a quarter and a year, shortest first, with their months.
COMMITMENTS = ((Term.DAY, 30, 1), (Term.MONTH, 1, 1), (Term.QUARTER, 1, 3), (Term.YEAR, 1, 12))


@PROPERTY_SETTINGS
@given(books_and_requests(nodes_only=True))
def test_a_longer_commitment_never_costs_more_per_month(case):
    book, request = case
    quotes = [priced(book, replace(request, term=t, duration=d)) for t, d, _ in COMMITMENTS]
    assert [q.months for q in quotes] == [months for _, _, months in COMMITMENTS]
    per_month = [[ln.net / q.months for ln in q.lines if ln.kind in RENTAL] for q in quotes]
    for i in range(len(COMMITMENTS) - 1):
        (short_term, _, short_months), (long_term, _, long_months) = COMMITMENTS[i : i + 2]
        # The exact prices per month never rise with the commitment (a term's multiplier
        # is capped by every shorter term's, daily × 30 ≥ monthly, promotions and the
        # sales discount do not depend on the term). But each line's net is its exact
        # price rounded to the cent: up to half a cent below it for the shorter term, up
        # to half a cent above it for the longer one, spread over their months. So the
        # longer term may show a fraction of a cent a month more, never a whole cent:
        # at most 0.67 of a cent (month then quarter), 0.21 (quarter then year).
        slack = HALF_CENT / short_months + HALF_CENT / long_months
        assert len(per_month[i]) == len(per_month[i + 1])
        for short, long in zip(per_month[i], per_month[i + 1], strict=True):
            assert long - short <= slack, (short_term, short, long_term, long)
