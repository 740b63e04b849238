"""SLA credits reach the customer without a claim: on the next invoice, or as a credit
note after the last period; computed once per node and period."""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest

from billing.credits.sla import sla_credits_record
from billing.invoicing import services as invoicing
from billing.models import InvoiceLineKind, SlaCredit
from billing.orders import services as orders
from billing.pricing.sla import NodeFacts, Outage
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db


def test_a_credit_goes_on_the_next_invoice_once_and_the_last_one_on_a_credit_note(demo):
    order = make_order(demo, term="month", duration=2)
    first = order.invoices.get()
    orders.invoice_mark_paid_by_transfer(invoice=first, reference="T-1", actor=demo["admin"])
    p1, p2 = invoicing.order_schedule(order)
    code = demo["h100"].code
    facts = [
        (
            code,
            NodeFacts(
                "sz-h100-01",
                outages=(
                    Outage(
                        "faulty",
                        p1.start + timedelta(days=3),
                        p1.start + timedelta(days=3, hours=10),
                        "event 1",
                    ),
                    Outage(
                        "faulty",
                        p2.start + timedelta(days=1),
                        p2.start + timedelta(days=2),
                        "event 2",
                    ),
                ),
            ),
        ),
        (code, NodeFacts("sz-h100-02")),  # no outage: no credit
    ]
    # Nothing before the period ends.
    assert sla_credits_record(order=order, facts=facts, now=p1.end - timedelta(hours=1)) == []
    created = sla_credits_record(order=order, facts=facts, now=p1.end + timedelta(hours=1))
    assert len(created) == 1
    credit = created[0]
    hours = Decimal((p1.end - p1.start).total_seconds()) / 3600  # 720 or 744
    availability = (100 * (1 - 10 / hours)).quantize(Decimal("0.001"), ROUND_HALF_UP)
    assert credit.availability == availability and Decimal("95") <= availability < 99
    # Two nodes share the period's node line: one node's charge is half of it.
    node_net = sum(line.net for line in first.lines.all() if line.code == code) / 2
    assert credit.node_charge == node_net.quantize(Decimal("0.01"))
    assert credit.credit_percent == 25
    assert credit.amount == (credit.node_charge * Decimal("0.25")).quantize(Decimal("0.01"))
    # Run again: computed once.
    assert sla_credits_record(order=order, facts=facts, now=p1.end + timedelta(hours=2)) == []
    # The next invoice carries it as a negative line with explanation and evidence.
    second = invoicing.invoice_issue_period(order=order, seq=2, now=p2.start - timedelta(days=1))
    line = second.lines.get(kind=InvoiceLineKind.CREDIT)
    assert line.net == -credit.amount and line.vat < 0
    assert "sz-h100-01" in line.description and "availability" in line.description
    assert "可用率" in line.description_zh and "event 1" in line.detail["evidence_en"]
    charges = sum(li.net for li in second.lines.exclude(kind=InvoiceLineKind.CREDIT))
    assert second.net_total == charges - credit.amount
    credit.refresh_from_db()
    assert credit.invoice_line == line
    # The last period's credit: no invoice follows, so a credit note corrects period 2.
    last = sla_credits_record(order=order, facts=facts, now=p2.end + timedelta(hours=1))
    assert len(last) == 1
    last[0].refresh_from_db()
    note = last[0].credit_note
    assert note is not None and note.invoice == second and note.net_total == -last[0].amount
    # 24 h of the period: below 95 %? 24/720 = 3.33 % down → 96.667 %: the 25 % tier.
    assert last[0].credit_percent == 25
    assert SlaCredit.objects.filter(order=order).count() == 2
