"""The customer dashboard: orders, quotes, invoices, members and billing details; one
order's timeline, nodes and documents; the PDFs; both languages; pinned query counts."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone, translation

from accounts.models import CustomerProfile, MemberRole, Membership, Organisation
from billing.models import InvoiceStatus, Order, OrderStatus
from billing.orders import acceptance
from billing.orders import services as order_services
from billing.quotes import services as qs
from core.models import OutboxMessage
from inventory.models import Reservation
from tests.factories import run_document_renders

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture
def finance_staff(demo):
    """A finance staff member with a full name (beside the demo data)."""
    staff = User.objects.create_user(
        "zhang.finance", "zhang@gpucloud.example", "pw-staff-12345", is_staff=True
    )
    staff.first_name, staff.last_name = "Zhangwei", "Financeperson"
    staff.save()
    return staff


def sent_quote(demo, *, nodes=1, org=None):
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=org or demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(nodes), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    return qs.quote_send(quote=quote, actor=demo["sales"])


def accepted_order(demo, *, nodes=1, user=None) -> Order:
    quote = sent_quote(demo, nodes=nodes)
    return acceptance.quote_accept(
        quote=quote, user=user or demo["customer"], name="Li Wei", ip="203.0.113.9"
    )


def url(name, *args, lang="en"):
    with translation.override(lang):
        return reverse(name, args=args)


def text(response):
    return response.content.decode()


def pdf_bytes(response):
    return b"".join(response.streaming_content)


# --- The dashboard ----------------------------------------------------------------------


def test_dashboard_lists_orders_quotes_invoices_members_and_billing_details(client, demo):
    order = accepted_order(demo)
    invoice = order.invoices.get()
    open_quote = sent_quote(demo)
    client.force_login(demo["customer"])

    page = client.get(url("dashboard"))
    assert page.status_code == 200
    body = text(page)
    # Orders: number (linked), status, site, period, total, pay-by and "Pay now".
    assert url("dashboard_order", order.number) in body
    # The status says what is still missing: this sales order's contract and its payment.
    assert "awaiting contract and payment" in body
    assert "Shenzhen" in body
    first_day = order.start_at.astimezone(demo["sz"].tzinfo).date()
    assert first_day.isoformat() in body
    assert f"¥{order.gross_total:,.2f}" in body
    assert order.payment_due_at.astimezone(demo["sz"].tzinfo).strftime("%Y-%m-%d %H:%M") in body
    assert f'href="{url("order_pay", order.number)}"' in body
    assert "Pay now" in body
    # Quotes sent to the organisation, linked to their token pages.
    assert f"{open_quote.number} v{open_quote.version}" in body
    assert url("quote_public", open_quote.token) in body
    assert url("quote_public", order.quote.token) in body
    # Invoices with their PDF.
    assert invoice.number in body
    assert url("dashboard_invoice_pdf", invoice.number) in body
    # Members and billing details, with their pages.
    assert url("accounts:members") in body
    assert "customer" in body
    org = demo["org"]
    for value in (org.legal_name, org.tax_id, org.billing_email):
        assert value in body
    assert url("accounts:organisation_settings") in body  # the customer is an owner


def test_no_pay_link_once_paid_and_no_edit_link_for_plain_members(client, demo, finance_staff):
    order = accepted_order(demo)
    order_services.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="CMB-1", actor=finance_staff
    )
    member = User.objects.create_user("wang", "wang@example.com", "pw-wang-12345")
    Membership.objects.create(user=member, organisation=demo["org"], role=MemberRole.MEMBER)
    client.force_login(member)
    body = text(client.get(url("dashboard")))
    assert order.number in body
    assert url("order_pay", order.number) not in body
    assert url("accounts:organisation_settings") not in body
    assert "Owners and billing members can change these details." in body


def test_drafts_and_other_organisations_stay_out_of_the_dashboard(client, demo):
    mine = accepted_order(demo)
    draft = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    other_org = Organisation.objects.create(name="Other Lab")
    theirs = sent_quote(demo, org=other_org)
    client.force_login(demo["customer"])
    body = text(client.get(url("dashboard")))
    assert mine.number in body
    assert draft.token not in body
    assert theirs.token not in body and theirs.number not in body


def test_gate_anonymous_unverified_and_organisation_less_users(client, demo):
    login = url("accounts:login")
    response = client.get(url("dashboard"))
    assert response.status_code == 302 and response["Location"].startswith(login)
    unverified = User.objects.create_user("new", "new@example.com", "pw-new-12345")
    CustomerProfile.objects.create(user=unverified)
    Membership.objects.create(user=unverified, organisation=demo["org"])
    client.force_login(unverified)
    response = client.get(url("dashboard"))
    assert response.status_code == 302 and response["Location"].startswith(login)
    alone = User.objects.create_user("alone", "alone@example.com", "pw-alone-12345")
    client.force_login(alone)
    assert client.get(url("dashboard")).status_code == 403


# --- One order --------------------------------------------------------------------------


def test_order_page_shows_timeline_nodes_placement_and_documents(client, demo, finance_staff):
    order = accepted_order(demo, nodes=2)
    invoice = order.invoices.get()
    order_services.invoice_mark_paid_by_transfer(
        invoice=invoice, reference="CMB-2026-9", actor=finance_staff
    )
    client.force_login(demo["customer"])

    page = client.get(url("dashboard_order", order.number))
    assert page.status_code == 200
    body = text(page)
    # The timeline: created by the customer ("you"), paid by staff (never named).
    assert str(OrderStatus.AWAITING_PAYMENT.label) in body
    assert f"{OrderStatus.AWAITING_PAYMENT.label} → <strong>{OrderStatus.PAID.label}" in body
    assert "· you" in body and "· staff" in body
    assert "Zhangwei" not in body and "Financeperson" not in body and "zhang.finance" not in body
    assert "Bank transfer CMB-2026-9." in body
    # The booked nodes, by hostname, with dates in the site's time zone; the placement.
    hostnames = list(
        Reservation.objects.filter(group=order.reservation_group).values_list(
            "node__hostname", flat=True
        )
    )
    assert len(hostnames) == 2
    for hostname in hostnames:
        assert hostname in body
    assert order.start_at.astimezone(demo["sz"].tzinfo).strftime("%Y-%m-%d %H:%M") in body
    group = order.quote.placement["groups"][0]
    # The 8-NIC H100 nodes sit in a rail-optimised scalable unit (issue 9, point 15).
    assert f"{group['node_type_name']}: 2 nodes in 1 scalable unit, 8 rail switches" in body
    assert group["fabric"] in body
    # Documents: the quote and invoice PDFs, the contract to sign; no acceptance report yet.
    assert url("dashboard_quote_pdf", order.number) in body
    assert url("dashboard_invoice_pdf", invoice.number) in body
    assert str(InvoiceStatus.PAID.label) in body
    assert body.count("Not yet available") == 1
    assert url("dashboard_contract", order.number) in body
    assert url("order_pay", order.number) not in body  # paid


def test_someone_else_in_the_organisation_is_named_and_system_events_say_system(client, demo):
    colleague = User.objects.create_user("li", "li@example.com", "pw-li-12345", first_name="Li")
    Membership.objects.create(user=colleague, organisation=demo["org"], role=MemberRole.MEMBER)
    order = accepted_order(demo, user=colleague)
    Order.objects.filter(pk=order.pk).update(payment_due_at=timezone.now() - timedelta(hours=1))
    order_services.order_expire_unpaid()
    client.force_login(demo["customer"])
    body = text(client.get(url("dashboard_order", order.number)))
    assert "· Li" in body  # a colleague, by name
    assert "· system" in body  # expired by the beat task
    assert str(OrderStatus.EXPIRED.label) in body


def test_a_former_member_is_not_named(client, demo):
    leaver = User.objects.create_user("liu", "liu@example.com", "pw-liu-12345", first_name="Liu")
    membership = Membership.objects.create(
        user=leaver, organisation=demo["org"], role=MemberRole.MEMBER
    )
    order = accepted_order(demo, user=leaver)
    membership.delete()
    client.force_login(demo["customer"])
    body = text(client.get(url("dashboard_order", order.number)))
    assert "· a former member" in body and "Liu" not in body


def test_pdfs_download_in_both_languages(client, demo):
    order = accepted_order(demo)
    invoice = order.invoices.get()
    client.force_login(demo["customer"])
    OutboxMessage.objects.all().delete()  # the acceptance's own renders, not run here
    paths = [
        url(name, number, lang=lang)
        for lang in ("en", "zh-hans")
        for name, number in (
            ("dashboard_quote_pdf", order.number),
            ("dashboard_invoice_pdf", invoice.number),
        )
    ]
    # A web request never renders: the first answer says "being prepared" and asks the
    # documents queue, whose work the reload then serves.
    reloads = []
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
        assert 'http-equiv="refresh"' in response.content.decode()
        reloads.append(re.search(r'content="3;url=([^"]+)"', response.content.decode()).group(1))
    assert not invoice.documents.exists()
    assert run_document_renders() == 4
    for reload_url in reloads:
        response = client.get(reload_url.replace("&amp;", "&"))
        assert response.status_code == 200
        assert response["Content-Type"] == "application/pdf"
        assert pdf_bytes(response).startswith(b"%PDF")
    assert set(invoice.documents.values_list("language", flat=True)) == {"en", "zh-hans"}
    assert set(order.quote.documents.values_list("language", flat=True)) == {"en", "zh-hans"}
    assert client.get(url("dashboard_invoice_pdf", "I-SZ-1999-000001")).status_code == 404
    assert client.get(url("dashboard_quote_pdf", "O-SZ-1999-000001")).status_code == 404


def test_chinese_pages_render(client, demo):
    order = accepted_order(demo)
    client.force_login(demo["customer"])
    for response in (
        client.get(url("dashboard", lang="zh-hans")),
        client.get(url("dashboard_order", order.number, lang="zh-hans")),
    ):
        assert response.status_code == 200
        body = text(response)
        assert '<html lang="zh-hans">' in body
        assert order.number in body
    assert url("dashboard", lang="zh-hans") == "/zh-hans/account/"


# --- Query counts -----------------------------------------------------------------------


def _count_queries(client, path, django_assert_max_num_queries, limit):
    with django_assert_max_num_queries(limit) as captured:
        response = client.get(path)
    assert response.status_code == 200
    return len(captured.captured_queries)


# Session, user, customer profile, membership (the gate), then the page's own reads; the
# session is saved once, on the first request (warmed up before counting).
DASHBOARD_QUERIES = 9  # + orders, their invoices, members, quotes, invoices
# + order, events with actors, invoices, reservations, member ids, the latest provisioning
# run, acceptance runs, and the gate to provisioning (contract, terms, quote's author,
# release), its open suspension, the suspension announced, its renewal, the credit notes
# and the quote's lines for the invoices over the term, the organisation's SSH keys with
# the order's choice, the customer's credit balance: constant, whatever the order.
# (22 with every branch merged: constant in the number of nodes.)
ORDER_QUERIES = 22


def test_dashboard_runs_a_fixed_number_of_queries(client, demo, django_assert_max_num_queries):
    client.force_login(demo["customer"])
    accepted_order(demo)
    sent_quote(demo)
    client.get(url("dashboard"))  # the session remembers the active organisation
    small = _count_queries(
        client, url("dashboard"), django_assert_max_num_queries, DASHBOARD_QUERIES
    )
    for _ in range(3):
        accepted_order(demo)
        sent_quote(demo)
    for i in range(4):
        user = User.objects.create_user(f"m{i}", f"m{i}@example.com", "pw-member-12345")
        Membership.objects.create(user=user, organisation=demo["org"])
    large = _count_queries(
        client, url("dashboard"), django_assert_max_num_queries, DASHBOARD_QUERIES
    )
    assert small == large == DASHBOARD_QUERIES


def test_order_page_runs_a_fixed_number_of_queries(
    client, demo, finance_staff, django_assert_max_num_queries
):
    client.force_login(demo["customer"])
    small_order = accepted_order(demo, nodes=1)
    large_order = accepted_order(demo, nodes=4)
    order_services.invoice_mark_paid_by_transfer(
        invoice=large_order.invoices.get(), reference="CMB-3", actor=finance_staff
    )
    client.get(url("dashboard"))  # the session remembers the active organisation
    small = _count_queries(
        client,
        url("dashboard_order", small_order.number),
        django_assert_max_num_queries,
        ORDER_QUERIES,
    )
    large = _count_queries(
        client,
        url("dashboard_order", large_order.number),
        django_assert_max_num_queries,
        ORDER_QUERIES,
    )
    assert small == large == ORDER_QUERIES


def test_a_mainland_order_lists_payment_requests_and_names_its_time_zone(client, demo):
    order = accepted_order(demo)
    invoice = order.invoices.get()
    assert order.site.seller.issues_fapiao  # Shenzhen: only the tax system issues a 发票
    client.force_login(demo["customer"])
    body = text(client.get(url("dashboard_order", order.number)))
    assert f"Payment request {invoice.number}" in body
    assert f"Invoice {invoice.number}" not in body
    zh = text(client.get(url("dashboard_order", order.number, lang="zh-hans")))
    assert f"付款通知书 {invoice.number}" in zh and f"发票 {invoice.number}" not in zh
    assert "Asia/Shanghai" not in zh and "北京时间" in zh
