"""The billing and organisation admin: changelists that stay fast as rows grow, price-book
edits that go through the logging services, and quotes that cannot be made here."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.forms import MultiWidget
from django.urls import reverse
from django.utils import timezone

from accounts.models import Membership, Organisation
from billing.models import (
    AddonPrice,
    NodePrice,
    Order,
    PriceBook,
    PriceChange,
    Quote,
    QuoteEvent,
    QuoteLine,
    QuoteStatus,
    SalesProfile,
)
from tests import factories

pytestmark = pytest.mark.django_db

# Queries one changelist page may run, whatever the number of rows: session and user, the
# counts, the page of rows with their related rows, the choices of its filters.
CHANGELIST_QUERY_BOUND = 8


def admin_url(name, *args):
    return reverse(name, args=args)


def build_billing(count):
    """``count`` rows of everything the billing changelists show, each with its own
    related rows (user, organisation, book, site) so a missing join costs a query a row."""
    users = get_user_model().objects
    sites = [
        factories.site("SZ"),
        factories.site("HK", name="Hong Kong", city="Hong Kong", currency="HKD"),
    ]
    base = timezone.now() - timedelta(days=count + 1)
    today = timezone.now().date()
    for i in range(count):
        site = sites[i % 2]
        user = users.create_user(f"sales-{i}", email=f"sales-{i}@example.com", is_staff=True)
        SalesProfile.objects.create(user=user, max_discount=Decimal("0.125"))
        org = Organisation.objects.create(name=f"Customer {i}", tax_id=f"TAX{i:04d}")
        Membership.objects.create(organisation=org, user=user)
        book = PriceBook.objects.create(
            site=site,
            name=f"Book {i}",
            currency=site.currency,
            effective_from=base + timedelta(days=i),
            created_by=user,
        )
        PriceChange.objects.create(price_book=book, actor=user, what=f"PriceBook {i}")
        quote = Quote.objects.create(
            number=f"Q-{site.code}-2026-{i:06d}",
            site=site,
            organisation=org,
            contact_name="Li Wei",
            contact_email="li.wei@example.com",
            price_book=book,
            currency=site.currency,
            vat_rate=site.vat_rate,
            term="month",
            duration=1,
            start_date=today,
            valid_until=today,
            status=QuoteStatus.ACCEPTED,
            gross_total=Decimal("1060.00"),
            created_by=user,
        )
        QuoteEvent.objects.create(quote=quote, to_status=QuoteStatus.DRAFT, actor=user)
        Order.objects.create(
            number=f"O-{site.code}-2026-{i:06d}",
            organisation=org,
            quote=quote,
            site=site,
            currency=site.currency,
            gross_total=quote.gross_total,
            start_at=timezone.now(),
            end_at=timezone.now() + timedelta(days=30),
        )


CHANGELISTS = [
    "billing_pricebook",
    "billing_pricechange",
    "billing_salesprofile",
    "billing_quote",
    "billing_order",
    "accounts_organisation",
    "accounts_membership",
]


@pytest.mark.parametrize("count", [3, 40])
@pytest.mark.parametrize("model", CHANGELISTS)
def test_changelist_runs_a_fixed_number_of_queries(
    admin_client, django_assert_max_num_queries, model, count
):
    build_billing(count)
    url = admin_url(f"admin:{model}_changelist")

    with django_assert_max_num_queries(CHANGELIST_QUERY_BOUND):
        response = admin_client.get(url)

    assert response.status_code == 200
    assert response.context["cl"].result_count >= count


def test_sales_profile_list_shows_the_limit_as_a_percent(admin_client):
    build_billing(1)

    html = admin_client.get(admin_url("admin:billing_salesprofile_changelist")).content.decode()

    assert "12.5%" in html


def test_organisation_search_finds_name_legal_name_and_tax_id(admin_client):
    Organisation.objects.create(
        name="Pearl River AI Lab", legal_name="深圳珠江智算", tax_id="9144X"
    )
    Organisation.objects.create(name="Other")
    url = admin_url("admin:accounts_organisation_changelist")

    for term in ("Pearl", "珠江", "9144X"):
        found = admin_client.get(url, {"q": term}).context["cl"].result_list
        assert [o.name for o in found] == ["Pearl River AI Lab"], term


# --- Quotes and orders are shown only ---------------------------------------------------


@pytest.mark.parametrize("model", ["quote", "order", "pricechange"])
def test_quotes_orders_and_the_change_log_cannot_be_added_here(admin_client, model):
    response = admin_client.get(admin_url(f"admin:billing_{model}_add"))

    assert response.status_code == 403


def test_quote_page_shows_lines_and_history_read_only(admin_client):
    build_billing(1)
    quote = Quote.objects.get()
    QuoteLine.objects.create(
        quote=quote,
        position=1,
        kind="node",
        code="h100-8x",
        description="H100 8-GPU NVLink",
        quantity=1,
        unit="node",
        unit_price=Decimal("1000"),
        periods=1,
        period_unit="month",
        list_amount=Decimal("1000"),
        discount_amount=0,
        net=Decimal("1000"),
        vat=Decimal("60"),
        gross=Decimal("1060"),
    )
    url = admin_url("admin:billing_quote_change", quote.pk)

    response = admin_client.get(url)
    posted = admin_client.post(url, {"status": "draft"})
    deleted = admin_client.get(admin_url("admin:billing_quote_delete", quote.pk))

    assert response.status_code == 200
    assert "H100 8-GPU NVLink" in response.content.decode()
    assert posted.status_code == 403
    assert deleted.status_code == 403
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.ACCEPTED


# --- Editing a price book ---------------------------------------------------------------


def make_book(*, effective_from=None):
    site = factories.site("SZ")
    node_type = factories.node_type("h100-8x")
    book = PriceBook.objects.create(
        site=site,
        name="Shenzhen 2026",
        currency="CNY",
        effective_from=effective_from or timezone.now() - timedelta(days=10),
    )
    NodePrice.objects.create(
        price_book=book,
        node_type=node_type,
        category="gpu",
        basis="node",
        monthly=Decimal("100000"),
        daily=Decimal("4000"),
    )
    AddonPrice.objects.create(
        price_book=book, code="egress", name="Egress", unit="tb", price=Decimal("500")
    )
    return book


def form_values(form):
    """What a browser would post back for ``form`` as rendered (unchanged)."""
    data = {}
    for bound in form:
        value = bound.value()
        if value is None or value is False:
            continue
        if isinstance(bound.field.widget, MultiWidget):
            for i, part in enumerate(bound.field.widget.decompress(value)):
                data[f"{bound.html_name}_{i}"] = "" if part is None else str(part)
        elif value is True:
            data[bound.html_name] = "on"
        else:
            data[bound.html_name] = str(value)
    return data


def change_form_data(response):
    """The change form's own values and every inline formset's, management forms too."""
    data = form_values(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update(form_values(formset.management_form))
        for form in formset.forms:
            data.update(form_values(form))
    return data


def inline_prefix(response, model):
    for inline in response.context["inline_admin_formsets"]:
        if inline.formset.model is model:
            return inline.formset.prefix
    raise AssertionError(f"no inline for {model.__name__}")


def test_editing_a_node_price_in_the_admin_is_logged_with_the_admin_user(admin_client, admin_user):
    book = make_book()
    url = admin_url("admin:billing_pricebook_change", book.pk)
    page = admin_client.get(url)
    data = change_form_data(page)
    prefix = inline_prefix(page, NodePrice)
    assert data[f"{prefix}-0-monthly"] == "100000.00"
    data[f"{prefix}-0-monthly"] = "95000.00"

    response = admin_client.post(url, data)

    assert response.status_code == 302, response.context and response.context["errors"]
    price = NodePrice.objects.get(price_book=book)
    assert price.monthly == Decimal("95000.00")
    change = PriceChange.objects.get(price_book=book)
    assert change.actor == admin_user
    assert change.what == "NodePrice h100-8x monthly"
    assert (change.before, change.after) == ({"monthly": "100000.00"}, {"monthly": "95000.00"})
    assert "NodePrice h100-8x monthly" in admin_client.get(url).content.decode()
    log = admin_client.get(
        admin_url("admin:billing_pricechange_changelist"), {"price_book__id__exact": book.pk}
    )
    assert [c.what for c in log.context["cl"].result_list] == ["NodePrice h100-8x monthly"]


def test_deleting_an_entry_in_the_admin_is_logged(admin_client, admin_user):
    book = make_book()
    url = admin_url("admin:billing_pricebook_change", book.pk)
    page = admin_client.get(url)
    data = change_form_data(page)
    data[f"{inline_prefix(page, AddonPrice)}-0-DELETE"] = "on"

    response = admin_client.post(url, data)

    assert response.status_code == 302
    assert not AddonPrice.objects.filter(price_book=book).exists()
    change = PriceChange.objects.get(price_book=book)
    assert (change.what, change.actor) == ("AddonPrice egress removed", admin_user)
    assert change.before["price"] == "500.00"


def test_a_daily_rate_below_monthly_is_a_form_error_and_nothing_is_saved(admin_client):
    book = make_book()
    url = admin_url("admin:billing_pricebook_change", book.pk)
    page = admin_client.get(url)
    data = change_form_data(page)
    data[f"{inline_prefix(page, NodePrice)}-0-daily"] = "100.00"

    response = admin_client.post(url, data)

    assert response.status_code == 200
    assert "renting by the day would be cheaper" in response.content.decode()
    assert NodePrice.objects.get(price_book=book).daily == Decimal("4000.00")
    assert not PriceChange.objects.exists()


def test_a_frozen_book_is_shown_read_only_and_a_forged_post_changes_nothing(
    admin_client, admin_user
):
    book = make_book()
    build_billing(1)  # a quote (accepted, so it was sent) ...
    Quote.objects.update(price_book=book)  # ... priced from this book
    url = admin_url("admin:billing_pricebook_change", book.pk)

    page = admin_client.get(url)
    html = page.content.decode()
    prefix = inline_prefix(page, NodePrice)
    forged = change_form_data(page)
    forged.update(
        {
            "name": "renamed",
            f"{prefix}-0-id": str(NodePrice.objects.get(price_book=book).pk),
            f"{prefix}-0-monthly": "1",
        }
    )
    response = admin_client.post(url, forged)

    assert "it cannot change" in html
    assert f'name="{prefix}-0-monthly"' not in html
    assert response.status_code == 302
    book.refresh_from_db()
    assert book.name == "Shenzhen 2026"
    assert NodePrice.objects.get(price_book=book).monthly == Decimal("100000.00")
    assert not PriceChange.objects.filter(price_book=book).exists()


def test_a_refusal_from_the_service_is_a_message_not_a_server_error(admin_client, monkeypatch):
    from billing.pricing import services as pricebooks
    from core.errors import DomainError

    book = make_book()
    url = admin_url("admin:billing_pricebook_change", book.pk)
    page = admin_client.get(url)
    data = change_form_data(page)
    data[f"{inline_prefix(page, NodePrice)}-0-monthly"] = "95000.00"

    def refuse(**kwargs):
        raise DomainError("Refused for the test.")

    monkeypatch.setattr(pricebooks, "price_entry_save", refuse)
    response = admin_client.post(url, data, follow=True)

    assert response.status_code == 200
    assert "Refused for the test." in [str(m) for m in response.context["messages"]]
    assert NodePrice.objects.get(price_book=book).monthly == Decimal("100000.00")


def test_adding_a_book_as_a_copy_copies_the_entries_with_the_admin_user(admin_client, admin_user):
    source = make_book()
    start = timezone.localtime(timezone.now() + timedelta(days=5)).replace(microsecond=0)

    response = admin_client.post(
        admin_url("admin:billing_pricebook_add"),
        {
            "site": source.site_id,
            "name": "Shenzhen 2026 H2",
            "effective_from_0": start.strftime("%Y-%m-%d"),
            "effective_from_1": start.strftime("%H:%M:%S"),
            "notes": "",
            "copy_from": source.pk,
        },
    )

    assert response.status_code == 302
    copy = PriceBook.objects.get(name="Shenzhen 2026 H2")
    assert (copy.currency, copy.created_by, copy.effective_from) == ("CNY", admin_user, start)
    assert NodePrice.objects.get(price_book=copy).monthly == Decimal("100000.00")
    assert AddonPrice.objects.get(price_book=copy).code == "egress"
    assert PriceChange.objects.filter(price_book=copy, actor=admin_user).count() == 3


def test_adding_a_book_at_a_taken_start_is_a_form_error(admin_client):
    source = make_book()
    start = timezone.localtime(source.effective_from)

    response = admin_client.post(
        admin_url("admin:billing_pricebook_add"),
        {
            "site": source.site_id,
            "name": "Twin",
            "effective_from_0": start.strftime("%Y-%m-%d"),
            "effective_from_1": start.strftime("%H:%M:%S.%f"),
            "notes": "",
        },
    )

    assert response.status_code == 200
    assert "already has a price book" in response.content.decode()
    assert PriceBook.objects.count() == 1


def test_copy_action_creates_a_book_from_tomorrow(admin_client, admin_user):
    source = make_book()

    response = admin_client.post(
        admin_url("admin:billing_pricebook_changelist"),
        {"action": "copy_from_tomorrow", "_selected_action": [source.pk]},
        follow=True,
    )

    assert response.status_code == 200
    copy = PriceBook.objects.exclude(pk=source.pk).get()
    site_now = timezone.now().astimezone(source.site.tzinfo)
    assert copy.effective_from.astimezone(source.site.tzinfo).date() == (
        site_now.date() + timedelta(days=1)
    )
    assert NodePrice.objects.filter(price_book=copy).count() == 1


def test_price_book_change_page_query_count_does_not_grow_with_entries(
    admin_client, django_assert_max_num_queries
):
    book = make_book()
    url = admin_url("admin:billing_pricebook_change", book.pk)
    admin_client.get(url)
    with django_assert_max_num_queries(60) as few:
        admin_client.get(url)
    for i in range(20):
        AddonPrice.objects.create(
            price_book=book, code=f"extra-{i}", name=f"Extra {i}", unit="once", price=1
        )
        NodePrice.objects.create(
            price_book=book,
            node_type=factories.node_type(f"type-{i}"),
            category="gpu",
            basis="node",
            monthly=Decimal("10"),
            daily=Decimal("1"),
        )

    with django_assert_max_num_queries(len(few.captured_queries)):
        admin_client.get(url)
