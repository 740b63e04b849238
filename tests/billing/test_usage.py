"""Metered usage (egress): imported by CSV or the API, all rows or none, idempotent by
external id, billed monthly in arrears on the next invoice at the egress price."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import IntegrityError
from django.urls import reverse
from django.utils import translation
from import_export.results import Error, Result

from billing.invoicing import services as invoicing
from billing.invoicing.resources import import_errors
from billing.invoicing.usage import UsageImportError, usage_import_csv
from billing.models import AddonPrice, InvoiceLineKind, TaxCategory, UsageRecord

pytestmark = pytest.mark.django_db


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


HEADER = "external_id,order,day,quantity\n"


def test_a_formula_looking_cell_is_unescaped_then_checked(demo, paid_order):
    # An exported file escapes a cell that a spreadsheet would run (' in front); the
    # import takes the ' off: an id that starts with "-" is stored as it was, and a
    # quantity that is a formula is refused as what it is, not as the text "'=1+2".
    text = (
        HEADER
        + f"'-e1,{paid_order.number},{day(paid_order, 0)},1\n"
        + f"e-2,{paid_order.number},{day(paid_order, 1)},'=1+2\n"
    )
    with pytest.raises(UsageImportError) as caught:
        usage_import_csv(text=text, source="csv", actor=None)
    assert [(e.row, e.field) for e in caught.value.errors] == [(2, "quantity")]
    assert UsageRecord.objects.count() == 0
    usage_import_csv(text=text.replace("'=1+2", "2"), source="csv", actor=None)
    assert set(UsageRecord.objects.values_list("external_id", flat=True)) == {"-e1", "e-2"}


def test_the_same_external_id_twice_in_one_file_stores_nothing(demo, paid_order):
    text = (
        HEADER
        + f"e-1,{paid_order.number},{day(paid_order, 0)},1\n"
        + f"e-1,{paid_order.number},{day(paid_order, 1)},2\n"
    )
    with pytest.raises(UsageImportError) as caught:
        usage_import_csv(text=text, source="csv", actor=None)
    assert [e.as_dict() for e in caught.value.errors] == [
        {"row": 2, "field": "external_id", "message": "The same id appears twice in this file."}
    ]
    assert UsageRecord.objects.count() == 0


def test_a_resend_with_another_node_is_unchanged_and_columns_come_in_any_order(demo, paid_order):
    text = (
        "quantity;node;day;order;external_id;metric\n"
        f"1.5;sz-h100-01;{day(paid_order, 0)};{paid_order.number};e-1;\n"
    )
    assert usage_import_csv(text=text, source="csv", actor=demo["admin"]).created == 1
    again = usage_import_csv(
        text=text.replace("sz-h100-01", "sz-h100-02"), source="csv", actor=None
    )
    assert (again.created, again.unchanged) == (0, 1)
    record = UsageRecord.objects.get()
    assert (record.node_hostname, record.metric, record.recorded_by) == (
        "sz-h100-01",
        "egress_tb",
        demo["admin"],
    )
    with pytest.raises(UsageImportError, match="Unknown metric"):
        usage_import_csv(text=text.replace(";e-1;", ";e-2;cpu_h"), source="csv", actor=None)


def test_the_api_reports_every_bad_record_including_ones_that_are_not_objects(
    client, demo, paid_order, settings
):
    settings.PORTAL_USAGE_API_TOKEN = "meter-secret"
    good = {"external_id": "a-1", "order": paid_order.number, "day": day(paid_order, 0)}
    records = [
        {**good, "quantity": 2.5, "extra": "ignored"},
        "oops",
        {**good, "external_id": "a-3", "quantity": -1},
    ]
    response = client.post(
        reverse("usage_api"),
        json.dumps({"records": records}),
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer meter-secret",
    )
    assert response.status_code == 400
    assert [(e["row"], e["field"]) for e in response.json()["errors"]] == [
        (2, "row"),
        (3, "quantity"),
    ]
    response = client.post(
        reverse("usage_api"),
        json.dumps({"records": records[:1]}),
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer meter-secret",
    )
    assert response.json() == {"created": 1, "unchanged": 0}
    assert UsageRecord.objects.get().quantity == Decimal("2.5")
    assert UsageRecord.objects.get().source == "api"


def test_a_unique_key_clash_while_storing_is_one_file_wide_error():
    result = Result()
    result.append_base_error(Error(IntegrityError("usage_unique_external")))
    assert [e.as_dict() for e in import_errors(result)] == [
        {
            "row": 0,
            "field": "file",
            "message": "These records were being stored at the same time; send again.",
        }
    ]


def _upload(client, text):
    data = text.encode() if isinstance(text, str) else text
    return client.post(
        admin_url("admin:billing_usagerecord_import"),
        {
            "format": "0",
            "import_file": SimpleUploadedFile("usage.csv", data, content_type="text/csv"),
        },
    )


def admin_url(name):
    with translation.override("en"):
        return reverse(name)


def test_the_admin_previews_then_imports_and_lists_bad_rows(client, demo, paid_order):
    client.force_login(demo["admin"])
    bad = HEADER + f"e-1,{paid_order.number},{day(paid_order, 0)},lots\n"
    preview = _upload(client, bad)
    assert preview.status_code == 200 and "confirm_form" not in preview.context
    listed = [str(m) for m in get_messages(preview.wsgi_request)]
    assert "Row 1, quantity: Give a number of TB from 0 to 1,000,000 with at most 3 decimals." in (
        listed
    )
    not_utf8 = _upload(client, "external_id,order,day,quantity\nü,1,2,3\n".encode("latin-1"))
    assert "not UTF-8 text" in str(not_utf8.context["form"].errors["import_file"])
    no_order = _upload(client, "external_id,day,quantity\ne-1,2026-01-01,1\n")
    assert "lacks the column order" in str(no_order.context["form"].errors["import_file"])
    good = HEADER + f"e-1,{paid_order.number},{day(paid_order, 0)},1.5\n"
    preview = _upload(client, good)
    assert UsageRecord.objects.count() == 0  # the preview is a dry run
    done = client.post(
        admin_url("admin:billing_usagerecord_process_import"),
        preview.context["confirm_form"].initial,
    )
    assert done.status_code == 302
    assert done["Location"] == admin_url("admin:billing_usagerecord_changelist")
    record = UsageRecord.objects.get()
    assert (record.source, record.recorded_by, record.quantity) == (
        "csv",
        demo["admin"],
        Decimal("1.5"),
    )
    assert "Usage imported: 1 new record, 0 already recorded." in [
        str(m) for m in get_messages(done.wsgi_request)
    ]
    changelist = client.get(admin_url("admin:billing_usagerecord_changelist"))
    assert changelist.content.decode().count(admin_url("admin:billing_usagerecord_import")) == 1


def test_the_admin_import_needs_the_record_usage_permission(client, demo):
    """Issue 25, point 2: one permission (``billing.record_usage``) for the admin's import
    and the API; seeing the records is not enough."""
    staff = get_user_model().objects.create_user(
        username="no-usage", password="x-unused-1", is_staff=True
    )
    staff.user_permissions.add(Permission.objects.get(codename="view_usagerecord"))
    client.force_login(staff)
    assert client.get(admin_url("admin:billing_usagerecord_import")).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="record_usage"))
    staff = get_user_model().objects.get(pk=staff.pk)
    client.force_login(staff)
    assert client.get(admin_url("admin:billing_usagerecord_import")).status_code == 200
