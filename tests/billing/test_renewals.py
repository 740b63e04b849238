"""Issue 13, point 7: renewals. Before an order ends, a renewal quote for the same nodes,
checked against the calendar: free nodes are held for the customer until the quote
expires; nodes booked by someone else are replaced by the nearest placement and the quote
says what changes; an organisation may renew automatically. Run twice, the job makes
nothing twice; another organisation gets 404."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.urls import reverse

from accounts.forms import OrganisationForm
from accounts.models import MemberRole, Membership, Organisation
from billing.models import Contract, Order, Quote, QuoteStatus, Renewal
from billing.orders.selectors import order_nodes
from billing.shop import renewals
from inventory import services as inventory_services
from inventory.models import Node, Reservation, ReservationStatus
from inventory.selectors import availability_search, free_nodes
from tests.billing.test_dunning import make_order, run_outbox

pytestmark = pytest.mark.django_db

EMAIL = "billing.tasks.renewal_email"


@pytest.fixture(autouse=True)
def window(settings):
    settings.PORTAL_RENEWAL_DAYS = 60  # the demo orders start a week ahead for a month


def held(quote) -> list[Reservation]:
    return list(Reservation.objects.filter(group=quote.reservation_group).select_related("node"))


def test_run_twice_one_renewal_quote_and_one_hold_set_on_the_same_nodes(demo):
    order = make_order(demo, nodes=2, duration=1)
    current = order_nodes(order)
    hosts = sorted(n.hostname for n in current)
    # A decoy: another leaf with exactly two free nodes after the end is what a fresh
    # topology-aware placement would choose (best fit); the renewal keeps the customer's.
    after = (order.end_at, order.end_at + timedelta(days=40))
    free = list(
        free_nodes(site=order.site, node_type=demo["h100"], start_at=after[0], end_at=after[1])
        .exclude(leaf_switch=current[0].leaf_switch)
        .order_by("leaf_switch__name", "hostname")
    )
    decoy_leaf = free[0].leaf_switch
    on_leaf = [n for n in free if n.leaf_switch == decoy_leaf]
    assert len(on_leaf) > 2
    inventory_services.reservation_hold(
        nodes=on_leaf[2:], start_at=after[0], end_at=after[1], owner_ref="order:other", firm=True
    )
    fresh = availability_search(
        site=order.site,
        node_type=demo["h100"],
        count=2,
        start_at=after[0],
        end_at=order.end_at + (order.end_at - order.start_at),
    )
    assert sorted(c.hostname for c in fresh.placement.nodes) != hosts
    assert renewals.renewals_offer().offered == 1
    assert renewals.renewals_offer().offered == 0
    renewal = Renewal.objects.get()
    quote = renewal.quote
    assert renewal.order == order and quote.status == QuoteStatus.SENT
    assert (quote.term, quote.duration, quote.organisation) == ("month", 1, demo["org"])
    assert quote.start_date == order.end_at.astimezone(order.site.tzinfo).date()
    assert renewal.same_nodes and sorted(renewal.kept) == hosts and not renewal.offered
    # The same nodes, held for this customer from the end until the quote expires.
    rows = held(quote)
    assert sorted(r.node.hostname for r in rows) == hosts
    assert {r.status for r in rows} == {ReservationStatus.HOLD}
    assert {r.start_at for r in rows} == {order.end_at}
    assert {r.expires_at for r in rows} == {quote.expires_at}
    # Run twice: one renewal quote, one set of holds.
    assert Quote.objects.count() == 2
    assert Reservation.objects.filter(owner_ref__startswith="quote:").count() == 2
    assert Order.objects.count() == 1  # nothing accepted on the customer's behalf
    # Emailed once, in the customer's language; seen on the order page and its own page.
    run_outbox(EMAIL)
    run_outbox(EMAIL)
    offers = [m for m in mail.outbox if m.subject == f"Renew order {order.number}"]
    assert len(offers) == 1
    body = " ".join(offers[0].body.split())
    assert quote.number in body and "same nodes" in body and "held for you" in body
    client = Client()
    client.force_login(demo["customer"])
    page = client.get(reverse("dashboard_order", args=[order.number])).content.decode()
    assert "the same nodes are held for you" in page
    page = client.get(reverse("dashboard_order_renewal", args=[order.number]))
    assert page.status_code == 200
    assert all(h in page.content.decode() for h in hosts)
    # Tenancy: another organisation's member gets 404 on the renewal and suspension pages.
    other = Organisation.objects.create(name="Other Lab", legal_name="Other Lab Ltd.")
    eve = get_user_model().objects.create_user("eve", "eve@other.example", "pw-eve-12345")
    Membership.objects.create(user=eve, organisation=other, role=MemberRole.OWNER)
    stranger = Client()
    stranger.force_login(eve)
    for name in ("dashboard_order_renewal", "dashboard_order_suspension"):
        assert stranger.get(reverse(name, args=[order.number])).status_code == 404
    assert quote.token not in stranger.get(reverse("dashboard")).content.decode()


def test_a_node_booked_after_the_end_is_replaced_by_the_nearest_placement(demo):
    order = make_order(demo, nodes=2, duration=1)
    nodes = order_nodes(order)
    taken, kept = nodes[0], nodes[1]
    inventory_services.reservation_hold(
        nodes=[taken],
        start_at=order.end_at + timedelta(days=2),
        end_at=order.end_at + timedelta(days=9),
        owner_ref="order:someone-else",
        firm=True,
    )
    renewals.renewals_offer()
    renewal = Renewal.objects.get()
    assert renewal.kept == [kept.hostname]
    assert renewal.replaced == [taken.hostname]
    assert len(renewal.offered) == 1 and renewal.offered[0] not in {taken.hostname, kept.hostname}
    # The nearest placement: the replacement sits under the kept node's leaf switch.
    assert Node.objects.get(hostname=renewal.offered[0]).leaf_switch == kept.leaf_switch
    assert not renewal.same_nodes
    quote = renewal.quote
    assert sorted(r.node.hostname for r in held(quote)) == sorted(
        [kept.hostname, renewal.offered[0]]
    )
    # The quote (its PDF's notes) and the email say what changes.
    assert taken.hostname in quote.notes and renewal.offered[0] in quote.notes
    assert "Offered instead" in quote.notes
    run_outbox(EMAIL)
    body = " ".join(mail.outbox[-1].body.split())
    assert f"No longer free: {taken.hostname}" in body
    assert f"Offered instead: {renewal.offered[0]}" in body


def test_auto_renewal_accepts_the_renewal_and_the_contract_path_follows(demo):
    # The owner turns it on in the organisation's settings.
    org = demo["org"]
    owner = Client()
    owner.force_login(demo["customer"])
    data = {k: v for k, v in OrganisationForm.for_organisation(org).initial.items() if v}
    response = owner.post(reverse("accounts:organisation_settings"), {**data, "auto_renew": "on"})
    assert response.status_code == 302, response.content.decode()[:2000]
    org.refresh_from_db()
    assert org.auto_renew
    order = make_order(demo, nodes=1, duration=1)
    renewals.renewals_offer()
    renewals.renewals_offer()
    renewal = Renewal.objects.get()
    assert renewal.auto_accepted
    quote = renewal.quote
    quote.refresh_from_db()
    assert quote.status == QuoteStatus.ACCEPTED
    new_order = Order.objects.get(quote=quote)
    assert new_order.start_at == order.end_at
    assert new_order.invoices.count() == 1
    # A sales quote's renewal is signed like the original: a contract is drafted.
    assert Contract.objects.filter(order=new_order).count() == 1
    assert sorted(n.hostname for n in order_nodes(new_order)) == sorted(
        n.hostname for n in order_nodes(order)
    )
    run_outbox(EMAIL)
    assert [m.subject for m in mail.outbox if "renewed" in m.subject] == [
        f"Order {order.number} is renewed"
    ]


def test_a_renewal_keeps_the_approved_discount_and_says_nothing_else_changes(demo):
    """Issue 24, point 6: the order was sold at a manager-approved 12 % (above the sales
    limit); its renewal keeps 12 % (2 nodes × 100,000 × 88 % = 176,000.00 net), not the
    salesperson's own limit."""
    from decimal import Decimal

    from billing.orders import acceptance
    from billing.orders.services import order_mark_paid
    from billing.quotes import services as qs
    from billing.quotes.services import approvals
    from tests import factories

    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(2), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0.12"),
        language="en",
    )
    approvals.quote_request_approval(quote=quote, actor=demo["sales"])
    approvals.quote_approve(quote=quote, actor=demo["manager"])
    quote = qs.quote_send(quote=Quote.objects.get(pk=quote.pk), actor=demo["sales"])
    assert quote.net_total == Decimal("176000.00")
    order = acceptance.quote_accept(quote=quote, user=demo["customer"], name="Li", ip="203.0.113.9")
    factories.contract_signed_shortcut(order)
    order, _ = order_mark_paid(order=order)
    renewal = renewals.renewal_offer(order_id=order.pk)
    assert renewal is not None and renewal.quote is not None
    again = renewal.quote
    assert again.extra_discount == Decimal("0.12")
    assert again.net_total == Decimal("176000.00")  # was 180,000.00 at the 10 % limit
    assert again.status == QuoteStatus.SENT
    assert "Same prices and discount as the order." in again.notes
    assert "carries over" in again.events.get(to_status=QuoteStatus.APPROVED).reason
