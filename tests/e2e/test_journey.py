"""A customer's whole journey in a real browser against the live server: an anonymous
visitor gets a quote PDF in at most three clicks (counted), configures two H100 nodes for
a month, logs in to order, signs up, verifies the email and lands back on the same
configuration; accepts, pays by bank transfer; finance marks the transfer paid in the back
office; the customer sees the order paid."""

from __future__ import annotations

import re
import subprocess
from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone, translation
from playwright.sync_api import expect

from billing.models import Invoice, InvoiceStatus, Order, OrderStatus, Quote
from billing.templatetags.billing_tags import money
from inventory.models import Reservation, ReservationStatus, Site
from portal.management.commands.seed_demo import DEMO_BOOKING
from tests.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

EMAIL = "mei.lin@zhujiang-ai.example"
PASSWORD = "Gpu-Journey-2026!kx"
TRANSFER_REFERENCE = "ICBC-20260315-000123"


def _verification_path(timeout: float = 10.0) -> str:
    """The path of the link in the verification email (sent after the sign-up commits;
    its host is PORTAL_BASE_URL, not the live server's)."""

    def link() -> str | None:
        for message in mail.outbox:
            if EMAIL in message.to:
                found = re.search(r"https?://\S+/accounts/verify/\S+", message.body)
                assert found, f"No verification link in the email:\n{message.body}"
                return urlsplit(found.group(0)).path
        return None

    return wait_until(
        link,
        timeout=timeout,
        interval=0.1,
        message=lambda: f"a verification email to {EMAIL}; outbox: {mail.outbox!r}",
    )


def reverse_en(name: str, *args: object) -> str:
    with translation.override("en"):
        return reverse(name, args=args)


