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
    periods = invoice_schedule(
        term=term, duration=duration, start_date=start, tz=TZ, lines=lines, issue_days=14
    )
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


def _dates(periods):
    return [(p.start.date(), p.issue_on, p.due_on) for p in periods]


def test_the_dates_of_the_schedule_by_hand():
    """Three months from 31 Jan 2027, accepted 10 Jan with a payment deadline of 12 Jan.
    Period 1 is issued on acceptance and due at the deadline; 31 Jan + 1 month is 28 Feb,
    + 2 months 31 Mar; with 14 issue days period 2 is issued 14 Feb (28 − 14) and due
    28 Feb, period 3 issued 17 Mar (31 − 14) and due 31 Mar. With 2 issue days period 2
    is issued 26 Feb, less than 3 days before its start: due 3 days after, 1 Mar."""
    line = [ChargeLine("1", "x", Decimal("300.00"), Decimal("18.00"), Decimal("0.06"), "month")]
    common = {
        "term": "month",
        "duration": 3,
        "start_date": date(2027, 1, 31),
        "tz": TZ,
        "lines": line,
        "first_issued_on": date(2027, 1, 10),
        "first_due_on": date(2027, 1, 12),
    }
    assert _dates(invoice_schedule(issue_days=14, **common)) == [
        (date(2027, 1, 31), date(2027, 1, 10), date(2027, 1, 12)),
        (date(2027, 2, 28), date(2027, 2, 14), date(2027, 2, 28)),
        (date(2027, 3, 31), date(2027, 3, 17), date(2027, 3, 31)),
    ]
    assert _dates(invoice_schedule(issue_days=2, **common))[1] == (
        date(2027, 2, 28),
        date(2027, 2, 26),
        date(2027, 3, 1),
    )


@pytest.mark.django_db
def test_contract_invoices_and_order_page_state_the_same_dates(demo, settings, client):
    """One setting, one schedule: the contract's table and §4.2, the order page and the
    beat job that issues period 2 all give the dates the schedule computes."""
    from datetime import datetime, time, timedelta

    from django.template.loader import render_to_string
    from django.urls import reverse

    from billing.invoicing import services as invoicing
    from billing.orders import services as orders
    from tests.billing.test_contracts import make_order

    settings.PORTAL_INVOICE_ISSUE_DAYS = 10
    order = make_order(demo, term="month", duration=3)
    tz = order.site.tzinfo
    contract = Contract.objects.get(order=order)
    periods = contract_documents.contract_schedule(contract)
    assert _dates(periods) == _dates(invoicing.order_schedule(order))
    # By hand: period 1 issued today (acceptance), due at the payment deadline; period 2
    # issued 10 days before it starts, due on its first day.
    accepted = order.created_at.astimezone(tz).date()
    assert (periods[0].issue_on, periods[0].due_on) == (
        accepted,
        order.payment_due_at.astimezone(tz).date(),
    )
    second_start = periods[1].start.astimezone(tz).date()
    assert periods[1].issue_on == second_start - timedelta(days=10)
    assert periods[1].due_on == second_start
    context = contract_documents.contract_context(contract, language="en")
    html = render_to_string("pdf/contract.html", context)
    for p in periods:
        assert f"<td>{p.issue_on:%Y-%m-%d}</td><td>{p.due_on:%Y-%m-%d}</td>" in html
    assert "issued 10 days before its period begins" in html
    assert "于该期开始前 10 日开具" in html  # the Chinese text states the same rule
    # §10 states the reminders and the grace period of the dunning policy in force
    # (seeded: -7, -3, 0 and +3 days, suspension from 10 days after the due date).
    assert "relative to the due date (negative: before it): -7, -3, 0, +3." in html
    assert "No earlier than 10 days after the due date" in html
    assert "-7、-3、0、+3" in html and "到期日后满 10 日" in html

    # The beat job issues period 2 on that day (site time), not the day before, due then.
    invoice = order.invoices.get(period_seq=1)
    orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-1", actor=demo["admin"])
    issue_day = datetime.combine(periods[1].issue_on, time(0, 30), tzinfo=tz)
    assert invoicing.invoices_issue_due(now=issue_day - timedelta(days=1)) == 0
    assert invoicing.invoices_issue_due(now=issue_day) == 1
    second = order.invoices.get(period_seq=2)
    assert second.issued_at.astimezone(tz).date() == periods[1].issue_on
    assert second.due_at.astimezone(tz).date() == periods[1].due_on

    # The order page's planned period 3 says the same.
    client.force_login(demo["customer"])
    page = client.get(reverse("dashboard_order", args=[order.number])).content.decode()
    p3 = periods[2]
    assert f"(issued {p3.issue_on:%Y-%m-%d}, due {p3.due_on:%Y-%m-%d})" in page
