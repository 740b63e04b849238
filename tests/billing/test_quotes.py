"""The quote lifecycle: numbering, approval, holds, acceptance, revisions, expiry, links."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from accounts.models import Membership, Organisation
from billing.models import Order, OrderStatus, Quote, QuoteStatus
from billing.orders import acceptance
from billing.orders import services as orders
from billing.pricing import terms as payment_terms
from billing.pricing.periods import end_of_day, site_today
from billing.quotes import services as qs
from billing.quotes.services import lifecycle as quote_lifecycle
from core.errors import DomainError, NotEnoughCapacity
from inventory import services as inventory_services
from inventory.models import Reservation, ReservationStatus

pytestmark = pytest.mark.django_db
EGRESS_NOTE = (
    "Prepaid allowance for the term, on the first invoice; use beyond it billed monthly in arrears"
)


def make_quote(demo, *, nodes=2, discount="0", term="month", duration=1, site="sz", **kw):
    start = timezone.now().date() + timedelta(days=7)
    return qs.quote_create(
        site=demo[site],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email=kw.pop("contact_email", "li.wei@example.com"),
        term=term,
        duration=duration,
        start_date=kw.pop("start_date", start),
        items=kw.pop(
            "items",
            [qs.ItemSpec(kind="node", quantity=Decimal(nodes), node_type_id=demo["h100"].pk)],
        ),
        actor=kw.pop("actor", demo["sales"]),
        extra_discount=Decimal(discount),
        **kw,
    )


def holds_of(quote):
    return Reservation.objects.filter(group=quote.reservation_group)


def test_numbers_are_gapless_per_site_and_year(demo, monkeypatch):
    # Numbers follow the site's own calendar year (Shenzhen and Hong Kong: UTC+8).
    year = site_today(demo["sz"]).year
    a, b = make_quote(demo), make_quote(demo)
    c = make_quote(demo, site="hk")
    assert a.number == f"Q-SZ-{year}-000001"
    assert b.number == f"Q-SZ-{year}-000002"
    assert c.number == f"Q-HK-{year}-000001"
    # A creation that fails after it took its number (an add-on the price book does not
    # have is found only when pricing) gives the number back: the next one is 000003.
    taken = []
    real_next_number = quote_lifecycle.next_number
    monkeypatch.setattr(
        quote_lifecycle,
        "next_number",
        lambda **kw: taken.append(real_next_number(**kw)) or taken[-1],
    )
    unknown_addon = qs.ItemSpec(kind="addon", quantity=Decimal(1), addon_code="no-such-addon")
    with pytest.raises(DomainError, match="cannot be priced"):
        make_quote(demo, items=[unknown_addon])
    assert taken == [f"Q-SZ-{year}-000003"]  # it failed after numbering
    assert make_quote(demo).number == f"Q-SZ-{year}-000003"


def test_quote_stores_the_engine_pricing(demo):
    quote = make_quote(demo, nodes=2, term="year")
    node_line = quote.lines.get(kind="node")
    assert node_line.list_amount == Decimal("2400000.00")  # 2 × ¥100,000 × 12
    assert [a["code"] for a in node_line.adjustments] == ["h100-annual"]
    assert node_line.net == Decimal("2040000.00")  # 85% of list
    assert quote.net_total == sum(line.net for line in quote.lines.all())
    assert quote.vat_total == Decimal("122400.00")  # 6%
    assert quote.gross_total == quote.net_total + quote.vat_total
    assert quote.lines.filter(kind="free").count() == 4  # with ICP filing support


def test_send_holds_nodes_under_one_leaf_until_the_quote_expires(demo):
    quote = qs.quote_send(quote=make_quote(demo, nodes=16), actor=demo["sales"])
    holds = holds_of(quote)
    assert holds.count() == 16
    assert {h.status for h in holds} == {ReservationStatus.HOLD}
    assert {h.expires_at for h in holds} == {quote.expires_at}
    group = quote.placement["groups"][0]
    assert group["count"] == 16 and len(group["leaves"]) == 1
    assert quote.status == QuoteStatus.SENT


def test_sent_quote_is_immutable_and_a_revision_supersedes_it(demo):
    v1 = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    with pytest.raises(DomainError, match="revision"):
        qs.quote_update(
            quote=v1,
            actor=demo["sales"],
            organisation=demo["org"],
            contact_name="x",
            contact_email="x@example.com",
            term="month",
            duration=2,
            start_date=v1.start_date,
            items=qs.quote_items(v1),
            extra_discount=Decimal("0"),
            language="en",
            notes="",
            valid_until=v1.valid_until,
        )
    v2 = qs.quote_revise(quote=v1, actor=demo["sales"])
    assert (v2.number, v2.version, v2.status) == (v1.number, 2, QuoteStatus.DRAFT)
    v1.refresh_from_db()
    assert v1.status == QuoteStatus.SENT  # still open until v2 goes out
    with pytest.raises(DomainError, match="already has a revision"):
        qs.quote_revise(quote=v1, actor=demo["sales"])
    v2 = qs.quote_send(quote=v2, actor=demo["sales"])
    v1.refresh_from_db()
    assert v1.status == QuoteStatus.SUPERSEDED
    assert v1.lines.count() > 0  # the old version stays readable
    assert {h.status for h in holds_of(v1)} == {ReservationStatus.RELEASED}
    assert {h.status for h in holds_of(v2)} == {ReservationStatus.HOLD}
    with pytest.raises(DomainError, match="superseded"):
        qs.quote_revise(quote=v1, actor=demo["sales"])


def test_discount_above_the_limit_needs_a_manager(demo):
    quote = make_quote(demo, discount="0.15")
    with pytest.raises(DomainError, match="approval"):
        qs.quote_send(quote=quote, actor=demo["sales"])
    quote = qs.quote_request_approval(quote=quote, actor=demo["sales"], comment="big account")
    assert quote.status == QuoteStatus.PENDING_APPROVAL
    with pytest.raises(DomainError, match="sales manager"):
        qs.quote_approve(quote=quote, actor=demo["sales"])
    quote = qs.quote_approve(quote=quote, actor=demo["manager"], comment="ok for Q1")
    assert quote.status == QuoteStatus.APPROVED
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    assert quote.status == QuoteStatus.SENT
    history = list(quote.events.values_list("to_status", "actor__username", "reason"))
    assert ("approved", "manager", "ok for Q1") in history


def test_declined_approval_returns_to_the_requester_with_the_reason(demo):
    quote = qs.quote_request_approval(quote=make_quote(demo, discount="0.20"), actor=demo["sales"])
    with pytest.raises(DomainError, match="why"):
        qs.quote_decline_approval(quote=quote, actor=demo["manager"], comment=" ")
    quote = qs.quote_decline_approval(quote=quote, actor=demo["manager"], comment="max 12%")
    assert quote.status == QuoteStatus.DRAFT
    assert "max 12%" in quote.events.last().reason


def test_within_the_limit_approval_is_not_needed(demo):
    with pytest.raises(DomainError, match="within your limit"):
        qs.quote_request_approval(quote=make_quote(demo, discount="0.05"), actor=demo["sales"])


def test_accept_creates_the_order_and_payment_makes_the_booking_firm(demo):
    quote = qs.quote_send(quote=make_quote(demo, nodes=2), actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.ACCEPTED
    assert (quote.decided_by, quote.decided_by_name, quote.decided_ip) == (
        demo["customer"],
        "Li Wei",
        "203.0.113.9",
    )
    # The quote's holds are now the order's, kept until the payment deadline.
    holds = holds_of(quote)
    assert {h.status for h in holds} == {ReservationStatus.HOLD}
    assert {h.owner_ref for h in holds} == {f"order:{order.number}"}
    # Holds outlive the deadline by a grace period for payments confirmed at the last moment.
    assert {h.expires_at for h in holds} == {order.payment_due_at + payment_terms.PAYMENT_GRACE}
    assert order.status == OrderStatus.AWAITING_PAYMENT
    assert order.gross_total == quote.gross_total
    assert order.organisation == demo["org"]
    invoice = order.invoices.get()
    assert invoice.gross_total == quote.gross_total and invoice.due_at == order.payment_due_at
    # Paying (here by bank transfer, marked by staff) makes the booking firm.
    orders.invoice_mark_paid_by_transfer(
        invoice=invoice, reference="CMB-2026-77", actor=demo["sales"]
    )
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID
    assert {h.status for h in holds_of(quote)} == {ReservationStatus.FIRM}
    with pytest.raises(DomainError, match="Only a sent quote"):
        acceptance.quote_reject(quote=quote, user=demo["customer"], name="x", ip=None)


def test_reject_releases_the_holds(demo):
    quote = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    acceptance.quote_reject(
        quote=quote, user=None, name="Li Wei", ip="198.51.100.1", reason="too dear"
    )
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.REJECTED
    assert {h.status for h in holds_of(quote)} == {ReservationStatus.RELEASED}


def test_expiry_releases_holds_and_blocks_acceptance(demo):
    quote = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    later = quote.expires_at + timedelta(seconds=1)
    assert qs.quote_expire_due(now=later) == 1
    assert qs.quote_expire_due(now=later) == 0
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.EXPIRED
    assert {h.status for h in holds_of(quote)} == {ReservationStatus.RELEASED}
    with pytest.raises(DomainError, match="no longer be accepted"):
        acceptance.quote_accept(quote=quote, user=None, name="x", ip=None)


def test_accepting_after_the_nodes_were_taken_fails_cleanly_and_a_fresh_quote_follows(demo):
    quote = qs.quote_send(quote=make_quote(demo, nodes=2), actor=demo["sales"])
    held = list(holds_of(quote).select_related("node"))
    # Staff release the hold and someone else books one of those nodes.
    inventory_services.reservation_group_release(group=quote.reservation_group, reason="ops")
    inventory_services.reservation_hold(
        nodes=[held[0].node],
        start_at=held[0].start_at,
        end_at=held[0].end_at,
        owner_ref="order:other",
        firm=True,
    )
    with pytest.raises(qs.NodesGone):
        acceptance.quote_accept(quote=quote, user=demo["customer"], name="Li Wei", ip=None)
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.SENT
    assert not Order.objects.exists()
    fresh = acceptance.quote_refresh(quote=quote)
    assert (fresh.version, fresh.status) == (2, QuoteStatus.SENT)
    fresh_nodes = set(holds_of(fresh).values_list("node_id", flat=True))
    assert held[0].node_id not in fresh_nodes and len(fresh_nodes) == 2
    # No node is booked twice over the period.
    for node_id in fresh_nodes | {held[0].node_id}:
        assert (
            Reservation.objects.filter(
                node_id=node_id, status__in=["hold", "firm"], start_at__lt=held[0].end_at
            ).count()
            == 1
        )


def test_sending_without_enough_nodes_says_how_many_and_when(demo):
    with pytest.raises(NotEnoughCapacity, match=r"Only \d+ of 200"):
        qs.quote_send(quote=make_quote(demo, nodes=200), actor=demo["sales"])


def test_bad_input_is_refused_with_a_message(demo):
    with pytest.raises(DomainError, match="past"):
        make_quote(demo, start_date=timezone.now().date() - timedelta(days=2))
    with pytest.raises(DomainError, match="daily"):
        make_quote(demo, term="day", duration=90)
    with pytest.raises(DomainError, match="whole"):
        make_quote(
            demo,
            items=[qs.ItemSpec(kind="node", quantity=Decimal("1.5"), node_type_id=demo["h100"].pk)],
        )
    with pytest.raises(DomainError, match="email"):
        make_quote(demo, contact_email="not-an-address")


def quote_url(name, quote, lang="en"):
    with override(lang):
        return reverse(name, args=[quote.token])


def test_token_link_shows_the_quote_and_accepts(client, demo):
    quote = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    page = client.get(quote_url("quote_public", quote))
    assert page.status_code == 200
    assert quote.number in page.content.decode()
    response = client.post(
        quote_url("quote_public_accept", quote), {"name": "Li Wei"}, REMOTE_ADDR="192.0.2.7"
    )
    assert response.status_code == 302
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.ACCEPTED and quote.decided_ip == "192.0.2.7"
    # Next stop: paying the order (the pay page asks an anonymous visitor to log in).
    order = Order.objects.get(quote=quote)
    assert response["Location"] == f"/en/pay/{order.number}/"


def test_token_links_cannot_be_guessed_or_used_by_another_organisation(client, demo):
    quote = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    assert len(quote.token) >= 40
    guessed = quote.token[:-1] + ("A" if quote.token[-1] != "A" else "B")
    assert client.get(f"/en/q/{guessed}/").status_code == 404
    # A customer of another organisation, logged in, gets a 404 with the real token.
    other = get_user_model().objects.create_user("eve", "eve@example.com", "pw-eve-12345")
    Membership.objects.create(organisation=Organisation.objects.create(name="Other"), user=other)
    client.force_login(other)
    assert client.get(quote_url("quote_public", quote)).status_code == 404
    assert client.post(quote_url("quote_public_accept", quote), {"name": "Eve"}).status_code == 404
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.SENT
    # Drafts are never reachable by token.
    draft = make_quote(demo)
    client.logout()
    assert client.get(quote_url("quote_public", draft)).status_code == 404


def test_invoice_pdf_is_rendered_in_a_task_when_issued_and_again_when_paid(
    demo, django_capture_on_commit_callbacks
):
    from billing.models import InvoiceDocument
    from portal.celery import app

    quote = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            order = acceptance.quote_accept(
                quote=quote, user=demo["customer"], name="Li Wei", ip=None
            )
        invoice = order.invoices.get()
        issued = InvoiceDocument.objects.get(invoice=invoice, language=quote.language)
        assert "issued" in issued.file.name
        with django_capture_on_commit_callbacks(execute=True):
            orders.invoice_mark_paid_by_transfer(
                invoice=invoice, reference="ICBC-1", actor=demo["sales"]
            )
        paid = InvoiceDocument.objects.get(invoice=invoice, language=quote.language)
        assert "paid" in paid.file.name and paid.sha256 != issued.sha256
    finally:
        app.conf.task_always_eager = False


def test_lines_keep_their_notes_in_both_languages(demo):
    quote = make_quote(
        demo,
        items=[
            qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk),
            qs.ItemSpec(kind="addon", quantity=Decimal(5), addon_code="egress"),
        ],
    )
    egress = quote.lines.get(code="egress")
    assert (egress.note, egress.note_zh) == (
        EGRESS_NOTE,
        "整个租期的预付流量额度，随首期付款通知书收取；超出部分按月按实际用量后付",
    )
    from billing.templatetags.billing_tags import line_note

    with override("zh-hans"):
        assert (
            line_note(egress)
            == "整个租期的预付流量额度，随首期付款通知书收取；超出部分按月按实际用量后付"
        )
    assert line_note(egress) == EGRESS_NOTE


def test_an_unpaid_order_expires_and_frees_its_nodes(demo, online_payments):
    from billing.models import InvoiceStatus
    from inventory.selectors import availability_search

    quote = qs.quote_send(quote=make_quote(demo, nodes=2), actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip=None, payment_method="card"
    )
    # Card payment: the nodes are held for 30 minutes.
    assert timedelta(minutes=29) < order.payment_due_at - timezone.now() <= timedelta(minutes=30)
    held = list(holds_of(quote).values_list("node_id", flat=True))
    first = holds_of(quote).first()
    last_moment = order.payment_due_at + payment_terms.PAYMENT_GRACE
    assert orders.order_expire_unpaid(now=last_moment - timedelta(seconds=1)) == 0
    assert orders.order_expire_unpaid(now=last_moment) == 1
    assert orders.order_expire_unpaid(now=last_moment) == 0  # safe to run twice
    order.refresh_from_db()
    assert order.status == OrderStatus.EXPIRED
    assert order.invoices.get().status == InvoiceStatus.VOID
    assert {h.status for h in holds_of(quote)} == {ReservationStatus.RELEASED}
    # The same nodes can be quoted again.
    found = availability_search(
        site=demo["sz"],
        node_type=demo["h100"],
        count=2,
        start_at=first.start_at,
        end_at=first.end_at,
    )
    assert set(held) <= {c.node_id for c in found.free}


def test_only_one_version_of_a_quote_is_ever_open(demo):
    v1 = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    v2 = qs.quote_revise(quote=v1, actor=demo["sales"])
    v3 = qs.quote_revise(quote=v2, actor=demo["sales"])
    v3 = qs.quote_send(quote=v3, actor=demo["sales"])
    v1.refresh_from_db()
    v2.refresh_from_db()
    assert (v1.status, v2.status, v3.status) == ("superseded", "superseded", "sent")
    assert {h.status for h in holds_of(v1)} == {ReservationStatus.RELEASED}
    with pytest.raises(DomainError, match="no longer be accepted"):
        acceptance.quote_accept(quote=v1, user=None, name="Li Wei", ip=None)


def test_accepting_one_version_stops_the_others(demo):
    v1 = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    v2 = qs.quote_revise(quote=v1, actor=demo["sales"])
    acceptance.quote_accept(quote=v1, user=demo["customer"], name="Li Wei", ip=None)
    v2.refresh_from_db()
    assert v2.status == QuoteStatus.SUPERSEDED
    assert v2.events.last().to_status == QuoteStatus.SUPERSEDED
    with pytest.raises(DomainError):
        qs.quote_send(quote=v2, actor=demo["sales"])
    assert Order.objects.count() == 1


def test_a_quote_cannot_be_accepted_once_its_rental_has_started(demo):
    quote = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    # The hold never outlives the rental's first day either.
    first_day_end = end_of_day(site=quote.site, day=quote.start_date)
    assert quote.expires_at <= first_day_end
    Quote.objects.filter(pk=quote.pk).update(start_date=timezone.now().date() - timedelta(days=2))
    with pytest.raises(DomainError, match="ask for a fresh quote"):
        acceptance.quote_accept(quote=quote, user=None, name="Li Wei", ip=None)


def test_money_after_the_nodes_were_taken_never_marks_the_order_paid(demo, online_payments):
    quote = qs.quote_send(quote=make_quote(demo, nodes=2), actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip=None, payment_method="card"
    )
    held = list(holds_of(quote).select_related("node"))
    inventory_services.reservation_expire_holds(now=held[0].expires_at)
    inventory_services.reservation_hold(
        nodes=[held[0].node],
        start_at=held[0].start_at,
        end_at=held[0].end_at,
        owner_ref="order:someone-else",
        firm=True,
    )
    with pytest.raises(orders.NodesTaken, match="other nodes or refund"):
        orders.order_mark_paid(order=order)
    order.refresh_from_db()
    assert order.status == OrderStatus.AWAITING_PAYMENT


def test_an_accepted_quote_whose_order_lapsed_can_be_revised_and_sent_again(demo, online_payments):
    quote = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip=None, payment_method="card"
    )
    orders.order_expire_unpaid(now=order.payment_due_at + payment_terms.PAYMENT_GRACE)
    v2 = qs.quote_send(quote=qs.quote_revise(quote=quote, actor=demo["sales"]), actor=demo["sales"])
    assert (v2.version, v2.status) == (2, QuoteStatus.SENT)


@pytest.mark.parametrize("nodes", [2, 16])
def test_accepting_and_paying_take_the_same_queries_whatever_the_node_count(
    demo, nodes, django_assert_max_num_queries
):
    quote = qs.quote_send(quote=make_quote(demo, nodes=nodes), actor=demo["sales"])
    # Every status move writes its event row (quote, order, invoice, each reservation in
    # one insert) and the invoice PDF is written to the outbox, so the count is fixed
    # whatever the number of nodes. The order gets the default image and the SSH keys (3),
    # and a sales quote's order also gets its contract drafted (number, row, event, audit
    # entry, PDF job: 12 queries, also fixed). The first billing period's document reads
    # the quote's lines once and writes its own lines in one insert (2), looks up the
    # customer's credit balance (1) and writes its "invoice issued" email to the outbox (1)
    # (52 on the money branch; 54 measured after merging main).
    with django_assert_max_num_queries(54):
        order = acceptance.quote_accept(quote=quote, user=demo["customer"], name="Li Wei", ip=None)
    invoice = order.invoices.get()
    # ...and paying writes the paid invoice's PDF to the outbox and asks the gate to
    # provisioning (which waits here for the contract's signatures). Partial payments add
    # the paid-so-far sum before and after the transfer and its update (3, fixed); the
    # transfer's payment gets its creation event (1, fixed). What is left to pay counts
    # the applied credits too (1) and the payment's receipt email goes to the outbox (1)
    # (42 on the money branch; 43 measured after merging main).
    with django_assert_max_num_queries(43):
        orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="T-1", actor=demo["sales"])
    assert {h.status for h in holds_of(quote)} == {ReservationStatus.FIRM}


def test_sales_cannot_send_a_quote_the_customer_could_not_accept(demo, client, online_payments):
    """By hand, at 2026-12-10 09:00 in Shenzhen with a 48-hour lead time: nodes are ready
    12-12 09:00, so the earliest start a card payment meets is 12-13; a bank transfer
    needs a day more before that (ready 12-13 09:00): 12-14."""
    from datetime import date, datetime
    from zoneinfo import ZoneInfo

    site = demo["sz"]
    site.lead_time_hours = 48
    site.save(update_fields=["lead_time_hours"])
    now = datetime(2026, 12, 10, 9, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
    quote = make_quote(demo, start_date=date(2026, 12, 13))
    assert qs.quote_send_refusal(quote, now=now) == ""  # card, Alipay, WeChat Pay work
    # Bank transfer only (no Stripe keys): 12-13 is too soon, 12-14 is not.
    online_payments.STRIPE_SECRET_KEY = ""
    refusal = qs.quote_send_refusal(quote, now=now)
    assert "2026-12-14" in refusal and "bank transfer" in refusal
    Quote.objects.filter(pk=quote.pk).update(start_date=date(2026, 12, 14))
    quote.refresh_from_db()
    assert qs.quote_send_refusal(quote, now=now) == ""
    # A validity ending tonight leaves a transfer no time, whatever the start.
    Quote.objects.filter(pk=quote.pk).update(valid_until=now.date())
    quote.refresh_from_db()
    assert "later validity date" in qs.quote_send_refusal(quote, now=now)
    # Sending now (the real clock): refused with the reason, nothing held, still a draft;
    # the sales page says why before Send and disables it.
    today = site_today(site)
    Quote.objects.filter(pk=quote.pk).update(
        start_date=today + timedelta(days=1), valid_until=today + timedelta(days=15)
    )
    quote.refresh_from_db()
    with pytest.raises(DomainError, match="could not accept") as refused:
        qs.quote_send(quote=quote, actor=demo["sales"])
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.DRAFT and not holds_of(quote).exists()
    client.force_login(demo["sales"])
    page = client.get(reverse("sales:quote_detail", args=[quote.pk])).content.decode()
    assert refused.value.message in page.replace("&#x27;", "'")
    assert 'class="primary" disabled' in page
