"""Paying an order: minor units at the Stripe boundary, the card and bank-transfer pages,
and staff marking a transfer paid in the back office."""

from datetime import timedelta
from decimal import Decimal

import pytest
import stripe
from django.conf import settings
from django.contrib.auth import get_user_model
from django.shortcuts import resolve_url
from django.urls import reverse
from django.utils import timezone, translation

from accounts.models import Membership, Organisation
from billing import stripe_api
from billing.models import (
    InvoiceStatus,
    Order,
    OrderStatus,
    Payment,
    PaymentMethod,
    PaymentStatus,
    SellerEntity,
)
from billing.orders import acceptance
from billing.payments import services as payments
from billing.payments import webhooks
from billing.quotes import services as qs
from core.errors import DomainError
from core.money import money_text as money
from inventory.models import Reservation, ReservationStatus, Site
from tests import factories

pytestmark = pytest.mark.django_db


def make_order(demo, *, nodes=2) -> Order:
    """An accepted quote's order, awaiting payment, with its nodes held."""
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(nodes), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    # A sales quote needs a signed contract before provisioning (tests/billing/
    # test_contracts.py signs for real); payments are tested here.
    return factories.contract_signed_shortcut(order)


def reservations(order):
    return Reservation.objects.filter(group=order.reservation_group)


def pay_url(name, order, lang="en"):
    with translation.override(lang):
        return reverse(name, args=[order.number])


# --- Minor units ------------------------------------------------------------------------


def test_minor_units_are_exact_decimal_conversions():
    assert stripe_api.to_minor_units(Decimal("16472400.00"), "CNY") == 1647240000
    assert stripe_api.to_minor_units(Decimal("0.01"), "HKD") == 1
    assert stripe_api.to_minor_units(Decimal("12"), "usd") == 1200
    assert stripe_api.from_minor_units(1647240000, "CNY") == Decimal("16472400.00")
    assert str(stripe_api.from_minor_units(1, "HKD")) == "0.01"
    for amount in ("0.001", "16472400.005"):
        with pytest.raises(ValueError, match="fraction of a minor unit"):
            stripe_api.to_minor_units(Decimal(amount), "CNY")
    with pytest.raises(TypeError):
        stripe_api.to_minor_units(12.5, "CNY")
    with pytest.raises(ValueError, match="Unsupported currency"):
        stripe_api.to_minor_units(Decimal("1"), "EUR")
    with pytest.raises(TypeError):
        stripe_api.from_minor_units(Decimal("100"), "CNY")


def test_the_api_version_is_pinned_to_the_installed_sdk():
    # Upgrading the SDK without reviewing the pinned version fails here.
    from stripe._api_version import _ApiVersion

    assert stripe_api.API_VERSION == _ApiVersion.CURRENT


def test_the_client_uses_the_pinned_version_and_api_base(settings):
    settings.STRIPE_SECRET_KEY = "sk_test_x"
    settings.STRIPE_API_BASE = "http://127.0.0.1:8420/"
    client = stripe_api.client()
    assert isinstance(client, stripe.StripeClient)
    requestor = client._requestor
    assert requestor._options.stripe_version == stripe_api.API_VERSION
    assert requestor._options.base_addresses["api"] == "http://127.0.0.1:8420"


# --- Card payment -----------------------------------------------------------------------


def test_card_payment_says_it_is_not_configured_and_bank_transfer_works(client, demo, no_stripe):
    order = make_order(demo)
    invoice = order.invoices.get()
    with pytest.raises(DomainError, match="Card payment is not configured"):
        payments.payment_card_start(order=order, actor=demo["customer"])
    client.force_login(demo["customer"])
    page = client.get(pay_url("order_pay", order))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Card payment is not configured on this portal; please pay by bank transfer." in html
    assert "js.stripe.com" not in html
    assert order.number in html and invoice.number in html
    assert invoice.bank_reference in html
    seller = SellerEntity.objects.get(site=demo["sz"])
    assert seller.account_number in html  # the Shenzhen seller's account
    assert seller.account_name in html and seller.cnaps_code in html
    assert "CMBCCNBS" in html
    assert f"{invoice.gross_total:,.2f}" in html
    due = timezone.localtime(order.payment_due_at, demo["sz"].tzinfo)
    assert due.strftime("%Y-%m-%d %H:%M") in html
    # The card page itself sends the customer back with the same message.
    response = client.post(pay_url("order_pay_card", order), follow=True)
    assert "Card payment is not configured" in response.content.decode()
    assert Payment.objects.count() == 0


