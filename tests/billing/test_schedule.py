"""The invoice schedule over the term adds up to the quote to the cent, for every term."""

from __future__ import annotations

import itertools
from datetime import date
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billing.contracts import documents as contract_documents
from billing.models import Contract
from billing.pricing.schedule import ChargeLine, invoice_schedule, split_cents

TZ = ZoneInfo("Asia/Shanghai")
DURATIONS = {"day": (1, 89), "month": (1, 36), "quarter": (1, 12), "year": (1, 5)}
cents = st.decimals(min_value=0, max_value=10_000_000, places=2, allow_nan=False)


@st.composite
def terms(draw):
    term = draw(st.sampled_from(sorted(DURATIONS)))
    low, high = DURATIONS[term]
    return term, draw(st.integers(min_value=low, max_value=high))


@given(
    terms(),
    st.lists(
        st.tuples(cents, cents, st.sampled_from(["month", "day", "once"])), min_size=1, max_size=6
    ),
    st.dates(min_value=date(2026, 1, 1), max_value=date(2030, 12, 31)),
)
@settings(max_examples=300, deadline=None)
def test_the_schedule_sums_to_the_lines_to_the_cent(term_duration, raw, start):
    term, duration = term_duration
    lines = [
        ChargeLine(f"l{i}", "x", net, vat, Decimal("0.06"), unit)
        for i, (net, vat, unit) in enumerate(raw)
    ]
    periods = invoice_schedule(term=term, duration=duration, start_date=start, tz=TZ, lines=lines)
    assert len(periods) == (1 if term == "day" else duration)
    assert sum(p.net for p in periods) == sum(line.net for line in lines)
    assert sum(p.vat for p in periods) == sum(line.vat for line in lines)
    for p in periods:
        assert all(pl.net >= 0 and pl.vat >= 0 for pl in p.lines)
        assert p.net == p.net.quantize(Decimal("0.01"))
    for before, after in itertools.pairwise(periods):
        assert before.end == after.start  # contiguous, no gap, no overlap


@given(cents, st.integers(min_value=1, max_value=60))
def test_split_cents_is_exact(amount, parts):
    pieces = split_cents(amount, parts)
    assert sum(pieces) == amount and len(pieces) == parts


@pytest.mark.django_db
@pytest.mark.parametrize("term,duration", [("day", 10), ("month", 5), ("quarter", 3), ("year", 2)])
def test_a_contracts_schedule_sums_to_its_accepted_quote(demo, term, duration):
    from tests.billing.test_contracts import make_order

    order = make_order(demo, term=term, duration=duration)
    contract = Contract.objects.get(order=order)
    periods = contract_documents.contract_schedule(contract)
    assert sum(p.gross for p in periods) == contract.quote.gross_total
    assert sum(p.net for p in periods) == contract.quote.net_total
    expected = {"day": 1, "month": duration, "quarter": duration, "year": duration}[term]
    assert len(periods) == expected
