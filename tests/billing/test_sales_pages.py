"""The staff sales pages: what a salesperson and a sales manager see and can do."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils.translation import override

from billing.demo import DEMO_ORGANISATION_NAME
from billing.models import Quote, QuoteItem, QuoteLine, QuoteStatus
from billing.pricing.periods import site_today
from billing.quotes import services as quote_services
from billing.templatetags.billing_tags import money
from inventory.models import Reservation, ReservationStatus

pytestmark = pytest.mark.django_db
User = get_user_model()


def url(name: str, *args) -> str:
    with override("en"):
        return reverse(f"sales:{name}", args=args)


def login(username: str) -> Client:
    c = Client()
    c.force_login(User.objects.get(username=username))
    return c


@pytest.fixture
def sales(demo):
    return login("sales")


@pytest.fixture
def manager(demo):
    return login("manager")


def node_line(node_type, quantity="2", **kw) -> dict:
    return {"kind": "node", "node_type": node_type.pk, "quantity": quantity, **kw}


def form_data(demo, lines: list[dict], **overrides) -> dict:
    data = {
        "organisation": demo["org"].pk,
        "contact_name": "Dr. Lin",
        "contact_email": "lin@pearlriver.example",
        "language": "en",
        "site": demo["sz"].pk,
        "term": "month",
        "duration": "1",
        "start_date": demo["start"].isoformat(),
        "extra_discount": "0",
        "notes": "",
        "lines-TOTAL_FORMS": str(len(lines)),
        "lines-INITIAL_FORMS": "0",
        "lines-MIN_NUM_FORMS": "0",
        "lines-MAX_NUM_FORMS": "1000",
    }
    for i, line in enumerate(lines):
        for key, value in line.items():
            data[f"lines-{i}-{key}"] = value
    data.update(overrides)
    return data


def create(client: Client, demo, lines: list[dict], **overrides) -> Quote:
    before = set(Quote.objects.values_list("pk", flat=True))
    response = client.post(url("quote_create"), form_data(demo, lines, **overrides))
    assert response.status_code == 302, response.content.decode()[:3000]
    quote = Quote.objects.exclude(pk__in=before).get()
    assert response["Location"] == url("quote_detail", quote.pk)
    return quote


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


# --- Access -----------------------------------------------------------------------------


def test_anonymous_is_sent_to_the_login_page(client, demo):
    for target in (url("quote_list"), url("quote_create")):
        response = client.get(target)
        assert response.status_code == 302
        assert response["Location"].startswith("/en/accounts/login/?next=")
    assert client.post(url("quote_preview"), {}).status_code == 302
    live = client.post(url("quote_preview"), {}, headers={"HX-Request": "true"})
    assert live["HX-Redirect"].startswith("/en/accounts/login/?next=")


@pytest.mark.parametrize("username", ["customer", "ops"])
def test_customers_and_staff_without_a_sales_profile_get_403(demo, username):
    c = login(username)
    quote = create(login("sales"), demo, [node_line(demo["a100"])])
    assert c.get(url("quote_list")).status_code == 403
    assert c.get(url("quote_create")).status_code == 403
    assert c.get(url("quote_detail", quote.pk)).status_code == 403
    assert c.post(url("quote_send", quote.pk)).status_code == 403
    assert c.get(url("quote_pdf", quote.pk)).status_code == 403
    assert c.post(url("quote_preview"), form_data(demo, [])).status_code == 403
    assert Quote.objects.get(pk=quote.pk).status == QuoteStatus.DRAFT


def test_sales_link_in_the_nav_only_for_the_sales_team(demo, sales):
    with override("en"):
        catalog = reverse("catalog")
    assert url("quote_list") in sales.get(catalog).content.decode()
    assert url("quote_list") not in login("ops").get(catalog).content.decode()
    assert url("quote_list") in login("admin").get(url("quote_list")).content.decode()


# --- Create, preview, field errors --------------------------------------------------------


def test_sales_creates_a_quote_and_sees_it_in_the_list(demo, sales):
    lines = [
        node_line(demo["h100"], "2"),
        node_line(demo["e5"], "1", card_gpu_model=demo["rtx"].pk, cards_per_node="2"),
        {"kind": "addon", "addon_code": "checkpoint-storage", "quantity": "10"},
        {"kind": "custom", "description": "Rack-side data transfer", "quantity": "1",
         "unit_price": "800", "discountable": "on"},
    ]  # fmt: skip
    quote = create(sales, demo, lines, extra_discount="5")

    _snapshot, priced = quote_services.quote_price_preview(
        site=demo["sz"],
        term="month",
        duration=1,
        start_date=demo["start"],
        items=quote_services.quote_items(quote),
        extra_discount=Decimal("0.05"),
    )
    assert quote.extra_discount == Decimal("0.0500")
    assert quote.gross_total == priced.gross_total
    assert quote.items.count() == 4
    assert quote.created_by.username == "sales"

    html = sales.get(url("quote_list")).content.decode()
    assert f"{quote.number} v1" in html
    assert DEMO_ORGANISATION_NAME in html
    assert money(priced.gross_total, "CNY") in html

    detail = sales.get(url("quote_detail", quote.pk)).content.decode()
    assert "Rack-side data transfer" in detail
    assert "Send to customer" in detail  # 5% is within the 10% limit
    assert "Request approval" not in detail


def test_preview_prices_the_form_and_saves_nothing(demo, sales):
    counts = (Quote.objects.count(), QuoteItem.objects.count(), QuoteLine.objects.count())
    data = form_data(demo, [node_line(demo["h100"], "2")], term="year", duration="1")
    response = sales.post(url("quote_preview"), data)
    assert response.status_code == 200
    html = response.content.decode()
    _snapshot, priced = quote_services.quote_price_preview(
        site=demo["sz"],
        term="year",
        duration=1,
        start_date=demo["start"],
        items=[
            quote_services.ItemSpec(kind="node", quantity=Decimal(2), node_type_id=demo["h100"].pk)
        ],
    )
    assert "H100 annual" in html
    assert money(priced.gross_total, "CNY") in html
    assert "within your limit of 10%" in html
    assert (Quote.objects.count(), QuoteItem.objects.count(), QuoteLine.objects.count()) == counts


def test_preview_says_when_approval_will_be_needed(demo, sales):
    data = form_data(demo, [node_line(demo["a100"], "1")], extra_discount="15")
    html = sales.post(url("quote_preview"), data).content.decode()
    assert "above your limit of 10%" in html
    assert "need a sales manager" in html


def test_preview_shows_an_engine_refusal_instead_of_failing(demo, sales):
    line = node_line(demo["e5"], "1", card_gpu_model=demo["rtx"].pk, cards_per_node="6")
    response = sales.post(url("quote_preview"), form_data(demo, [line]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "This quote cannot be priced" in html
    assert "1 to 4 cards per node" in html


def test_bad_input_shows_errors_next_to_the_fields(demo, sales):
    yesterday = site_today(demo["sz"]) - timedelta(days=1)
    data = form_data(
        demo,
        [node_line(demo["h100"], "0"), {"kind": "custom", "quantity": "1", "unit_price": "-5"}],
        term="day",
        duration="90",
        start_date=yesterday.isoformat(),
    )
    response = sales.post(url("quote_create"), data)
    assert response.status_code == 200
    form, lines = response.context["form"], response.context["lines"]
    assert "90 is outside" in form.errors["duration"][0]
    assert "1 to 89" in form.errors["duration"][0]
    assert "in the past" in form.errors["start_date"][0]
    assert "whole number ≥ 1" in lines.forms[0].errors["quantity"][0]
    assert "needs a description" in lines.forms[1].errors["description"][0]
    assert "0 or more" in lines.forms[1].errors["unit_price"][0]
    html = response.content.decode()
    assert "whole number ≥ 1" in html
    assert Quote.objects.count() == 0


def test_a_quote_needs_at_least_one_line(demo, sales):
    response = sales.post(url("quote_create"), form_data(demo, []))
    assert response.status_code == 200
    assert "Add at least one line" in response.content.decode()
    assert Quote.objects.count() == 0


# --- Approval, send, revise -------------------------------------------------------------


def test_discount_above_the_limit_goes_through_approval_then_is_sent(demo, sales, manager):
    quote = create(sales, demo, [node_line(demo["h100"], "2")], extra_discount="15")
    detail = sales.get(url("quote_detail", quote.pk)).content.decode()
    assert "Request approval" in detail
    assert "Send to customer" not in detail

    response = sales.post(url("quote_send", quote.pk), follow=True)
    assert any("above your limit of 10.00%" in m for m in messages_of(response))
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.DRAFT

    sales.post(url("quote_request_approval", quote.pk), {"comment": "Competing offer"})
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.PENDING_APPROVAL
    assert "Approve" not in sales.get(url("quote_detail", quote.pk)).content.decode()

    html = manager.get(url("quote_detail", quote.pk)).content.decode()
    assert url("quote_approve", quote.pk) in html
    manager.post(url("quote_approve", quote.pk), {"comment": "OK for a 2-node pilot"})
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.APPROVED

    detail = sales.get(url("quote_detail", quote.pk)).content.decode()
    assert "OK for a 2-node pilot" in detail
    assert "Send to customer" in detail
    response = sales.post(url("quote_send", quote.pk), follow=True)
    assert any("was sent" in m for m in messages_of(response))
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.SENT
    held = Reservation.objects.filter(group=quote.reservation_group, status=ReservationStatus.HOLD)
    assert quote.reservation_group is not None
    assert held.count() == 2
    html = response.content.decode()
    assert f"/en/q/{quote.token}/" in html  # the customer link to copy
    assert "http://testserver/" in html


def test_declining_needs_a_comment_and_the_requester_sees_it(demo, sales, manager):
    quote = create(sales, demo, [node_line(demo["a100"], "1")], extra_discount="20")
    sales.post(url("quote_request_approval", quote.pk))
    response = manager.post(url("quote_decline", quote.pk), {"comment": "  "}, follow=True)
    assert any("Say why" in m for m in messages_of(response))
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.PENDING_APPROVAL

    manager.post(url("quote_decline", quote.pk), {"comment": "Too deep for a new customer"})
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.DRAFT
    html = sales.get(url("quote_detail", quote.pk)).content.decode()
    assert "Too deep for a new customer" in html
    assert "manager" in html


def test_a_sent_quote_cannot_be_edited_but_can_be_revised(demo, sales):
    quote = create(sales, demo, [node_line(demo["a100"], "1")])
    sales.post(url("quote_send", quote.pk))
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.SENT

    response = sales.get(url("quote_edit", quote.pk))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Sent quotes are immutable" in html
    assert url("quote_revise", quote.pk) in html

    response = sales.post(
        url("quote_edit", quote.pk), form_data(demo, [node_line(demo["a100"], "3")])
    )
    assert "Sent quotes are immutable" in response.content.decode()
    quote.refresh_from_db()
    assert quote.items.get().quantity == 1
    assert quote.status == QuoteStatus.SENT

    response = sales.post(url("quote_revise", quote.pk))
    revision = Quote.objects.get(previous=quote)
    assert response["Location"] == url("quote_detail", revision.pk)
    assert (revision.number, revision.version) == (quote.number, 2)
    assert revision.status == QuoteStatus.DRAFT
    html = sales.get(url("quote_detail", revision.pk)).content.decode()
    assert url("quote_detail", quote.pk) in html  # the versions list links v1


def test_editing_a_draft_saves_the_changes(demo, sales):
    quote = create(sales, demo, [node_line(demo["a100"], "1")])
    page = sales.get(url("quote_edit", quote.pk))
    assert page.status_code == 200
    assert page.context["form"].initial["contact_name"] == "Dr. Lin"
    data = form_data(
        demo,
        [node_line(demo["a100"], "3")],
        valid_until=(demo["start"] + timedelta(days=1)).isoformat(),
        contact_name="Dr. Lin Wei",
    )
    del data["site"]  # fixed on the edit form; the live preview takes it from the quote
    preview = sales.post(url("quote_preview") + f"?quote={quote.pk}", data)
    assert "A100 40G 4-GPU" in preview.content.decode()
    assert "12 GPU" in preview.content.decode()  # 3 nodes × 4 GPUs, priced per GPU
    response = sales.post(url("quote_edit", quote.pk), data)
    assert response.status_code == 302
    quote.refresh_from_db()
    assert quote.contact_name == "Dr. Lin Wei"
    assert quote.items.get().quantity == 3
    assert quote.valid_until == demo["start"] + timedelta(days=1)


# --- List -------------------------------------------------------------------------------


def test_list_filters_by_status_and_salesperson(demo, sales, manager):
    mine = create(sales, demo, [node_line(demo["a100"], "1")])
    theirs = create(manager, demo, [node_line(demo["a100"], "2")])
    sent = create(sales, demo, [node_line(demo["a100"], "1")])
    sales.post(url("quote_send", sent.pk))

    def numbers(params: dict) -> set[int]:
        response = sales.get(url("quote_list"), params)
        return {q.pk for q in response.context["page"]}

    sales_user = User.objects.get(username="sales")
    assert numbers({}) == {mine.pk, theirs.pk, sent.pk}
    assert numbers({"status": "sent"}) == {sent.pk}
    assert numbers({"status": "draft"}) == {mine.pk, theirs.pk}
    assert numbers({"salesperson": sales_user.pk}) == {mine.pk, sent.pk}
    assert numbers({"salesperson": sales_user.pk, "status": "draft"}) == {mine.pk}
    assert numbers({"q": sent.number}) == {sent.pk}
    assert numbers({"q": "珠江智算"}) == {mine.pk, theirs.pk, sent.pk}


@pytest.mark.parametrize("how_many", [3, 30])
def test_list_query_count_does_not_grow(demo, sales, django_assert_max_num_queries, how_many):
    actor = User.objects.get(username="sales")
    items = [
        quote_services.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["a100"].pk)
    ]
    for _ in range(how_many):
        quote_services.quote_create(
            site=demo["sz"],
            organisation=demo["org"],
            contact_name="Dr. Lin",
            contact_email="lin@pearlriver.example",
            term="month",
            duration=1,
            start_date=demo["start"],
            items=items,
            actor=actor,
        )
    with django_assert_max_num_queries(7):  # session, user, profile, 2 filter menus, count, page
        response = sales.get(url("quote_list"))
    assert response.status_code == 200
    assert len(response.context["page"]) == min(how_many, 25)
