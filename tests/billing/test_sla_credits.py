"""SLA credits reach the customer without a claim, measured as the contract says (§7
"Monthly availability"): per node per calendar month in the site's zone (Shenzhen, UTC+8,
no summer time), exact fractions, the credit a share of that month's charge; on the next
invoice, or as a credit note once no invoice follows. Hand-computed cases for monthly,
quarterly and annual billing.

The demo's Shenzhen H100 lists at ¥100,000 per node-month; quarterly is 95 % of list, the
H100 annual rate 85 %; two nodes per order.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from decimal import Decimal

import pytest

from billing.credits.sla import sla_credits_record
from billing.invoicing import ledger
from billing.invoicing import services as invoicing
from billing.models import CreditNote, InvoiceLineKind, SlaCredit
from billing.orders import services as orders
from billing.pricing.sla import NodeFacts, Outage
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db
D = Decimal


def paid(demo, *, term, duration, start):
    order = make_order(demo, term=term, duration=duration, start=start)
    first = order.invoices.get()
    orders.invoice_mark_paid_by_transfer(invoice=first, reference="T-1", actor=demo["admin"])
    order.refresh_from_db()
    return order, first


def local(order, day: date, hour: float = 0) -> datetime:
    return datetime.combine(day, time.min, tzinfo=order.site.tzinfo) + timedelta(hours=hour)


def test_monthly_billing_credits_each_calendar_month_once_on_the_next_invoice(demo):
    order, first = paid(demo, term="month", duration=2, start=date(2027, 1, 1))
    code = demo["h100"].code
    # One node-month: 100,000.00 net (a period is the calendar month).
    assert sum(li.net for li in first.lines.all() if li.code == code) == D("200000.00")
    facts = [
        (
            code,
            # January has 744 h. 9 h faulty: 100 × (1 − 9/744) = 98.790…% < 99 → 25 %.
            NodeFacts(
                "sz-h100-01",
                outages=(
                    Outage(
                        "faulty",
                        local(order, date(2027, 1, 10), 8),
                        local(order, date(2027, 1, 10), 17),
                        "event 1",
                    ),
                ),
            ),
        ),
        (
            code,
            # 2,691.792 s down in 744 h: exactly 99.8995 % — below 99.9 → 10 % (rounded
            # to three places first, it was 99.900 % and earned nothing).
            NodeFacts(
                "sz-h100-02",
                outages=(
                    Outage(
                        "faulty",
                        local(order, date(2027, 1, 20)),
                        local(order, date(2027, 1, 20))
                        + timedelta(seconds=2691, microseconds=792000),
                        "event 2",
                    ),
                ),
            ),
        ),
    ]
    feb = local(order, date(2027, 2, 1))
    assert sla_credits_record(order=order, facts=facts, now=feb - timedelta(minutes=1)) == []
    created = sla_credits_record(order=order, facts=facts, now=feb + timedelta(hours=1))
    by_node = {c.node_ref: c for c in created}
    one, two = by_node["sz-h100-01"], by_node["sz-h100-02"]
    assert (one.month, one.availability, one.credit_percent) == (date(2027, 1, 1), D("98.790"), 25)
    assert one.node_charge == D("100000.00") and one.amount == D("25000.00")
    assert (two.availability, two.credit_percent, two.amount) == (D("99.899"), 10, D("10000.00"))
    assert sla_credits_record(order=order, facts=facts, now=feb + timedelta(hours=2)) == []
    # Period 2's invoice carries both as negative lines: 35,000.00 net, 2,100.00 VAT.
    second = invoicing.invoice_issue_period(order=order, seq=2, now=feb - timedelta(days=14))
    assert second is not None
    credit_lines = second.lines.filter(kind=InvoiceLineKind.CREDIT)
    assert sum(li.net for li in credit_lines) == D("-35000.00")
    assert sum(li.vat for li in credit_lines) == D("-2100.00")
    assert second.net_total == D("165000.00")  # 200,000 − 35,000
    assert "2027-01" in credit_lines[0].description and "可用率" in credit_lines[0].description_zh


def test_quarterly_billing_credits_a_month_its_share_of_the_quarter(demo):
    order, first = paid(demo, term="quarter", duration=1, start=date(2027, 1, 1))
    code = demo["h100"].code
    # One node-quarter: 3 × 100,000 × 95 % = 285,000.00; the quarter has 31+28+31 = 90 days.
    assert sum(li.net for li in first.lines.all() if li.code == code) == D("570000.00")
    facts = [
        (
            code,
            # February: 672 h; 9 h down → 100 × (1 − 9/672) = 98.660…% → 25 %.
            NodeFacts(
                "sz-h100-01",
                outages=(
                    Outage(
                        "faulty",
                        local(order, date(2027, 2, 3)),
                        local(order, date(2027, 2, 3), 9),
                        "e",
                    ),
                ),
            ),
        ),
        (code, NodeFacts("sz-h100-02")),
    ]
    created = sla_credits_record(order=order, facts=facts, now=local(order, date(2027, 3, 1), 1))
    assert len(created) == 1
    credit = created[0]
    # February's charge: 285,000 × 28/90 = 88,666.666…; 25 % = 22,166.666… → 22,166.67.
    assert credit.month == date(2027, 2, 1)
    assert credit.node_charge == D("88666.67") and credit.amount == D("22166.67")
    # A quarter billed once: no invoice follows, so a credit note (红字) at once; the
    # invoice is paid, so it is the customer's credit balance: 22,166.67 × 1.06 =
    # 23,496.67 (VAT 1,330.00).
    credit.refresh_from_db()
    assert credit.credit_note is not None
    assert credit.credit_note.gross_total == D("-23496.67")
    assert ledger.credit_balance(organisation=order.organisation, currency="CNY") == D("23496.67")


def test_annual_billing_measures_the_first_partial_month_not_the_year(demo):
    # The issue's case: late delivery on an annual order. Start 2027-01-15; the annual
    # period 2027-01-15 → 2028-01-15 has 365 days.
    order, first = paid(demo, term="year", duration=1, start=date(2027, 1, 15))
    code = demo["h100"].code
    # One node-year: 12 × 100,000 × 85 % = 1,020,000.00.
    assert sum(li.net for li in first.lines.all() if li.code == code) == D("2040000.00")
    start = order.start_at
    late = Outage("late_delivery", start, start + timedelta(hours=13), "run 1 delivered 13:00")
    facts = [(code, NodeFacts(f"sz-h100-0{i}", outages=(late,))) for i in (1, 2)]
    created = sla_credits_record(order=order, facts=facts, now=local(order, date(2027, 2, 1), 1))
    assert len(created) == 2
    for credit in created:
        # January, clipped to the term: 01-15 → 02-01 = 17 days = 408 h.
        # 100 × (1 − 13/408) = 96.813…% → 25 %.
        assert (credit.period_start, credit.period_end) == (start, local(order, date(2027, 2, 1)))
        assert (credit.availability, credit.credit_percent) == (D("96.813"), 25)
        # The month's charge: 1,020,000 × 17/365 = 47,506.849…; 25 % = 11,876.712… → 11,876.71
        # (per billing period it was 10 % of 1,020,000 = 102,000.00 per node).
        assert credit.node_charge == D("47506.85") and credit.amount == D("11876.71")
    # Both nodes on one credit note, VAT per line: 11,876.71 × 6 % = 712.6026 → 712.60;
    # 2 × (11,876.71 + 712.60) = 25,178.62.
    notes = CreditNote.objects.filter(order=order)
    assert [n.gross_total for n in notes] == [D("-25178.62")]
    # February had no outage: nothing; a 45-minute outage in a whole month still counts
    # (annual measurement paid nothing for 0.75–8.76 h a year):
    # 100 × (1 − 0.75/672) = 99.888…% → 10 % of 1,020,000 × 28/365 = 78,246.575… → 7,824.66.
    short = Outage(
        "faulty", local(order, date(2027, 2, 10)), local(order, date(2027, 2, 10), 0.75), "e"
    )
    facts = [
        (code, NodeFacts("sz-h100-01", outages=(late, short))),
        (code, NodeFacts("sz-h100-02", outages=(late,))),
    ]
    created = sla_credits_record(order=order, facts=facts, now=local(order, date(2027, 3, 1), 1))
    assert [(c.node_ref, c.month, c.amount) for c in created] == [
        ("sz-h100-01", date(2027, 2, 1), D("7824.66"))
    ]
    assert SlaCredit.objects.filter(order=order).count() == 3
