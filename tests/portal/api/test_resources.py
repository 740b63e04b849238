"""The resources over the same services as the pages, and the conventions a client relies
on: idempotency, cursors, rate limits, problem details in both languages, money as
strings with currency, times with their offset."""

import re

import pytest

from billing.models import Contract, CreditNote, Invoice, Order, OrderStatus, Quote, QuoteStatus
from portal.api import serializers as s
from tests.portal.api.conftest import ApiClient

OFFSET = re.compile(r"T\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$")


def test_catalog_availability_and_sizing(demo, api, config):
    types = api.get("/api/v1/node-types/").json()
    h100 = next(t for t in types if t["code"] == demo["h100"].code)
    assert h100["gpu_count"] == 8 and h100["gpu_model"]
    books = api.get("/api/v1/price-books/").json()
    assert {b["site"] for b in books} == {"SZ", "HK"}
    assert all(OFFSET.search(b["effective_from"]) for b in books)
    start = f"{config['start_date']}T00:00:00+08:00"
    end = f"{config['start_date']}T00:00:00+08:00".replace("T00", "T12")
    free = api.get("/api/v1/availability/", {
        "site": "SZ", "node_type": demo["h100"].code, "count": 2, "start": start, "end": end,
    }).json()  # fmt: skip
    assert free["can_place"] and free["free"] >= 2 and free["earliest_start"] == start
    short = api.get("/api/v1/availability/", {
        "site": "SZ", "node_type": demo["h100"].code, "count": 999, "start": start, "end": end,
    }).json()  # fmt: skip
    assert not short["can_place"]
    sized = api.get("/api/v1/sizing/", {"params_billion": "70", "zero_stage": 3})
    assert sized.status_code == 200 and sized.json()["cheapest"]["gpus"] >= 8
    bad = api.get("/api/v1/sizing/", {"params_billion": "-1"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "params_billion"


def test_estimate_holds_nothing_and_prices_like_the_configure_page(demo, api, config):
    before = Quote.objects.count()
    estimate = api.post("/api/v1/estimates/", config).json()
    assert Quote.objects.count() == before
    assert estimate["currency"] == "CNY" and re.fullmatch(r"\d+\.\d\d", estimate["gross_total"])
    assert estimate["lines"][0]["code"] == demo["h100"].code and estimate["available"]
    # Each line as the priced line reads: its kind's code, amounts as decimal strings.
    node = estimate["lines"][0]
    assert set(node) == {
        "kind", "code", "description", "quantity", "unit", "unit_price", "periods",
        "period_unit", "list_amount", "net", "vat", "gross", "tax_category", "note",
    }  # fmt: skip
    assert node["kind"] == "node" and node["quantity"] == f"{config['node_count']}.00"
    assert all(re.fullmatch(r"\d+\.\d\d", node[k]) for k in ("unit_price", "net", "gross"))


def test_firm_quote_accept_order_and_bank_transfer(demo, api, config):
    created = api.post("/api/v1/quotes/", config)
    assert created.status_code == 201, created.content
    quote = created.json()
    assert quote["status"] == "sent" and quote["lines"] and quote["placement"]
    assert OFFSET.search(quote["expires_at"])
    assert api.get(f"/api/v1/quotes/{quote['number']}/revisions/").json()[0]["version"] == 1
    order = api.post(f"/api/v1/quotes/{quote['number']}/accept/", {"name": "Li Wei"}).json()
    assert order["status"] == OrderStatus.AWAITING_PAYMENT and order["quote"] == quote["number"]
    assert order["gate"]["missing"] and order["timeline"]
    detail = api.get(f"/api/v1/orders/{order['number']}/").json()
    assert detail["nodes"] and detail["provisioning"] is None
    transfer = api.get(f"/api/v1/orders/{order['number']}/bank-transfer/").json()
    assert transfer["amount"] == order["gross_total"] and transfer["currency"] == "CNY"
    again = api.post(f"/api/v1/quotes/{quote['number']}/accept/", {"name": "Li Wei"})
    assert again.status_code == 422 and again["Content-Type"] == "application/problem+json"
    invoices = api.get("/api/v1/invoices/").json()["results"]
    assert invoices[0]["order"] == order["number"]
    assert invoices[0]["pdf_url"].endswith(f"/invoices/{invoices[0]['number']}/pdf/")
    pending = api.get(invoices[0]["pdf_url"])  # not rendered yet: an operation to poll
    assert pending.status_code == 202 and int(pending["Retry-After"]) >= 1
    assert pending.json()["poll"] == invoices[0]["pdf_url"] and not pending.json()["done"]


def test_reject_releases_the_quote(demo, api, config):
    quote = api.post("/api/v1/quotes/", config).json()
    rejected = api.post(f"/api/v1/quotes/{quote['number']}/reject/", {"name": "Li Wei"}).json()
    assert rejected["status"] == QuoteStatus.REJECTED


def test_the_same_idempotency_key_returns_the_first_result(demo, api, config):
    first = api.post("/api/v1/quotes/", config, idempotency_key="k-1")
    second = api.post("/api/v1/quotes/", config, idempotency_key="k-1")
    assert first.status_code == second.status_code == 201
    assert second["Idempotent-Replayed"] == "true"
    assert second.json()["number"] == first.json()["number"]
    assert Quote.objects.filter(organisation=demo["org"], status=QuoteStatus.SENT).count() == 1
    other = api.post("/api/v1/quotes/", {**config, "node_count": 1}, idempotency_key="k-1")
    assert other.status_code == 409 and other.json()["code"] == "idempotency_key_reused"
    missing = ApiClient(api.key).post("/api/v1/quotes/", config, HTTP_IDEMPOTENCY_KEY="")
    assert missing.status_code == 400 and missing.json()["code"] == "idempotency_key_missing"


def test_cursor_pagination(demo, api):
    for n in range(3):
        api.post("/api/v1/ssh-keys/", {"name": f"k{n}", "public_key": KEYS[n]})
    page = api.get("/api/v1/ssh-keys/", {"limit": 2}).json()
    assert len(page["results"]) == 2 and page["next"]
    rest = api.get(page["next"]).json()
    names = [k["name"] for k in page["results"] + rest["results"]]
    assert names == ["k2", "k1", "k0"]


def test_rate_limits_answer_429_with_the_headers(demo, api, settings):
    settings.PORTAL_API_RATE_LIMIT = 3
    answers = [api.get("/api/v1/sites/") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[0]["RateLimit-Policy"].startswith('"default";q=3;w=')
    assert re.fullmatch(r'"default";r=2;t=\d+', answers[0]["RateLimit"])
    limited = answers[-1]
    assert int(limited["Retry-After"]) >= 1 and limited.json()["code"] == "rate_limited"


@pytest.mark.parametrize(("lang", "detail"), [("en", "Not found."), ("zh-hans", "未找到。")])
def test_problem_details_in_the_request_language(demo, api, lang, detail):
    response = api.get("/api/v1/orders/O-NOPE/", HTTP_ACCEPT_LANGUAGE=lang)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "not_found" and body["detail"] == detail and body["status"] == 404


def test_field_errors_in_chinese(demo, api, config):
    response = api.post(
        "/api/v1/estimates/",
        {**config, "start_date": "2001-01-01"},
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    body = response.json()
    assert response.status_code == 400 and body["code"] == "validation_failed"
    fields = {e["field"]: e["message"] for e in body["errors"]}
    assert set(fields) >= {"start_date"}
    assert all(re.search(r"[\u4e00-\u9fff]", m) for m in fields.values()), fields
    assert re.search(r"[\u4e00-\u9fff]", body["title"])


def test_docs_and_schema_are_served_without_a_cdn(client):
    schema = client.get("/api/v1/schema/?format=json")
    assert schema.status_code == 200 and schema.json()["openapi"].startswith("3.")
    for url in ("/api/v1/docs/", "/api/v1/docs/try/"):
        page = client.get(url).content.decode()
        assert "googleapis" not in page and "cdn." not in page and "/static/" in page


KEYS = [
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICEa370Oh8CtCX/fsSvLod+jXatM+gDFQnJEFumtNGGH k0@x",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAJb5gRPPTtvcVHxq0lR9bYZIz1qUXM9WLKbrBlWaXs1 k1@x",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBVOSJF3YLDPphODDWyzl9bhHGNhBfHXSCPrh+V+UzAG k2@x",
]


def test_a_keyed_delete_or_put_is_replayed_and_an_unkeyed_one_just_runs(demo, api, rented):
    key = api.post("/api/v1/ssh-keys/", {"name": "k", "public_key": KEYS[0]}).json()
    url = f"/api/v1/ssh-keys/{key['id']}/"
    first = api.delete(url, HTTP_IDEMPOTENCY_KEY="del-1")
    again = api.delete(url, HTTP_IDEMPOTENCY_KEY="del-1")
    assert first.status_code == again.status_code == 204
    assert again["Idempotent-Replayed"] == "true"
    assert api.delete(url).status_code == 404  # no key: the key is gone
    order = rented[0]
    policy = f"/api/v1/orders/{order.number}/replacement-policy/"
    body = {"mode": "ask", "ask_minutes": 30}
    put = api.put(policy, body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="p-1")
    assert put.status_code == 200
    other = api.put(
        policy, {**body, "ask_minutes": 60}, content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="p-1",
    )  # fmt: skip
    assert other.status_code == 409 and other.json()["code"] == "idempotency_key_reused"
    plain = api.put(policy, {**body, "ask_minutes": 60}, content_type="application/json")
    assert plain.status_code == 200 and plain.json()["ask_minutes"] == 60


def test_each_order_document_names_its_order_and_its_pdf_in_the_api():
    order = Order(number="O-SZ-2026-000042")
    invoice = Invoice(number="INV-SZ-2026-000007", order=order, currency="CNY")
    note = CreditNote(number="CN-SZ-2026-000003", invoice=invoice, order=order, currency="CNY")
    contract = Contract(number="C-SZ-2026-000005", order=order)
    answered = {
        "credit note": s.CreditNoteSerializer(note).data,
        "contract": s.ContractSerializer(contract, context={"language": "zh-hans"}).data,
    }
    assert {kind: (d["order"], d["pdf_url"]) for kind, d in answered.items()} == {
        "credit note": (order.number, "/api/v1/credit-notes/CN-SZ-2026-000003/pdf/"),
        "contract": (order.number, "/api/v1/contracts/C-SZ-2026-000005/pdf/"),
    }
    assert answered["credit note"]["invoice"] == invoice.number
    assert (
        answered["contract"]["signing_url"] == f"/zh-hans/account/orders/{order.number}/contract/"
    )