def test_the_pay_page_is_in_chinese_too(client, demo, no_stripe):
    order = make_order(demo)
    client.force_login(demo["customer"])
    page = client.get(pay_url("order_pay", order, lang="zh-hans"))
    assert page.status_code == 200
    assert order.invoices.get().bank_reference in page.content.decode()


def test_card_start_makes_one_payment_intent_per_invoice_and_reuses_it(demo, fake_stripe):
    order = make_order(demo)
    invoice = order.invoices.get()
    payment, secret = payments.payment_card_start(order=order, actor=demo["customer"])
    assert secret == "pi_test_1_secret_abc"
    assert (payment.invoice, payment.status, payment.amount, payment.currency) == (
        invoice,
        PaymentStatus.PENDING,
        invoice.gross_total,
        invoice.currency,
    )
    call = fake_stripe.created[0]
    assert call["amount"] == invoice.gross_total and call["currency"] == invoice.currency
    assert call["invoice_number"] == invoice.number and call["order_number"] == order.number
    assert call["idempotency_key"] == f"pi-{invoice.number}-1"
    again, secret_again = payments.payment_card_start(order=order, actor=demo["customer"])
    assert (again.pk, secret_again) == (payment.pk, secret)
    assert len(fake_stripe.created) == 1
    # After a failure the same intent is tried again; once cancelled, a new one is made.
    Payment.objects.filter(pk=payment.pk).update(status=PaymentStatus.FAILED)
    again, _secret = payments.payment_card_start(order=order, actor=demo["customer"])
    assert again.pk == payment.pk and again.status == PaymentStatus.PENDING
    fake_stripe.intents["pi_test_1"]["status"] = "canceled"
    fresh, fresh_secret = payments.payment_card_start(order=order, actor=demo["customer"])
    assert fresh.stripe_payment_intent == "pi_test_2" and fresh_secret.startswith("pi_test_2")
    assert fake_stripe.created[1]["idempotency_key"] == f"pi-{invoice.number}-2"


def test_card_start_refuses_orders_not_awaiting_payment_or_past_their_deadline(demo, fake_stripe):
    order = make_order(demo)
    Order.objects.filter(pk=order.pk).update(payment_due_at=timezone.now() - timedelta(minutes=1))
    with pytest.raises(DomainError, match="payment deadline"):
        payments.payment_card_start(order=order, actor=demo["customer"])
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.PAID)
    with pytest.raises(DomainError, match="not awaiting payment"):
        payments.payment_card_start(order=order, actor=demo["customer"])
    assert fake_stripe.created == []


def test_card_start_turns_a_stripe_error_into_a_clear_message(demo, fake_stripe, monkeypatch):
    def refuse(**kwargs):
        raise stripe_api.StripeError("boom")

    monkeypatch.setattr(stripe_api, "payment_intent_create", refuse)
    with pytest.raises(DomainError, match="could not be started"):
        payments.payment_card_start(order=make_order(demo), actor=demo["customer"])
    assert Payment.objects.count() == 0


def test_the_card_page_mounts_the_payment_element(client, demo, fake_stripe):
    order = make_order(demo)
    client.force_login(demo["customer"])
    overview = client.get(pay_url("order_pay", order)).content.decode()
    assert "not configured" not in overview
    assert pay_url("order_pay_card", order) in overview
    assert "js.stripe.com" not in overview  # only on the card page
    # A GET starts nothing: no payment until the customer presses the button.
    assert client.get(pay_url("order_pay_card", order))["Location"] == pay_url("order_pay", order)
    assert Payment.objects.count() == 0
    started = client.post(pay_url("order_pay_card", order))
    assert started["Location"] == pay_url("order_pay_card", order)
    assert Payment.objects.count() == 1
    page = client.get(pay_url("order_pay_card", order))
    assert page.status_code == 200
    html = page.content.decode()
    assert '<script src="https://js.stripe.com/v3/"></script>' in html
    assert "pk_test_offline" in html and "pi_test_1_secret_abc" in html
    # Absolute links use the configured public URL, not the request's host (issue 9, 5).
    assert settings.PORTAL_BASE_URL + pay_url("order_pay_return", order) in html


