"""Invoices over the term: one document per billing period, issued ahead by a beat job."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import translation

from billing.invoicing import services as invoicing
from billing.models import Invoice, InvoiceLineKind, InvoiceStatus, OrderStatus
from billing.orders import services as orders
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db


def pay_first(demo, order):
    invoice = order.invoices.get(period_seq=1)
    orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-1", actor=demo["admin"])
    order.refresh_from_db()
    return invoice


def assert_gapless(numbers) -> None:
    """Per kind, site and year the numbers run 1, 2, 3 … without a gap."""
    by_prefix: dict[str, list[int]] = {}
    for number in numbers:
        prefix, n = number.rsplit("-", 1)
        by_prefix.setdefault(prefix, []).append(int(n))
    assert by_prefix
    for taken in by_prefix.values():
        assert sorted(taken) == list(range(1, len(taken) + 1))


@pytest.mark.parametrize(
    "term,duration,periods", [("day", 10, 1), ("month", 3, 3), ("quarter", 2, 2), ("year", 2, 2)]
)
def test_the_issued_documents_sum_to_the_accepted_quote_for_every_term(
    demo, term, duration, periods
):
    order = make_order(demo, term=term, duration=duration)
    quote = order.quote
    first = order.invoices.get()
    # Only the first period is issued at acceptance, due at the payment deadline.
    assert first.period_seq == 1 and first.due_at == order.payment_due_at
    if periods > 1:
        assert first.gross_total < quote.gross_total
    pay_first(demo, order)
    assert order.status == OrderStatus.PAID
    far = order.end_at + timedelta(days=1)
    assert invoicing.invoices_issue_due(now=far) == periods - 1
    issued = list(Invoice.objects.filter(order=order).order_by("period_seq"))
    assert [i.period_seq for i in issued] == list(range(1, periods + 1))
    assert sum(i.gross_total for i in issued) == quote.gross_total
    assert sum(i.net_total for i in issued) == quote.net_total
    assert sum(i.vat_total for i in issued) == quote.vat_total
    for invoice in issued:
        lines = list(invoice.lines.all())
        assert lines and all(line.kind == InvoiceLineKind.CHARGE for line in lines)
        assert all(line.tax_category and line.vat_rate > 0 for line in lines)
        assert sum(line.net for line in lines) == invoice.net_total
        assert invoice.fapiao["title"] == demo["org"].fapiao_buyer
    # Later periods are due when their period starts; numbers follow without a gap.
    for invoice in issued[1:]:
        assert invoice.due_at >= invoice.period_start
    assert_gapless(Invoice.objects.values_list("number", flat=True))


def test_the_beat_job_issues_each_period_once_and_only_when_due(demo, settings):
    settings.PORTAL_INVOICE_ISSUE_DAYS = 14
    order = make_order(demo, term="month", duration=3)
    periods = invoicing.order_schedule(order)
    # Unpaid: nothing more is issued.
    assert invoicing.invoices_issue_due(now=periods[1].start) == 0
    pay_first(demo, order)
    # 15 days before period 2: not yet; 14 days before: issued, once.
    assert invoicing.invoices_issue_due(now=periods[1].start - timedelta(days=15)) == 0
    at = periods[1].start - timedelta(days=14)
    assert invoicing.invoices_issue_due(now=at) == 1
    assert invoicing.invoices_issue_due(now=at) == 0
    assert invoicing.invoice_issue_period(order=order, seq=2, now=at) is None
    second = order.invoices.get(period_seq=2)
    assert second.status == InvoiceStatus.ISSUED and second.due_at == periods[1].start
    assert order.invoices.count() == 2
    # Run twice at the end of the term: the third period appears once.
    end = order.end_at
    assert invoicing.invoices_issue_due(now=end) == 1
    assert invoicing.invoices_issue_due(now=end) == 0
    assert order.invoices.count() == 3


def test_the_document_keeps_the_fapiao_request_it_was_issued_with(demo):
    org = demo["org"]
    org.fapiao_title = "珠江人工智能实验室有限公司"
    org.save()
    order = make_order(demo, term="month", duration=2)
    invoice = order.invoices.get()
    org.fapiao_title = "Another title"
    org.save()
    invoice.refresh_from_db()
    assert invoice.fapiao["title"] == "珠江人工智能实验室有限公司"
    assert invoice.fapiao["type"] == org.fapiao_type
    assert Decimal(invoice.gross_total) > 0


def test_staff_export_the_fapiao_requests_as_csv_for_the_tax_software(client, demo):
    import csv
    import io

    from billing.invoicing.exports import COLUMNS

    org = demo["org"]
    org.fapiao_title = "=HYPERLINK(1)"  # a formula must arrive as text
    org.save()
    order = make_order(demo, term="month", duration=2)
    invoice = order.invoices.get()
    with translation.override("en"):
        url = reverse("admin:billing_invoice_changelist")
    client.force_login(demo["admin"])
    action = {"action": "export_fapiao_csv", "_selected_action": [invoice.pk]}
    unpaid = client.post(url, action).content.decode("utf-8-sig")
    assert invoice.number not in unpaid  # only paid documents get a fapiao
    orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-1", actor=demo["admin"])
    client.logout()
    action = {"action": "export_fapiao_csv", "_selected_action": [invoice.pk]}
    client.force_login(demo["customer"])
    assert client.post(url, action).status_code == 302  # to the admin login, no file
    client.force_login(demo["admin"])
    response = client.post(url, action)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert tuple(rows[0].keys()) == COLUMNS
    assert {r["document_number"] for r in rows} == {invoice.number}
    assert rows[0]["buyer_title"] == "'=HYPERLINK(1)"
    assert rows[0]["buyer_tax_id"] == org.tax_id
    assert rows[0]["fapiao_type"] == org.fapiao_type
    # One row per line (and per discount); together they are the document's totals.
    assert sum(Decimal(r["amount"]) for r in rows) == invoice.net_total
    assert sum(Decimal(r["tax"]) for r in rows) == invoice.vat_total
    assert {r["tax_category"] for r in rows} == {li.tax_category for li in invoice.lines.all()}
    # The node line: 2 nodes × 1 month × 100,000.00 = 200,000.00 (数量 × 单价 = 金额),
    # 6 %, the IT-service code, named as the tax system wants it.
    node = next(r for r in rows if r["specification"] == demo["h100"].code)
    assert (node["quantity"], node["unit_price"], node["amount"]) == ("2", "100000.00", "200000.00")
    assert node["unit"] == "台·月" and node["item_name"].startswith("*信息技术服务*")
    assert node["tax_code"] == "3040205000000000000" and Decimal(node["tax_rate"]) == Decimal(
        "0.06"
    )
    for row in rows:
        if row["line_kind"] == "item":
            assert Decimal(row["quantity"]) * Decimal(row["unit_price"]) == Decimal(row["amount"])


def test_an_order_billed_whole_before_the_schedule_gets_no_period_invoices(demo):
    order = make_order(demo, term="month", duration=3)
    invoice = order.invoices.get()
    # As issued before invoices had periods: one invoice for the whole term, no lines.
    invoice.lines.all().delete()
    Invoice.objects.filter(pk=invoice.pk).update(period_seq=None)
    orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-1", actor=demo["admin"])
    assert invoicing.invoices_issue_due(now=order.end_at) == 0
    assert order.invoices.count() == 1


def test_invoice_lines_show_list_discount_and_net_and_the_fapiao_a_discount_line(demo):
    from billing.credits import services as credits
    from billing.invoicing.exports import fapiao_rows
    from billing.models import TaxCategory

    order = make_order(demo, term="year", duration=1)
    invoice = order.invoices.get()
    node = invoice.lines.get(code=demo["h100"].code)
    # 2 nodes × 12 months × 100,000.00 = 2,400,000.00 list; H100 annual 85 %: discount
    # 360,000.00; net 2,040,000.00; VAT 6 % = 122,400.00.
    assert (node.quantity, node.periods, node.unit_price) == (2, 12, Decimal("100000.00"))
    assert (node.list_amount, node.discount, node.net) == (
        Decimal("2400000.00"),
        Decimal("360000.00"),
        Decimal("2040000.00"),
    )
    orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-1", actor=demo["admin"])
    note = credits.credit_note_issue(
        invoice=invoice,
        lines=[
            credits.CreditLine(
                description="SLA credit",
                description_zh="SLA 服务抵扣",
                net=Decimal("1000"),
                vat_rate=Decimal("0.06"),
                tax_category=TaxCategory.IT_SERVICE,
            )
        ],
        reason="test",
        actor=demo["admin"],
    )
    invoice.refresh_from_db()
    rows = fapiao_rows(invoices=[invoice], credit_notes=[note])
    item, discount = [r for r in rows if r["specification"] == demo["h100"].code]
    assert (item["line_kind"], item["quantity"], item["unit_price"], item["amount"]) == (
        "item",
        "24",
        "100000.00",
        "2400000.00",
    )
    # The discount's own line; the two taxes add up to the line's: 144,000 − 21,600.
    assert (discount["line_kind"], discount["amount"]) == ("discount", "-360000.00")
    assert Decimal(item["tax"]) + Decimal(discount["tax"]) == node.vat == Decimal("122400.00")
    credit = rows[-1]
    assert (credit["document_kind"], credit["corrects_number"]) == ("credit_note", invoice.number)
    assert (credit["line_kind"], credit["amount"], credit["tax"]) == (
        "credit",
        "-1000.00",
        "-60.00",
    )