def test_sign_up_configure_pay_by_transfer_and_see_the_order_paid(pages, settle_htmx, celery_sent):
    call_command("seed_demo", verbosity=0)
    shenzhen = Site.objects.get(code="SZ")
    start = datetime.now(ZoneInfo(shenzhen.timezone)).date() + timedelta(days=7)
    customer = pages.new("customer")

    # --- An anonymous visitor gets a quote PDF in at most three clicks --------------------
    customer.goto("/en/")
    expect(customer.locator("h1")).to_have_text("GPU servers and clusters")
    clicks = 0
    customer.get_by_role("link", name="Configure and get an instant quote").first.click()
    clicks += 1
    expect(customer.locator("h1")).to_have_text("Configure your servers or cluster")
    settle_htmx(customer)
    # The documents queue renders it (here run in place by celery_sent, as a worker
    # would, so it is often ready at once); the page polls until the file is there and
    # then downloads it by itself: this click is the last one.
    with customer.expect_download(timeout=20_000) as downloaded:
        customer.get_by_role("link", name="Quote PDF (no account needed)").click()
        clicks += 1
        expect(customer.locator("h1")).to_have_text("Your quote PDF")
    expect(customer.get_by_role("link", name="Download the quote PDF")).to_be_visible()
    assert clicks <= 3
    pdf = downloaded.value.path()
    text = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout
    assert "ESTIMATE" in text and "Non-binding estimate" in " ".join(text.split())
    assert "Included at no charge" in text
    assert not Order.objects.exists() and not Quote.objects.exists()
    assert not Reservation.objects.exclude(owner_ref=DEMO_BOOKING).exists()
    pages.assert_no_server_errors()

    # --- Configure 2 × H100 in Shenzhen, monthly, one month, from a week ahead ------------
    customer.get_by_role("link", name="Back to the configuration").click()
    expect(customer.locator("h1")).to_have_text("Configure your servers or cluster")
    settle_htmx(customer)
    form = customer.locator("#configure form.configure-form")

    def choose(label: str, option: str) -> None:
        select = form.get_by_label(label, exact=True)
        if select.locator("option:checked").inner_text().strip() != option:
            select.select_option(label=option)
            settle_htmx(customer)
        expect(form.get_by_label(label, exact=True).locator("option:checked")).to_have_text(option)

    def enter(label: str, value: str) -> None:
        box = form.get_by_label(label, exact=True)
        if box.input_value() != value:
            box.fill(value)
            box.press("Tab")  # leave the field, as a person does: "change"
            settle_htmx(customer)
        expect(form.get_by_label(label, exact=True)).to_have_value(value)

    choose("Data centre", "Shenzhen")
    choose("Node type", "H100 8-GPU NVLink")
    enter("Nodes", "2")
    choose("Term", "monthly")
    enter("Duration", "1")
    enter("Start date", start.isoformat())

    quote = customer.locator("#instant-quote")
    expect(quote.locator(".summary")).to_contain_text("2 × H100 8-GPU NVLink in Shenzhen")
    expect(quote.locator(".summary")).to_contain_text(f"from {start.isoformat()} to ")
    expect(quote.locator(".available")).to_contain_text("free for the whole period")
    configured = customer.url
    pages.assert_no_server_errors()

    # --- "Log in to order" → sign up → verify → back on the same configuration ------------
    quote.get_by_role("link", name="Log in to order").click()
    expect(customer.locator("h1")).to_have_text("Log in")
    customer.locator("main").get_by_role("link", name="Sign up", exact=True).click()
    expect(customer.locator("h1")).to_have_text("Sign up")
    signup = customer.locator("main form")
    signup.locator("[name=email]").fill(EMAIL)
    signup.locator("[name=full_name]").fill("Mei Lin")
    signup.locator("[name=company_name]").fill("Zhujiang AI Lab")
    signup.locator("[name=password1]").fill(PASSWORD)
    signup.locator("[name=password2]").fill(PASSWORD)
    customer.get_by_role("button", name="Create the account").click()
    expect(customer.locator("ul.messages")).to_contain_text(
        f"We sent a link to {EMAIL} to verify it."
    )
    customer.goto(_verification_path())
    expect(customer.locator("ul.messages")).to_contain_text("your email address is verified")
    expect(customer.locator("header .who")).to_have_text(EMAIL)
    expect(customer.locator("h1")).to_have_text("Configure your servers or cluster")
    assert urlsplit(customer.url).path == urlsplit(configured).path
    # The same configuration (the page's pushed URL also lists the empty fields).
    assert parse_qs(urlsplit(customer.url).query) == parse_qs(urlsplit(configured).query)
    quote = customer.locator("#instant-quote")
    expect(quote.locator(".summary")).to_contain_text("2 × H100 8-GPU NVLink in Shenzhen")
    expect(quote.locator(".summary")).to_contain_text(f"from {start.isoformat()} to ")
    accept = quote.get_by_role("button", name=re.compile(r"^Accept and hold the nodes \("))
    expect(accept).to_be_visible()
    quoted_total = re.search(r"\((.+)\)", accept.inner_text()).group(1)
    pages.assert_no_server_errors()

    # --- Accept, paying by bank transfer ----------------------------------------------------
    quote.get_by_label("bank transfer").check()
    accept.click()
    expect(customer.locator("h1")).to_contain_text("Pay order")
    order = Order.objects.get(organisation__name="Zhujiang AI Lab")
    invoice = Invoice.objects.get(order=order)
    assert order.status == OrderStatus.AWAITING_PAYMENT
    # Bank transfer holds the nodes for days (until the quote's validity ends), a card
    # for 30 minutes: the deadline shows which method the order was placed with.
    assert order.payment_due_at > timezone.now() + timedelta(days=1)
    assert customer.url.endswith(reverse_en("order_pay", order.number))
    amount = money(invoice.gross_total, invoice.currency)
    assert amount == quoted_total, (amount, quoted_total)

    summary = customer.locator("main dl.specs").first
    expect(summary).to_contain_text(order.number)
    # A short self-service order: the standard terms (not a contract) and the payment wait.
    expect(summary.locator(".status")).to_have_text("awaiting terms and payment")
    transfer = customer.locator("#pay-transfer")
    expect(transfer).to_contain_text(invoice.bank_reference)
    expect(transfer).to_contain_text(amount)
    expect(transfer.locator("strong.code")).to_have_text(invoice.bank_reference)
    assert set(
        Reservation.objects.filter(group=order.reservation_group).values_list("status", flat=True)
    ) == {ReservationStatus.HOLD}
    pages.assert_no_server_errors()

    # --- Finance marks the transfer paid in the back office ---------------------------------
    finance = pages.new("finance")
    finance.goto("/en/admin/")
    finance.get_by_label("Username").fill("finance")
    finance.get_by_label("Password").fill("finance-demo-2026")
    finance.get_by_role("button", name="Log in").click()
    expect(finance.locator("#user-tools")).to_contain_text("finance")
    finance.get_by_role("link", name="Invoices", exact=True).click()
    finance.locator("#searchbar").fill(invoice.bank_reference)
    finance.locator("#changelist-search").get_by_role("button", name="Search").click()
    row = finance.locator("#result_list tbody tr").filter(has_text=invoice.number)
    expect(row).to_have_count(1)
    row.locator("input.action-select").check()
    finance.locator("select[name=action]").select_option(label="Mark paid by bank transfer…")
    finance.get_by_role("button", name="Go").click()
    expect(finance.locator("#content")).to_contain_text(invoice.bank_reference)
    expect(finance.get_by_label("Amount received")).to_have_value(str(invoice.gross_total))
    finance.get_by_label("Transfer reference").fill(TRANSFER_REFERENCE)
    finance.get_by_role("button", name="Mark paid").click()
    expect(finance.locator("ul.messagelist")).to_contain_text(
        f"{money(invoice.gross_total, invoice.currency)} on payment request {invoice.number}, "
        "which is now paid in full "
        f"(order {order.number} is confirmed)"
    )
    pages.assert_no_server_errors()

    # --- The customer sees the order paid ---------------------------------------------------
    customer.reload()
    # Paid: only the standard terms are missing now, and the status says so.
    expect(customer.locator("main dl.specs").first.locator(".status")).to_have_text(
        "paid, awaiting terms"
    )
    expect(customer.locator("main")).to_contain_text("This order is paid.")
    # ...and on the order's own page in their dashboard.
    order_page = reverse_en("dashboard_order", order.number)
    customer.get_by_role("link", name="My account", exact=True).click()
    customer.get_by_role("link", name=order.number, exact=True).first.click()
    assert customer.url.endswith(order_page)
    expect(customer.locator("h1 .status")).to_have_text("paid, awaiting terms")
    # Paid, but this short order's standard terms are not accepted yet: the page says so,
    # and provisioning waits for the checkbox.
    expect(customer.locator("#gate")).to_contain_text("the standard terms")
    customer.get_by_label(
        "I accept the standard terms of service on behalf of my organisation."
    ).check()
    customer.get_by_label("Full name").fill("Li Wei")
    customer.get_by_role("button", name="Accept the terms").click()
    expect(customer.locator("#gate")).to_have_count(0)
    expect(customer.locator("h1 .status")).to_have_text("paid")
    expect(customer.locator("#documents")).to_contain_text("Standard terms")
    pages.assert_no_server_errors()

    order.refresh_from_db()
    invoice.refresh_from_db()
    assert order.status == OrderStatus.PAID
    assert order.paid_at is not None
    assert invoice.status == InvoiceStatus.PAID
    assert invoice.paid_reference == TRANSFER_REFERENCE
    reservations = Reservation.objects.filter(group=order.reservation_group)
    assert reservations.count() == 2
    assert set(reservations.values_list("status", flat=True)) == {ReservationStatus.FIRM}
    # Paid: provisioning is enqueued once the payment commits.
    provisioning = [t for t in celery_sent if t.name == "provisioning.tasks.provisioning_start"]
    assert [t.args for t in provisioning] == [[order.pk]], celery_sent