def test_the_return_page_tells_the_status(client, demo, fake_stripe):
    order = make_order(demo)
    client.force_login(demo["customer"])
    payment, _secret = payments.payment_card_start(order=order, actor=demo["customer"])
    url = pay_url("order_pay_return", order)
    query = f"?payment_intent={payment.stripe_payment_intent}&redirect_status=succeeded"
    assert 'data-state="processing"' in client.get(url + query).content.decode()
    Payment.objects.filter(pk=payment.pk).update(
        status=PaymentStatus.FAILED, failure_message="Your card was declined."
    )
    html = client.get(url).content.decode()
    assert 'data-state="failed"' in html and "Your card was declined." in html
    assert pay_url("order_pay_card", order) in html and pay_url("order_pay", order) in html
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.PAID)
    assert 'data-state="paid"' in client.get(url).content.decode()


# --- Access -----------------------------------------------------------------------------


def test_pay_pages_are_for_the_organisation_members_and_staff_only(
    client, demo, no_stripe, settings
):
    order = make_order(demo)
    login = resolve_url(settings.LOGIN_URL)
    for name in ("order_pay", "order_pay_card", "order_pay_return"):
        response = client.get(pay_url(name, order))
        assert response.status_code == 302 and response["Location"].startswith(login)
    other = get_user_model().objects.create_user("eve", "eve@example.com", "pw-eve-12345")
    Membership.objects.create(organisation=Organisation.objects.create(name="Other"), user=other)
    client.force_login(other)
    for name in ("order_pay", "order_pay_card", "order_pay_return"):
        assert client.get(pay_url(name, order)).status_code == 404
    client.force_login(demo["customer"])
    assert client.get(f"/en/pay/{order.number}x/").status_code == 404
    client.force_login(demo["sales"])  # staff
    assert client.get(pay_url("order_pay", order)).status_code == 200


# --- Bank transfer, marked paid by staff ------------------------------------------------


def test_staff_mark_a_transfer_paid_in_the_back_office(client, demo, no_stripe, eager_celery):
    order = make_order(demo)
    invoice = order.invoices.get()
    client.force_login(demo["admin"])
    changelist = reverse("admin:billing_invoice_changelist")
    action = {"action": "mark_paid_by_transfer", "_selected_action": [invoice.pk]}
    # The action first asks for the transfer's reference.
    page = client.post(changelist, action)
    assert page.status_code == 200
    assert invoice.bank_reference in page.content.decode()
    assert 'name="reference"' in page.content.decode()
    # More than is due is refused on the same page, nothing recorded.
    too_much = str(invoice.gross_total + 1)
    page = client.post(
        changelist,
        {
            **action,
            "apply": "1",
            "reference": "CMB-77",
            "amount": too_much,
            "value_date": "2026-12-02",
        },
    )
    assert page.status_code == 200 and "still due on invoice" in page.content.decode()
    assert Payment.objects.count() == 0
    # The value date is asked for (prefilled with today) and kept.
    assert 'name="value_date"' in page.content.decode()
    no_date = {**action, "apply": "1", "reference": "CMB-2026-77", "amount": invoice.gross_total}
    assert client.post(changelist, no_date).status_code == 200
    assert Payment.objects.count() == 0
    response = client.post(changelist, {**no_date, "value_date": "2026-12-02"}, follow=True)
    # The amount as the pages write it, on the document as the customer knows it (a
    # payment request on the mainland: only the tax system issues a 发票).
    assert (
        f"{money(invoice.gross_total, invoice.currency)} on payment request {invoice.number}, "
        f"which is now paid in full (order {order.number} is confirmed)"
    ) in response.content.decode()
    order.refresh_from_db()
    invoice.refresh_from_db()
    assert order.status == OrderStatus.PAID
    assert (invoice.status, invoice.paid_reference, invoice.marked_paid_by) == (
        InvoiceStatus.PAID,
        "CMB-2026-77",
        demo["admin"],
    )
    payment = Payment.objects.get()
    assert (payment.method, payment.status, payment.reference, str(payment.value_date)) == (
        PaymentMethod.BANK_TRANSFER,
        PaymentStatus.SUCCEEDED,
        "CMB-2026-77",
        "2026-12-02",
    )
    assert {r.status for r in reservations(order)} == {ReservationStatus.FIRM}
    # Marking it twice says so instead of paying twice.
    response = client.post(
        changelist,
        {
            **action,
            "apply": "1",
            "reference": "CMB-2026-78",
            "amount": str(invoice.gross_total),
            "value_date": "2026-12-02",
        },
    )
    assert "already paid" in response.content.decode()
    assert Payment.objects.count() == 1
    # The customer's page now says paid and offers no payment.
    client.force_login(demo["customer"])
    html = client.get(pay_url("order_pay", order)).content.decode()
    assert "This order is paid" in html and invoice.bank_reference not in html


