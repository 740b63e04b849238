"""Example-based tests of the pure pricing engine (``billing.pricing.engine``), no database.

The price books follow the seeds (DESIGN.md, "Prices, terms and rules from the seeds"):
Shenzhen in CNY with 6% VAT, the H100, A100 and bare-metal E5 node types with their list
prices, the GPU quarterly / annual and H100 annual discounts, and a Hong Kong
buy-one-get-one promotion for bare metal.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from billing.pricing.engine import (
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
    PricedLine,
    PricedQuote,
    PricingError,
    Promotion,
    QuoteRequest,
    Term,
    price_quote,
    term_multiplier,
    validate_book,
)

D = Decimal
ON = date(2026, 2, 1)  # inside the Hong Kong promotion

RTX3090 = CardOption("rtx3090", "RTX 3090 24G", "RTX 3090", D("1750.00"), D("70.00"), 4)
V100S = CardOption("v100s", "V100S 32G", "V100S 32G", D("1500.00"), D("60.00"), 4)

H100 = NodePrice(
    "h100-8x",
    "H100 8-GPU NVLink",
    Category.GPU,
    Basis.PER_NODE,
    1,
    D("100000.00"),
    # The seeds give no daily rate; ¥4,000 a day is derived for the test (above the
    # ¥3,333.33 that daily × 30 must at least reach against ¥100,000 a month).
    D("4000.00"),
    "H100 80G SXM",
)
A100 = NodePrice(
    "a100-4x",
    "A100 40G 4-GPU",
    Category.GPU,
    Basis.PER_GPU,
    4,
    D("2800.00"),  # per GPU per month
    D("112.00"),  # per GPU per day, derived for the test
    "A100 40G",
)
E5 = NodePrice(
    "e5-bm",
    "Bare-metal E5",
    Category.BARE_METAL,
    Basis.PER_NODE,
    1,
    D("3999.00"),
    D("160.00"),  # derived for the test
    None,
    (RTX3090, V100S),
)

ADDONS = {
    "ckpt": AddonPrice("ckpt", "Checkpoint storage", AddonUnit.TB_MONTH, D("300.00")),
    "egress": AddonPrice("egress", "Egress traffic", AddonUnit.TB, D("500.00"), "estimated"),
    "ip": AddonPrice("ip", "Extra IPv4 address", AddonUnit.IP_MONTH, D("50.00")),
    "ddos5": AddonPrice("ddos5", "DDoS protection 5G", AddonUnit.MONTH, D("0.00"), "free tier"),
    "ddos20": AddonPrice("ddos20", "DDoS protection 20G", AddonUnit.MONTH, D("2000.00")),
}

GPU_QUARTERLY = DiscountRule(
    "gpu-q", "GPU quarterly", Term.QUARTER, D("0.95"), category=Category.GPU
)
GPU_ANNUAL = DiscountRule("gpu-y", "GPU annual", Term.YEAR, D("0.80"), category=Category.GPU)
H100_ANNUAL = DiscountRule("h100-y", "H100 annual", Term.YEAR, D("0.85"), gpu_model="H100 80G SXM")

HK_BOGO = Promotion(
    "hk-bogo",
    "Hong Kong bare metal: buy one get one",
    date(2026, 1, 1),
    date(2026, 3, 31),
    buy=1,
    get=1,
    site="HK",
    category=Category.BARE_METAL,
)

FREE = ("Snapshots", "DDoS protection 5-20G", "Environment set-up", "NCCL tuning sheet")


def sz_book(**changes: object) -> PriceBook:
    """Shenzhen, CNY, VAT 6%. The HK promotion is in the book to show it stays in HK."""
    fields: dict[str, object] = {
        "site": "SZ",
        "currency": "CNY",
        "vat_rate": D("0.06"),
        "nodes": {n.node_type: n for n in (H100, A100, E5)},
        "addons": ADDONS,
        "discounts": (GPU_QUARTERLY, GPU_ANNUAL, H100_ANNUAL),
        "promotions": (HK_BOGO,),
        "free_services": FREE,
    }
    fields.update(changes)
    return PriceBook(**fields)  # type: ignore[arg-type]


def hk_book() -> PriceBook:
    return sz_book(site="HK", vat_rate=D("0"))


def quote(
    book: PriceBook,
    term: Term = Term.MONTH,
    duration: int = 1,
    *,
    nodes: tuple[NodeRequest, ...] = (),
    addons: tuple[AddonRequest, ...] = (),
    custom: tuple[CustomRequest, ...] = (),
    extra: str = "0",
    on: date = ON,
) -> PricedQuote:
    return price_quote(book, QuoteRequest(term, duration, on, nodes, addons, custom, D(extra)))


def only(q: PricedQuote, code: str) -> PricedLine:
    [line] = [ln for ln in q.lines if ln.code == code]
    return line


def adjustment_codes(line: PricedLine) -> list[str]:
    return [a.code for a in line.adjustments]


# --- The seed's list prices -----------------------------------------------------------


def test_seed_book_is_valid():
    assert validate_book(sz_book()) == []
    assert validate_book(hk_book()) == []


def test_h100_annual_is_1_020_000_for_one_node_for_a_year():
    # "H100 整机月租¥10 万，年付 85 折后一年¥102 万"
    q = quote(sz_book(), Term.YEAR, 1, nodes=(NodeRequest("h100-8x", 1),))
    line = only(q, "h100-8x")
    assert line.list_amount == D("1200000.00")
    assert line.periods == 12 and line.period_unit == "month"
    assert line.net == D("1020000.00")
    assert line.vat == D("61200.00")
    assert line.gross == D("1081200.00")
    assert q.net_total == D("1020000.00")
    assert q.net_per_month == D("85000.00")


def test_a100_four_gpus_at_2800_is_11200_a_month():
    q = quote(sz_book(), nodes=(NodeRequest("a100-4x", 1),))
    line = only(q, "a100-4x")
    assert line.unit == "GPU"
    assert line.quantity == 4
    assert line.unit_price == D("2800.00")
    assert line.net == D("11200.00")
    assert line.adjustments == ()


def test_e5_with_one_rtx3090_is_5749_a_month():
    q = quote(sz_book(), nodes=(NodeRequest("e5-bm", 1, (("rtx3090", 1),)),))
    node, card = only(q, "e5-bm"), only(q, "e5-bm:rtx3090")
    assert node.kind == LineKind.NODE and node.net == D("3999.00")
    assert card.kind == LineKind.CARD and card.net == D("1750.00")
    assert card.unit == "card" and card.quantity == 1
    assert q.net_total == D("5749.00")


def test_cards_are_priced_per_card_per_node():
    # 2 servers with 4 V100S each: 8 cards at ¥1,500
    q = quote(sz_book(), nodes=(NodeRequest("e5-bm", 2, (("v100s", 4),)),))
    card = only(q, "e5-bm:v100s")
    assert card.quantity == 8
    assert card.net == D("12000.00")
    assert only(q, "e5-bm").net == D("7998.00")


def test_daily_term_uses_the_daily_rate_per_day():
    q = quote(sz_book(), Term.DAY, 10, nodes=(NodeRequest("h100-8x", 2),))
    line = only(q, "h100-8x")
    assert line.unit_price == D("4000.00")
    assert line.periods == 10 and line.period_unit == "day"
    assert line.net == D("80000.00")


# --- Term discounts: the most specific rule wins ---------------------------------------


def test_h100_annual_pays_85_percent_not_the_gpu_annual_80():
    q = quote(sz_book(), Term.YEAR, 1, nodes=(NodeRequest("h100-8x", 1),))
    [adj] = only(q, "h100-8x").adjustments
    assert adj.code == "h100-y"
    assert adj.kind == AdjustmentKind.TERM
    assert adj.param_dict["multiplier"] == "0.85"
    assert adj.amount == D("-180000.00")
    assert "85%" in adj.reason


def test_a100_annual_pays_80_percent_of_list():
    q = quote(sz_book(), Term.YEAR, 1, nodes=(NodeRequest("a100-4x", 1),))
    line = only(q, "a100-4x")
    assert adjustment_codes(line) == ["gpu-y"]
    assert line.list_amount == D("134400.00")
    assert line.net == D("107520.00")


def test_gpu_quarterly_pays_95_percent_and_bare_metal_gets_no_term_discount():
    q = quote(
        sz_book(), Term.QUARTER, 1, nodes=(NodeRequest("h100-8x", 1), NodeRequest("e5-bm", 1))
    )
    h100 = only(q, "h100-8x")
    assert adjustment_codes(h100) == ["gpu-q"]
    assert h100.net == D("285000.00")
    e5 = only(q, "e5-bm")
    assert e5.adjustments == ()
    assert e5.net == D("11997.00")


def test_gpu_cards_on_a_bare_metal_server_get_the_gpu_term_discount():
    q = quote(sz_book(), Term.YEAR, 1, nodes=(NodeRequest("e5-bm", 1, (("rtx3090", 1),)),))
    assert only(q, "e5-bm").net == D("47988.00")
    card = only(q, "e5-bm:rtx3090")
    assert adjustment_codes(card) == ["gpu-y"]
    assert card.net == D("16800.00")  # 1,750 × 12 × 80%


def test_monthly_and_daily_terms_get_no_term_discount():
    q = quote(sz_book(), Term.MONTH, 3, nodes=(NodeRequest("h100-8x", 1),))
    assert only(q, "h100-8x").net == D("300000.00")
    q = quote(sz_book(), Term.DAY, 89, nodes=(NodeRequest("h100-8x", 1),))
    assert only(q, "h100-8x").net == D("356000.00")


def test_a_node_type_rule_beats_a_gpu_model_rule_beats_a_category_rule():
    by_node_type = DiscountRule(
        "h100-node-y", "H100 node annual", Term.YEAR, D("0.90"), node_type="h100-8x"
    )
    book = sz_book(discounts=(GPU_ANNUAL, H100_ANNUAL, by_node_type))
    q = quote(book, Term.YEAR, 1, nodes=(NodeRequest("h100-8x", 1), NodeRequest("a100-4x", 1)))
    assert adjustment_codes(only(q, "h100-8x")) == ["h100-node-y"]
    assert only(q, "h100-8x").net == D("1080000.00")
    assert adjustment_codes(only(q, "a100-4x")) == ["gpu-y"]


def test_h100_annual_scoped_by_node_type_gives_the_same_price():
    by_node_type = DiscountRule("h100-y", "H100 annual", Term.YEAR, D("0.85"), node_type="h100-8x")
    book = sz_book(discounts=(GPU_QUARTERLY, GPU_ANNUAL, by_node_type))
    q = quote(book, Term.YEAR, 1, nodes=(NodeRequest("h100-8x", 1),))
    assert adjustment_codes(only(q, "h100-8x")) == ["h100-y"]
    assert only(q, "h100-8x").net == D("1020000.00")


def test_a_longer_term_is_capped_by_a_cheaper_shorter_term_and_says_so():
    stingy_annual = DiscountRule(
        "bm-y", "Bare metal annual", Term.YEAR, D("0.98"), category=Category.BARE_METAL
    )
    generous_quarter = DiscountRule(
        "bm-q", "Bare metal quarterly", Term.QUARTER, D("0.90"), category=Category.BARE_METAL
    )
    book = sz_book(discounts=(stingy_annual, generous_quarter))
    q = quote(book, Term.YEAR, 1, nodes=(NodeRequest("e5-bm", 1),))
    [adj] = only(q, "e5-bm").adjustments
    assert adj.code == "bm-q"
    assert adj.param_dict["capped"] == "1"
    assert only(q, "e5-bm").net == D("43189.20")  # 3,999 × 12 × 90%, not 98%
    multiplier, rule, capped = term_multiplier(
        book.discounts,
        term=Term.YEAR,
        node_type="e5-bm",
        gpu_model=None,
        category=Category.BARE_METAL,
    )
    assert (multiplier, rule, capped) == (D("0.90"), generous_quarter, True)


# --- The Hong Kong buy-one-get-one promotion --------------------------------------------


@pytest.mark.parametrize(("nodes", "free"), [(2, 1), (3, 1), (4, 2), (5, 2)])
def test_hk_bogo_gives_one_free_node_per_pair(nodes, free):
    q = quote(hk_book(), nodes=(NodeRequest("e5-bm", nodes),))
    line = only(q, "e5-bm")
    [adj] = line.adjustments
    assert adj.code == "hk-bogo"
    assert adj.kind == AdjustmentKind.PROMOTION
    assert adj.param_dict["free"] == str(free)
    assert line.net == D("3999.00") * (nodes - free)


def test_hk_bogo_gives_nothing_for_a_single_node():
    q = quote(hk_book(), nodes=(NodeRequest("e5-bm", 1),))
    assert only(q, "e5-bm").adjustments == ()
    assert only(q, "e5-bm").net == D("3999.00")


@pytest.mark.parametrize("on", [date(2026, 1, 1), date(2026, 3, 31)])
def test_hk_bogo_applies_on_its_first_and_last_day(on):
    q = quote(hk_book(), nodes=(NodeRequest("e5-bm", 2),), on=on)
    assert adjustment_codes(only(q, "e5-bm")) == ["hk-bogo"]


@pytest.mark.parametrize("on", [date(2025, 12, 31), date(2026, 4, 1)])
def test_hk_bogo_does_not_apply_before_or_after_its_dates(on):
    q = quote(hk_book(), nodes=(NodeRequest("e5-bm", 2),), on=on)
    assert only(q, "e5-bm").adjustments == ()
    assert only(q, "e5-bm").net == D("7998.00")


def test_hk_bogo_does_not_apply_in_shenzhen():
    book = sz_book()
    assert HK_BOGO in book.promotions
    q = quote(book, nodes=(NodeRequest("e5-bm", 2),))
    assert only(q, "e5-bm").adjustments == ()
    assert only(q, "e5-bm").net == D("7998.00")


def test_hk_bogo_does_not_apply_to_gpu_nodes():
    q = quote(hk_book(), nodes=(NodeRequest("h100-8x", 2), NodeRequest("a100-4x", 2)))
    assert only(q, "h100-8x").adjustments == ()
    assert only(q, "a100-4x").adjustments == ()
    assert q.net_total == D("222400.00")


def test_promotion_applies_after_the_term_discount():
    bm_quarter = DiscountRule(
        "bm-q", "Bare metal quarterly", Term.QUARTER, D("0.90"), category=Category.BARE_METAL
    )
    book = sz_book(site="HK", vat_rate=D("0"), discounts=(bm_quarter,))
    q = quote(book, Term.QUARTER, 1, nodes=(NodeRequest("e5-bm", 2),))
    line = only(q, "e5-bm")
    assert adjustment_codes(line) == ["bm-q", "hk-bogo"]
    term, promo = (a.amount for a in line.adjustments)
    assert term == D("-2399.40")  # 10% of 23,994
    assert promo == D("-10797.30")  # half of the 21,594.60 left
    assert line.net == D("10797.30")


def test_discount_steps_are_rounded_once_so_no_cent_is_lost_on_the_way():
    # Bare metal 5% off every term from a month up, the HK promotion and 2.5% from sales:
    # a month of two ¥2,588.85 servers is 5,177.70 × 95% × ½ × 97.5% = 2,397.9223…, a year
    # 28,775.0677…. Rounding each step on its own would give 2,397.91 for the month, and
    # the year (2,397.9225 a month) would cost more a month than the month.
    rules = tuple(
        DiscountRule(f"bm-{t.value}", "Bare metal", t, D("0.95"), category=Category.BARE_METAL)
        for t in (Term.MONTH, Term.QUARTER, Term.YEAR)
    )
    server = NodePrice(
        "e5-bm", "Bare-metal E5", Category.BARE_METAL, Basis.PER_NODE, 1, D("2588.85"), D("90.00")
    )
    book = sz_book(site="HK", nodes={"e5-bm": server}, discounts=rules)
    month = quote(book, Term.MONTH, 1, nodes=(NodeRequest("e5-bm", 2),), extra="0.025")
    year = quote(book, Term.YEAR, 1, nodes=(NodeRequest("e5-bm", 2),), extra="0.025")
    assert adjustment_codes(only(month, "e5-bm")) == ["bm-month", "hk-bogo", "sales"]
    assert only(month, "e5-bm").net == D("2397.92")
    assert only(year, "e5-bm").net == D("28775.07")
    assert only(year, "e5-bm").net / 12 - only(month, "e5-bm").net < D("0.01")


# --- Add-ons, free services and custom lines --------------------------------------------


def test_recurring_addons_are_priced_over_the_whole_commitment():
    q = quote(
        sz_book(),
        Term.QUARTER,
        2,  # six months
        addons=(
            AddonRequest("ckpt", D("10")),
            AddonRequest("ip", D("2")),
            AddonRequest("ddos20", D("1")),
        ),
    )
    assert only(q, "ckpt").net == D("18000.00")  # 10 TB × ¥300 × 6
    assert only(q, "ckpt").periods == 6
    assert only(q, "ip").net == D("600.00")  # 2 × ¥50 × 6
    assert only(q, "ddos20").net == D("12000.00")  # ¥2,000 × 6


def test_recurring_addons_are_prorated_for_a_daily_term():
    q = quote(sz_book(), Term.DAY, 15, addons=(AddonRequest("ip", D("2")),))
    assert only(q, "ip").net == D("50.00")  # half a month of 2 × ¥50


def test_egress_is_per_tb_once_whatever_the_term():
    for term, duration in [(Term.DAY, 3), (Term.YEAR, 2)]:
        q = quote(sz_book(), term, duration, addons=(AddonRequest("egress", D("5.5")),))
        line = only(q, "egress")
        assert line.period_unit == "once"
        assert line.net == D("2750.00")
        assert line.note == "estimated"


def test_addons_get_no_discounts():
    q = quote(sz_book(), Term.YEAR, 1, addons=(AddonRequest("ckpt", D("1")),), extra="0.1")
    line = only(q, "ckpt")
    assert line.adjustments == ()
    assert line.net == D("3600.00")


def test_free_ddos_tier_is_shown_at_zero():
    q = quote(sz_book(), Term.YEAR, 1, addons=(AddonRequest("ddos5", D("1")),))
    line = only(q, "ddos5")
    assert line.kind == LineKind.ADDON
    assert (line.list_amount, line.net, line.vat, line.gross) == (D("0.00"),) * 4
    assert line.note == "free tier"


def test_free_services_are_listed_as_zero_lines():
    q = quote(sz_book(), nodes=(NodeRequest("h100-8x", 1),))
    free = [ln for ln in q.lines if ln.kind == LineKind.FREE]
    assert [ln.description for ln in free] == list(FREE)
    for ln in free:
        assert (ln.list_amount, ln.net, ln.vat, ln.gross) == (D("0.00"),) * 4
        assert ln.note == "included"
    assert q.net_total == D("100000.00")


def test_custom_lines_are_priced_as_given_once():
    q = quote(
        sz_book(),
        Term.YEAR,
        3,
        custom=(CustomRequest("On-site installation", D("2"), D("2500.50")),),
    )
    line = only(q, "custom")
    assert line.kind == LineKind.CUSTOM
    assert line.description == "On-site installation"
    assert line.period_unit == "once"
    assert line.net == D("5001.00")
    assert line.vat == D("300.06")


def test_only_discountable_custom_lines_get_the_sales_discount():
    q = quote(
        sz_book(),
        custom=(
            CustomRequest("Installation", D("1"), D("1000.00"), discountable=True),
            CustomRequest("Cross-connect", D("1"), D("1000.00")),
        ),
        extra="0.10",
    )
    installation, cross_connect = (ln for ln in q.lines if ln.kind == LineKind.CUSTOM)
    assert installation.net == D("900.00")
    assert adjustment_codes(installation) == ["sales"]
    assert cross_connect.net == D("1000.00")
    assert cross_connect.adjustments == ()


# --- Sales discount, VAT and totals ------------------------------------------------------


def test_sales_discount_comes_after_the_term_discount():
    q = quote(sz_book(), Term.YEAR, 1, nodes=(NodeRequest("h100-8x", 1),), extra="0.05")
    line = only(q, "h100-8x")
    assert adjustment_codes(line) == ["h100-y", "sales"]
    sales = line.adjustments[1]
    assert sales.kind == AdjustmentKind.SALES
    assert sales.amount == D("-51000.00")  # 5% of the 1,020,000 left, not of 1,200,000
    assert sales.param_dict["percent"] == "5%"
    assert line.net == D("969000.00")


def test_sales_discount_comes_after_the_promotion():
    q = quote(hk_book(), nodes=(NodeRequest("e5-bm", 2),), extra="0.10")
    line = only(q, "e5-bm")
    assert adjustment_codes(line) == ["hk-bogo", "sales"]
    assert line.adjustments[1].amount == D("-399.90")  # 10% of the one paid node
    assert line.net == D("3599.10")


def test_vat_is_six_percent_of_each_line_rounded_half_up():
    # 12,344.75 × 6% = 740.685: half up gives 740.69 (banker's rounding would give 740.68)
    q = quote(sz_book(), custom=(CustomRequest("Acceptance test", D("1"), D("12344.75")),))
    line = only(q, "custom")
    assert line.vat == D("740.69")
    assert line.gross == D("13085.44")


def test_vat_is_summed_per_line_not_taken_of_the_total():
    # each 0.75 line has VAT 0.045 → 0.05; two lines → 0.10 (6% of 1.50 would be 0.09)
    q = quote(
        sz_book(),
        custom=(
            CustomRequest("Cable", D("1"), D("0.75")),
            CustomRequest("Label", D("1"), D("0.75")),
        ),
    )
    assert q.net_total == D("1.50")
    assert q.vat_total == D("0.10")
    assert q.gross_total == D("1.60")


def test_a_full_quote_adds_up():
    q = quote(
        sz_book(),
        Term.YEAR,
        1,
        nodes=(NodeRequest("h100-8x", 2), NodeRequest("e5-bm", 1, (("rtx3090", 2),))),
        addons=(AddonRequest("ckpt", D("20")), AddonRequest("egress", D("3"))),
        custom=(CustomRequest("Installation", D("1"), D("5000.00")),),
    )
    # H100 2 × 1,200,000 × 85% + E5 47,988 + 2 cards × 21,000 × 80% + storage 72,000
    # + egress 1,500 + installation 5,000
    assert q.list_total == D("2400000.00") + D("47988.00") + D("42000.00") + D("78500.00")
    assert q.net_total == D("2040000.00") + D("47988.00") + D("33600.00") + D("78500.00")
    assert q.discount_total == q.net_total - q.list_total
    assert q.vat_total == D("132005.28")
    assert q.gross_total == q.net_total + q.vat_total
    assert q.currency == "CNY" and q.months == 12


# --- Bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "duration"),
    [
        (Term.DAY, 0),
        (Term.DAY, 90),
        (Term.MONTH, 0),
        (Term.MONTH, 37),
        (Term.QUARTER, 13),
        (Term.YEAR, 0),
        (Term.YEAR, 6),
    ],
)
def test_durations_outside_the_term_range_are_refused(term, duration):
    with pytest.raises(PricingError, match=rf"{term.value} term runs .* not {duration}"):
        quote(sz_book(), term, duration, nodes=(NodeRequest("h100-8x", 1),))


@pytest.mark.parametrize(
    ("term", "duration"),
    [(Term.DAY, 1), (Term.DAY, 89), (Term.MONTH, 36), (Term.QUARTER, 12), (Term.YEAR, 5)],
)
def test_durations_at_the_ends_of_the_range_are_priced(term, duration):
    q = quote(sz_book(), term, duration, nodes=(NodeRequest("h100-8x", 1),))
    assert only(q, "h100-8x").net > 0


def test_unknown_node_type_is_refused_by_name():
    with pytest.raises(PricingError, match="no price for node type 'b200-8x'"):
        quote(sz_book(), nodes=(NodeRequest("b200-8x", 1),))


def test_unknown_card_option_is_refused_by_name():
    with pytest.raises(PricingError, match="Bare-metal E5 has no card option 'rtx4090'"):
        quote(sz_book(), nodes=(NodeRequest("e5-bm", 1, (("rtx4090", 1),)),))


def test_cards_on_a_server_without_card_options_are_refused():
    with pytest.raises(PricingError, match="H100 8-GPU NVLink has no card option 'rtx3090'"):
        quote(sz_book(), nodes=(NodeRequest("h100-8x", 1, (("rtx3090", 1),)),))


@pytest.mark.parametrize("cards", [0, 5])
def test_card_count_outside_one_to_four_is_refused(cards):
    with pytest.raises(PricingError, match=f"1 to 4 cards per node, not {cards}"):
        quote(sz_book(), nodes=(NodeRequest("e5-bm", 1, (("rtx3090", cards),)),))


def test_unknown_addon_is_refused_by_name():
    with pytest.raises(PricingError, match="no add-on 'ddos100'"):
        quote(sz_book(), addons=(AddonRequest("ddos100", D("1")),))


def test_zero_nodes_are_refused():
    with pytest.raises(PricingError, match="at least one node"):
        quote(sz_book(), nodes=(NodeRequest("h100-8x", 0),))


@pytest.mark.parametrize("extra", ["-0.01", "1", "1.5"])
def test_sales_discount_must_be_below_100_percent_and_not_negative(extra):
    with pytest.raises(PricingError, match="sales discount"):
        quote(sz_book(), nodes=(NodeRequest("h100-8x", 1),), extra=extra)


def test_custom_line_without_description_or_with_negative_price_is_refused():
    with pytest.raises(PricingError, match="needs a description"):
        quote(sz_book(), custom=(CustomRequest("  ", D("1"), D("10")),))
    with pytest.raises(PricingError, match="a price of at least 0"):
        quote(sz_book(), custom=(CustomRequest("Refund", D("1"), D("-10")),))


# --- Price book validation ---------------------------------------------------------------


def test_validate_book_flags_a_daily_rate_below_the_monthly_over_30_days():
    cheap_days = NodePrice(
        "h100-8x",
        "H100 8-GPU NVLink",
        Category.GPU,
        Basis.PER_NODE,
        1,
        D("100000.00"),
        D("3333.33"),
    )
    problems = validate_book(sz_book(nodes={"h100-8x": cheap_days}))
    assert len(problems) == 1
    assert "h100-8x" in problems[0] and "below monthly" in problems[0]
    exactly = NodePrice(
        "h100-8x", "H100 8-GPU NVLink", Category.GPU, Basis.PER_NODE, 1, D("99000.00"), D("3300.00")
    )
    assert validate_book(sz_book(nodes={"h100-8x": exactly})) == []


def test_validate_book_flags_a_card_daily_rate_below_the_monthly_over_30_days():
    cheap = CardOption("rtx3090", "RTX 3090 24G", "RTX 3090", D("1750.00"), D("58.00"), 4)
    e5 = NodePrice(
        "e5-bm",
        "Bare-metal E5",
        Category.BARE_METAL,
        Basis.PER_NODE,
        1,
        D("3999.00"),
        D("160.00"),
        None,
        (cheap,),
    )
    [problem] = validate_book(sz_book(nodes={"e5-bm": e5}))
    assert "e5-bm/rtx3090" in problem


@pytest.mark.parametrize("multiplier", ["0", "-0.5", "1.05"])
def test_validate_book_flags_multipliers_outside_zero_to_one(multiplier):
    rule = DiscountRule("odd", "Odd", Term.YEAR, D(multiplier), category=Category.GPU)
    [problem] = validate_book(sz_book(discounts=(rule,)))
    assert "odd" in problem and "(0, 1]" in problem


def test_validate_book_accepts_a_multiplier_of_one():
    rule = DiscountRule("none", "No discount", Term.YEAR, D("1"), category=Category.GPU)
    assert validate_book(sz_book(discounts=(rule,))) == []


def test_validate_book_flags_negative_prices():
    node = NodePrice("h100-8x", "H100", Category.GPU, Basis.PER_NODE, 1, D("-1.00"), D("0.00"))
    card = CardOption("v100s", "V100S", "V100S", D("-1500.00"), D("60.00"), 4)
    e5 = NodePrice(
        "e5-bm",
        "E5",
        Category.BARE_METAL,
        Basis.PER_NODE,
        1,
        D("3999.00"),
        D("160.00"),
        None,
        (card,),
    )
    addon = AddonPrice("ip", "Extra IP", AddonUnit.IP_MONTH, D("-50.00"))
    problems = validate_book(sz_book(nodes={"h100-8x": node, "e5-bm": e5}, addons={"ip": addon}))
    assert any("h100-8x: negative price" in p for p in problems)
    assert any("e5-bm/v100s: negative price" in p for p in problems)
    assert any("add-on ip: negative price" in p for p in problems)
