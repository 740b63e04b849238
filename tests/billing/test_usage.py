"""Metered usage (egress): imported by CSV or the API, all rows or none, idempotent by
external id, billed monthly in arrears on the next invoice at the egress price."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from billing.invoicing import services as invoicing
from billing.invoicing.usage import UsageImportError, usage_import_csv
from billing.models import AddonPrice, InvoiceLineKind, TaxCategory, UsageRecord
from billing.orders import services as orders
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db


@pytest.fixture
def paid_order(demo):
    order = make_order(demo, term="month", duration=3)
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-1", actor=demo["admin"]
    )
    return order


def day(order, n: int) -> str:
    return (order.quote.start_date + timedelta(days=n)).isoformat()


def test_a_bad_row_stores_nothing_and_says_which_row_and_why(demo, paid_order, tmp_path):
    text = (
        "external_id,order,day,quantity\n"
        f"e-1,{paid_order.number},{day(paid_order, 0)},1.5\n"
        f"e-2,{paid_order.number},{day(paid_order, 1)},lots\n"
        f"e-3,O-XX-0000-000001,{day(paid_order, 1)},1\n"
    )
    with pytest.raises(UsageImportError) as caught:
        usage_import_csv(text=text, source="csv", actor=demo["admin"])
    errors = {(e.row, e.field) for e in caught.value.errors}
    assert errors == {(2, "quantity"), (3, "order")}
    assert "Row 2, quantity" in caught.value.message
    assert UsageRecord.objects.count() == 0
    # The management command says the same and stores nothing.
    path = tmp_path / "u.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError):
        call_command("import_usage", str(path))
    assert UsageRecord.objects.count() == 0


def test_import_is_idempotent_by_external_id(demo, paid_order):
    text = (
        "external_id,order,day,quantity,node\n"
        f"e-1,{paid_order.number},{day(paid_order, 0)},1.5,sz-h100-01\n"
        f"e-2,{paid_order.number},{day(paid_order, 1)},0.25,\n"
    )
    first = usage_import_csv(text=text, source="csv", actor=demo["admin"])
    again = usage_import_csv(text=text, source="csv", actor=demo["admin"])
    assert (first.created, first.unchanged, again.created, again.unchanged) == (2, 0, 0, 2)
    changed = text.replace(",0.25,", ",0.30,")
    with pytest.raises(UsageImportError, match="recorded before with other values"):
        usage_import_csv(text=changed, source="csv", actor=demo["admin"])
    assert UsageRecord.objects.count() == 2


def test_the_api_takes_a_token_or_staff_and_answers_400_on_bad_rows(
    client, demo, paid_order, settings
):
    settings.PORTAL_USAGE_API_TOKEN = "meter-secret"
    url = reverse("usage_api")
    good = {
        "external_id": "a-1",
        "order": paid_order.number,
        "day": day(paid_order, 0),
        "quantity": "2",
    }
    bad = {**good, "external_id": "a-2", "day": "2020-01-01"}
    body = json.dumps({"records": [good, bad]})
    assert client.post(url, body, content_type="application/json").status_code == 401
    response = client.post(
        url, body, content_type="application/json", HTTP_AUTHORIZATION="Bearer wrong"
    )
    assert response.status_code == 401
    auth = {"HTTP_AUTHORIZATION": "Bearer meter-secret"}
    response = client.post(url, body, content_type="application/json", **auth)
    assert response.status_code == 400
    assert response.json()["errors"][0]["row"] == 2
    assert response.json()["errors"][0]["field"] == "day"
    assert UsageRecord.objects.count() == 0
    response = client.post(
        url, json.dumps({"records": [good]}), content_type="application/json", **auth
    )
    assert response.status_code == 201 and response.json() == {"created": 1, "unchanged": 0}
    assert client.post(url, "{", content_type="application/json", **auth).status_code == 400
    # A customer (not staff) is refused even when logged in.
    client.force_login(demo["customer"])
    assert client.post(url, body, content_type="application/json").status_code == 403
    assert UsageRecord.objects.count() == 1


def test_usage_is_billed_in_arrears_on_the_next_invoice_at_the_egress_price(demo, paid_order):
    rows = "".join(
        f"u-{i},{paid_order.number},{day(paid_order, i)},{q}\n"
        for i, q in enumerate(["1.250", "0.750"])
    )
    usage_import_csv(text="external_id,order,day,quantity\n" + rows, source="csv", actor=None)
    periods = invoicing.order_schedule(paid_order)
    second = invoicing.invoice_issue_period(order=paid_order, seq=2, now=periods[1].start)
    line = second.lines.get(kind=InvoiceLineKind.USAGE)
    price = AddonPrice.objects.get(price_book=paid_order.quote.price_book, code="egress").price
    rate = invoicing.tax_rate_for(
        price_book=paid_order.quote.price_book, category=TaxCategory.TELECOM
    )
    # 1.250 + 0.750 = 2 TB × the egress price, taxed as telecom.
    assert line.quantity == Decimal("2.000") and line.unit_price == price
    assert line.net == 2 * price and line.tax_category == TaxCategory.TELECOM
    assert line.vat == (line.net * rate).quantize(Decimal("0.01"))
    assert set(UsageRecord.objects.values_list("invoice", flat=True)) == {second.pk}
    # The third period does not bill them again.
    third = invoicing.invoice_issue_period(order=paid_order, seq=3, now=periods[2].start)
    assert not third.lines.filter(kind=InvoiceLineKind.USAGE).exists()