def test_the_mark_paid_action_needs_one_invoice_and_the_permission(client, demo, no_stripe):
    first, second = make_order(demo, nodes=1), make_order(demo, nodes=1)
    client.force_login(demo["admin"])
    changelist = reverse("admin:billing_invoice_changelist")
    ids = [first.invoices.get().pk, second.invoices.get().pk]
    response = client.post(
        changelist, {"action": "mark_paid_by_transfer", "_selected_action": ids}, follow=True
    )
    assert "Select exactly one invoice" in response.content.decode()
    # Staff without the permission do not get the action (nor the page).
    client.force_login(demo["sales"])
    assert client.get(changelist).status_code == 403


def test_payment_and_stripe_event_admins_are_read_only(client, demo, no_stripe):
    client.force_login(demo["admin"])
    for model in ("payment", "stripeevent", "invoice"):
        assert client.get(reverse(f"admin:billing_{model}_changelist")).status_code == 200
        assert client.get(reverse(f"admin:billing_{model}_add")).status_code == 403


def test_the_deadline_shows_in_the_site_timezone(client, demo, no_stripe):
    Site.objects.filter(pk=demo["sz"].pk).update(timezone="America/New_York")
    order = make_order(demo)
    client.force_login(demo["customer"])
    html = client.get(pay_url("order_pay", order)).content.decode()
    site_time = timezone.localtime(order.payment_due_at, Site.objects.get(code="SZ").tzinfo)
    shanghai = timezone.localtime(order.payment_due_at)  # the default display zone
    assert site_time.strftime("%Y-%m-%d %H:%M") in html and "America/New_York" in html
    assert shanghai.strftime("%Y-%m-%d %H:%M") not in html


# Queries a payment changelist may run, whatever the number of rows.
CHANGELIST_QUERY_BOUND = 8


def test_payment_changelists_do_not_grow_with_rows(
    client, demo, no_stripe, django_assert_max_num_queries
):
    for i in range(4):
        order = make_order(demo, nodes=1)
        invoice = order.invoices.get()
        Payment.objects.create(
            invoice=invoice,
            method=PaymentMethod.CARD,
            currency=invoice.currency,
            amount=invoice.gross_total,
            stripe_payment_intent=f"pi_list_{i}",
        )
        webhooks.stripe_event_record(event={"id": f"evt_list_{i}", "type": "x.y", "data": {}})
    client.force_login(demo["admin"])
    for model in ("invoice", "payment", "stripeevent"):
        with django_assert_max_num_queries(CHANGELIST_QUERY_BOUND):
            response = client.get(reverse(f"admin:billing_{model}_changelist"))
        assert response.status_code == 200
        assert response.context["cl"].result_count == 4
