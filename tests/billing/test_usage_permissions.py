"""Issue 25, point 2: billable usage is recorded only with ``billing.record_usage`` (the
API's staff sessions and the admin's import alike; the seeded Finance group has it, sales,
managers and operations do not), and a wrong record is voided, with its reason, by a
voiding record that the next invoice reflects."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import translation

from billing.invoicing import services as invoicing
from billing.invoicing.usage import usage_import_csv, usage_record_void
from billing.models import AddonPrice, InvoiceLineKind, UsageRecord
from core.errors import DomainError
from tests.billing.test_usage import HEADER, day

pytestmark = pytest.mark.django_db


def _record(order, n: int, quantity: str) -> str:
    return f"u-{n},{order.number},{day(order, n)},{quantity}\n"


@pytest.mark.parametrize(
    ("username", "allowed"),
    [("sales", False), ("manager", False), ("ops", False), ("finance", True), ("admin", True)],
)
def test_only_the_record_usage_permission_posts_usage(client, demo, paid_order, username, allowed):
    user = get_user_model().objects.get(username=username)
    client.force_login(user)
    body = {"external_id": "s-1", "order": paid_order.number, "day": day(paid_order, 0)}
    response = client.post(
        reverse("usage_api"),
        json.dumps({"records": [{**body, "quantity": "999999"}]}),
        content_type="application/json",
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert response.status_code == (201 if allowed else 403), response.content
    assert UsageRecord.objects.exists() is allowed
    with translation.override("en"):
        page = client.get(reverse("admin:billing_usagerecord_import"))
    assert page.status_code == (200 if allowed else 403)


def test_voiding_an_unbilled_record_cancels_it_on_the_next_invoice(demo, paid_order):
    usage_import_csv(
        text=HEADER + _record(paid_order, 0, "3") + _record(paid_order, 1, "1"),
        source="csv",
        actor=None,
    )
    wrong = UsageRecord.objects.get(external_id="u-0")
    void = usage_record_void(record=wrong, reason="meter counted twice", actor=demo["admin"])
    assert (void.quantity, void.day, void.voids, void.source) == (
        Decimal("-3"),
        wrong.day,
        wrong,
        "void",
    )
    with pytest.raises(DomainError, match="voided already"):
        usage_record_void(record=wrong, reason="again", actor=demo["admin"])
    with pytest.raises(DomainError, match="Say why"):
        usage_record_void(record=UsageRecord.objects.get(external_id="u-1"), reason=" ", actor=None)
    periods = invoicing.order_schedule(paid_order)
    second = invoicing.invoice_issue_period(order=paid_order, seq=2, now=periods[1].start)
    line = second.lines.get(kind=InvoiceLineKind.USAGE)
    assert line.quantity == Decimal("1.000")  # 3 + 1 − 3


def test_voiding_a_billed_record_puts_a_correction_with_its_reason_on_the_next_invoice(
    demo, paid_order
):
    usage_import_csv(text=HEADER + _record(paid_order, 0, "2"), source="csv", actor=None)
    periods = invoicing.order_schedule(paid_order)
    second = invoicing.invoice_issue_period(order=paid_order, seq=2, now=periods[1].start)
    billed = second.lines.get(kind=InvoiceLineKind.USAGE)
    assert billed.quantity == Decimal("2.000")
    usage_record_void(
        record=UsageRecord.objects.get(external_id="u-0"),
        reason="test traffic, not the customer's",
        actor=demo["admin"],
    )
    third = invoicing.invoice_issue_period(order=paid_order, seq=3, now=periods[2].start)
    correction = third.lines.get(kind=InvoiceLineKind.USAGE)
    price = AddonPrice.objects.get(price_book=paid_order.quote.price_book, code="egress").price
    assert correction.quantity == Decimal("-2.000")
    assert correction.net == -2 * price == -billed.net
    assert "test traffic, not the customer's" in correction.description
    assert "voided" in correction.description
    assert UsageRecord.objects.filter(invoice=third).count() == 1


def test_the_admin_voids_selected_records_with_the_reason(client, demo, paid_order):
    usage_import_csv(text=HEADER + _record(paid_order, 0, "5"), source="csv", actor=None)
    record = UsageRecord.objects.get()
    client.force_login(get_user_model().objects.get(username="finance"))
    with translation.override("en"):
        url = reverse("admin:billing_usagerecord_changelist")
    response = client.post(
        url,
        {"action": "void_records", "_selected_action": [record.pk], "reason": "duplicate"},
    )
    assert response.status_code == 302
    void = UsageRecord.objects.get(voids=record)
    assert void.void_reason == "duplicate" and void.recorded_by.username == "finance"
    assert "1 record voided; the next invoice reflects it." in [
        str(m) for m in get_messages(response.wsgi_request)
    ]
    # Operations cannot void.
    client.force_login(get_user_model().objects.get(username="ops"))
    client.post(url, {"action": "void_records", "_selected_action": [void.pk], "reason": "x"})
    assert UsageRecord.objects.count() == 2
