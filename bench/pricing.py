"""Benchmark of ``billing.pricing.engine.price_quote``: how many ten-line quotes it prices a second.

A realistic Hong Kong price book (GPU nodes priced per node and per GPU, a bare-metal
server with card options, term discounts, an active buy-one-get-one promotion, add-ons
and free services) and a request of ten lines: four node lines (one with GPU cards, so
five rental lines), four add-ons and two custom lines, with a 3% sales discount on top;
the quote has eleven priced lines (plus the zero lines of the free services).

Each timed round prices ``--quotes`` quotes (2,000 by default) after a warm-up; the
figure is the median round. In the same run, in rounds taking turns with the engine's,
the floor is timed: a trivial loop that builds ten ``Decimal`` sums (one per line) per
"quote", far less than any engine that prices ten lines in ``Decimal`` must spend.
``ratio`` is engine time / floor time per quote (lower is better).

Needs no database and no Django settings. Usage, from the repository root::

    .venv/bin/python bench/pricing.py
    .venv/bin/python bench/pricing.py --rounds 9 --quotes 5000

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from pathlib import Path

if __package__ in {None, ""}:  # run as a script: make ``billing`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from billing.pricing.engine import (
    AddonPrice,
    AddonRequest,
    AddonUnit,
    Basis,
    CardOption,
    Category,
    CustomRequest,
    DiscountRule,
    NodePrice,
    NodeRequest,
    PriceBook,
    Promotion,
    QuoteRequest,
    Term,
    price_quote,
    validate_book,
)

GOAL_QUOTES_PER_S = 5_000
D = Decimal


def build_book() -> PriceBook:
    cards = (
        CardOption("rtx3090", "RTX 3090 24G", "RTX 3090", D("1750.00"), D("70.00"), 4),
        CardOption("v100s", "V100S 32G", "V100S 32G", D("1500.00"), D("60.00"), 4),
    )
    nodes = {
        "h100-8x": NodePrice(
            "h100-8x",
            "H100 8-GPU NVLink",
            Category.GPU,
            Basis.PER_NODE,
            1,
            D("100000.00"),
            D("4000.00"),
            "H100 80G SXM",
        ),
        "a100-4x": NodePrice(
            "a100-4x",
            "A100 40G 4-GPU",
            Category.GPU,
            Basis.PER_GPU,
            4,
            D("2800.00"),
            D("112.00"),
            "A100 40G",
        ),
        "e5-bm": NodePrice(
            "e5-bm",
            "Bare-metal E5",
            Category.BARE_METAL,
            Basis.PER_NODE,
            1,
            D("3999.00"),
            D("160.00"),
            None,
            cards,
        ),
        "e5-bm-hk": NodePrice(
            "e5-bm-hk",
            "Bare-metal E5 (HK)",
            Category.BARE_METAL,
            Basis.PER_NODE,
            1,
            D("4299.00"),
            D("172.00"),
        ),
    }
    addons = {
        "ckpt": AddonPrice("ckpt", "Checkpoint storage", AddonUnit.TB_MONTH, D("300.00")),
        "egress": AddonPrice("egress", "Egress traffic", AddonUnit.TB, D("450.00")),
        "ip": AddonPrice("ip", "Extra IPv4 address", AddonUnit.IP_MONTH, D("50.00")),
        "ddos5": AddonPrice("ddos5", "DDoS protection 5G", AddonUnit.MONTH, D("0.00"), "free"),
        "ddos20": AddonPrice("ddos20", "DDoS protection 20G", AddonUnit.MONTH, D("2000.00")),
    }
    discounts = (
        DiscountRule("gpu-q", "GPU quarterly", Term.QUARTER, D("0.95"), category=Category.GPU),
        DiscountRule("gpu-y", "GPU annual", Term.YEAR, D("0.80"), category=Category.GPU),
        DiscountRule("h100-y", "H100 annual", Term.YEAR, D("0.85"), gpu_model="H100 80G SXM"),
        DiscountRule(
            "bm-y", "Bare metal annual", Term.YEAR, D("0.90"), category=Category.BARE_METAL
        ),
    )
    promotions = (
        Promotion(
            "hk-bogo",
            "Hong Kong bare metal: buy one get one",
            date(2026, 1, 1),
            date(2026, 6, 30),
            site="HK",
            category=Category.BARE_METAL,
        ),
    )
    free = ("Snapshots", "DDoS protection 5-20G", "Environment set-up", "NCCL tuning sheet")
    book = PriceBook("HK", "CNY", D("0.06"), nodes, addons, discounts, promotions, free)
    problems = validate_book(book)
    if problems:
        raise SystemExit(f"the benchmark's price book is invalid: {problems}")
    return book


def build_request() -> QuoteRequest:
    return QuoteRequest(
        term=Term.QUARTER,
        duration=2,
        on=date(2026, 3, 15),
        nodes=(
            NodeRequest("h100-8x", 2),
            NodeRequest("a100-4x", 3),
            NodeRequest("e5-bm", 3, (("rtx3090", 2),)),
            NodeRequest("e5-bm-hk", 2),
        ),
        addons=(
            AddonRequest("ckpt", D("20")),
            AddonRequest("egress", D("5.5")),
            AddonRequest("ip", D("4")),
            AddonRequest("ddos20", D("1")),
        ),
        custom=(
            CustomRequest("On-site installation", D("1"), D("5000.00"), discountable=True),
            CustomRequest("Dedicated cross-connect", D("2"), D("1200.00")),
        ),
        extra_discount=D("0.03"),
    )


def time_rounds(
    fns: dict[str, Callable[[int], object]], *, n: int, rounds: int
) -> dict[str, list[float]]:
    """Seconds per call of each ``fn(n)``, ``rounds`` times after one warm-up call each.
    The functions take turns round by round, so a busy machine slows them alike and the
    ratio stays meaningful."""
    for fn in fns.values():
        fn(n)
    seconds: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn(n)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quotes", type=int, default=2_000, help="quotes per timed round")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (median taken)")
    args = parser.parse_args()

    book = build_book()
    request = build_request()
    quote = price_quote(book, request)
    priced = [ln for ln in quote.lines if ln.kind != "free"]
    request_lines = len(request.nodes) + len(request.addons) + len(request.custom)
    promo = any(a.kind == "promotion" for ln in quote.lines for a in ln.adjustments)
    if not promo:
        raise SystemExit("the promotion did not apply; the benchmark would not be realistic")

    def engine(n: int) -> None:
        for _ in range(n):
            price_quote(book, request)

    # The floor: per quote, ten Decimal sums of three amounts each (list + two adjustments).
    amounts = [(ln.list_amount, *(a.amount for a in ln.adjustments[:2])) for ln in priced[:10]]
    amounts += [(D("0.00"),)] * (10 - len(amounts))
    zero = D("0.00")

    def floor(n: int) -> None:
        for _ in range(n):
            for values in amounts:
                sum(values, zero)

    timings = time_rounds({"engine": engine, "floor": floor}, n=args.quotes, rounds=args.rounds)
    engine_s, floor_s = timings["engine"], timings["floor"]
    engine_med = statistics.median(engine_s)
    floor_med = statistics.median(floor_s)
    quotes_per_s = args.quotes / engine_med
    floor_quotes_per_s = args.quotes / floor_med
    ratio = engine_med / floor_med

    print(f"python {platform.python_version()} on {platform.machine()}")
    print(
        f"request: {request_lines} lines -> {len(priced)} priced lines "
        f"(+{len(quote.lines) - len(priced)} free-service lines), "
        f"net {quote.currency} {quote.net_total}, gross {quote.gross_total}"
    )
    print(
        f"price_quote: {quotes_per_s:,.0f} quotes/s "
        f"({engine_med / args.quotes * 1e6:.1f} us per quote; median of {args.rounds} "
        f"rounds of {args.quotes}; rounds min {min(engine_s) * 1e3:.1f} ms, "
        f"max {max(engine_s) * 1e3:.1f} ms)"
    )
    print(
        f"floor (ten Decimal sums): {floor_quotes_per_s:,.0f} quotes/s "
        f"({floor_med / args.quotes * 1e6:.2f} us per quote)"
    )
    verdict = "meets" if quotes_per_s >= GOAL_QUOTES_PER_S else "MISSES"
    print(f"engine / floor time: {ratio:.1f}x; {verdict} the goal of {GOAL_QUOTES_PER_S:,}/s")
    print(
        json.dumps(
            {
                "bench": "pricing",
                "quotes_per_s": round(quotes_per_s),
                "floor_quotes_per_s": round(floor_quotes_per_s),
                "ratio": round(ratio, 1),
                "goal_quotes_per_s": GOAL_QUOTES_PER_S,
                "meets_goal": quotes_per_s >= GOAL_QUOTES_PER_S,
                "us_per_quote": round(engine_med / args.quotes * 1e6, 1),
                "request_lines": request_lines,
                "priced_lines": len(priced),
                "quotes_per_round": args.quotes,
                "rounds": args.rounds,
            }
        )
    )


if __name__ == "__main__":
    main()
