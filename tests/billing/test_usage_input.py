"""Issue 25, point 4: bad input to the usage API and the admin upload. Every record is
validated, each problem comes back with its row and column in the client's language
(Accept-Language), dates are strict ISO, control characters are refused, deep or huge
JSON is a clean 400, and the admin upload has a size cap. Nothing is stored on error."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation

from billing.invoicing.resources import MAX_UPLOAD_BYTES
from billing.invoicing.usage import UsageImportError, usage_import_csv
from billing.models import UsageRecord
from tests.billing.test_usage import day

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}


@pytest.fixture
def post(client, settings):
    settings.PORTAL_USAGE_API_TOKEN = "meter-secret"

    def send(body, *, content_type="application/json", **headers):
        data = body if isinstance(body, str | bytes) else json.dumps({"records": body})
        return client.post(
            reverse("usage_api"),
            data,
            content_type=content_type,
            HTTP_AUTHORIZATION="Bearer meter-secret",
            **headers,
        )

    return send


def _good(order, n=0, **kw):
    return {
        "external_id": f"g-{n}",
        "order": order.number,
        "day": day(order, n),
        "quantity": 1,
        **kw,
    }


def test_records_of_any_shape_get_a_per_record_error_never_a_500(post, paid_order):
    records = [1, None, "a", [1, 2], {**_good(paid_order), "external_id": {"a": 1}}, True]
    response = post(records, **EN)
    assert response.status_code == 400
    errors = [(e["row"], e["field"]) for e in response.json()["errors"]]
    assert errors == [
        (1, "row"),
        (2, "row"),
        (3, "row"),
        (4, "row"),
        (5, "external_id"),
        (6, "row"),
    ]
    assert response.json()["errors"][4]["message"] == (
        "Give text or a number, not an object, a list or true/false."
    )
    assert response.json()["errors"][0]["message"] == "Each record must be an object."
    assert not UsageRecord.objects.exists()


def test_errors_come_in_the_clients_language(post, paid_order, client):
    bad = [{**_good(paid_order), "day": "soon"}]
    assert post(bad, **EN).json()["errors"][0]["message"] == "Write the day as YYYY-MM-DD."
    chinese = post(bad, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").json()["errors"][0]["message"]
    assert chinese != "Write the day as YYYY-MM-DD." and "YYYY-MM-DD" in chinese
    # A language cookie from a Chinese page does not outvote the client's header.
    client.cookies["django_language"] = "zh-hans"
    assert post(bad, **EN).json()["errors"][0]["message"] == "Write the day as YYYY-MM-DD."
    # Authentication errors too.
    client.cookies.clear()
    refused = client.post(reverse("usage_api"), "{}", content_type="application/json", **EN)
    assert refused.status_code == 401 and refused.json()["errors"][0]["message"] == (
        "Send the metering token."
    )


@pytest.mark.parametrize("written", ["20261220", "2026-W52-1", "2026-12-20T00:00", "2026-1-2"])
def test_only_exact_iso_dates_are_days(post, paid_order, written):
    response = post([{**_good(paid_order), "day": written}], **EN)
    assert response.status_code == 400
    assert [(e["row"], e["field"]) for e in response.json()["errors"]] == [(1, "day")]


def test_control_characters_are_refused_not_stored_and_exported(post, paid_order):
    records = [
        {**_good(paid_order, 0), "external_id": "id\x00one"},
        {**_good(paid_order, 1), "node": "sz-h100-01\x00"},
        {**_good(paid_order, 2), "node": "n" * 101},
    ]
    response = post(records, **EN)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [(e["row"], e["field"]) for e in errors] == [
        (1, "external_id"),
        (2, "node"),
        (3, "node"),
    ]
    assert "control characters" in errors[0]["message"]
    assert "at most 100 characters; this one has 101" in errors[2]["message"]
    assert not UsageRecord.objects.exists()


def test_deep_huge_and_broken_json_are_one_clean_error(post):
    deep = post("[" * 100_000 + "]" * 100_000, **EN)
    assert deep.status_code == 400
    assert deep.json()["errors"] == [
        {"row": 0, "field": "file", "message": "The JSON is nested too deeply."}
    ]
    huge = post('{"records": [' + "9" * 5000 + "]}", **EN)
    assert huge.status_code == 400 and huge.json()["errors"][0]["field"] == "file"
    latin = post(b'{"records": ["\xff"]}', **EN)
    assert latin.json()["errors"][0]["message"] == "The body must be UTF-8."


def test_recorded_before_names_the_row_that_differs(paid_order):
    header = "external_id,order,day,quantity\n"
    first = f"e-1,{paid_order.number},{day(paid_order, 0)},1\n"
    usage_import_csv(text=header + first, source="csv", actor=None)
    again = (
        header
        + f"e-2,{paid_order.number},{day(paid_order, 1)},1\n"
        + f"e-3,{paid_order.number},{day(paid_order, 2)},1\n"
        + f"e-1,{paid_order.number},{day(paid_order, 0)},2\n"
    )
    with translation.override("en"), pytest.raises(UsageImportError) as caught:
        usage_import_csv(text=again, source="csv", actor=None)
    assert [(e.row, e.field) for e in caught.value.errors] == [(3, "external_id")]
    assert "recorded before with other values" in caught.value.errors[0].message


def test_the_admin_upload_refuses_a_file_over_the_cap_before_reading_it(client, demo):
    client.force_login(demo["admin"])
    big = b"external_id,order,day,quantity\n" + b"x" * MAX_UPLOAD_BYTES
    with translation.override("en"):
        url = reverse("admin:billing_usagerecord_import")
    response = client.post(
        url,
        {"format": "0", "import_file": SimpleUploadedFile("big.csv", big, content_type="text/csv")},
    )
    assert response.status_code == 200
    assert "at most 5 MB are taken at once" in str(response.context["form"].errors["import_file"])
    assert not UsageRecord.objects.exists()
