"""Two customers racing for the last nodes: exactly one gets them, the other is told so
with the nearest alternatives, and no node is ever booked twice."""

import io
import itertools
import threading
from datetime import datetime, time, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.utils import translation

from accounts.models import Membership, Organisation
from billing.models import Order, OrderStatus, Quote, QuoteStatus
from billing.pricing.periods import site_today
from billing.shop.selfservice import CapacityTaken, order_self_service
from core import jobs
from core.errors import NotEnoughCapacity
from inventory import selectors as inventory_selectors
from inventory import services
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    Node,
    NodeType,
    Reservation,
    ReservationStatus,
    Site,
)

pytestmark = pytest.mark.usefixtures("online_payments")


@pytest.fixture(autouse=True)
def generous_hold_limits(settings):
    """These tests race for capacity, not against the hold limits (tested in
    tests/portal/test_hold_limits.py)."""
    limit = {"unpaid_orders": 100, "held_nodes": 1000}
    settings.SELF_SERVICE_HOLD_LIMITS = {"verified": limit, "unverified": limit}


@pytest.fixture
def no_quote_emails(monkeypatch):
    """Services enqueue documents and emails after commit; record them instead of
    publishing (the broker is not part of these tests)."""
    sent = []
    monkeypatch.setattr(jobs, "enqueue_chain", sent.append)
    return sent


def _customer(name: str):
    user = get_user_model().objects.create_user(
        name, f"{name}@example.com", "race-pw-12345678", first_name=name.title()
    )
    org = Organisation.objects.create(name=f"{name.title()} Lab")
    Membership.objects.create(user=user, organisation=org, role="owner")
    return user, org


def _order(user, org, *, site, node_type, count, start, payment_method="card"):
    return order_self_service(
        user=user,
        organisation=org,
        site=site,
        node_type=node_type,
        node_count=count,
        card_gpu_model_id=None,
        cards_per_node=0,
        term="month",
        duration=1,
        start_date=start,
        addons={},
        payment_method=payment_method,
        ip="198.51.100.7",
    )


def _no_double_booking() -> None:
    by_node: dict[int, list[tuple]] = {}
    for r in Reservation.objects.filter(status__in=ACTIVE_RESERVATION_STATUSES):
        by_node.setdefault(r.node_id, []).append((r.start_at, r.end_at, r.pk))
    for node_id, spans in by_node.items():
        spans.sort()
        for (_s1, e1, a), (s2, _e2, b) in itertools.pairwise(spans):
            assert s2 >= e1, f"node {node_id}: reservations {a} and {b} overlap"


@pytest.mark.django_db(transaction=True)
def test_two_customers_racing_for_the_last_nodes(no_quote_emails):
    call_command("seed_demo", stdout=io.StringIO())
    hk = Site.objects.get(code="HK")
    a100 = NodeType.objects.get(code="a100-40g-4x")
    start = site_today(hk) + timedelta(days=5)
    at = datetime.combine(start, time.min, tzinfo=hk.tzinfo)
    nodes = list(Node.objects.filter(site=hk, node_type=a100).order_by("hostname"))
    assert len(nodes) == 8
    services.reservation_hold(  # someone else already has 5: 3 are left for the period
        nodes=nodes[:5],
        start_at=at - timedelta(days=1),
        end_at=at + timedelta(days=60),
        owner_ref="order:earlier",
        firm=True,
    )
    racers = [_customer("alice"), _customer("bob")]
    barrier = threading.Barrier(len(racers), timeout=30)
    results: dict[str, object] = {}

    def race(user, org):
        try:
            barrier.wait()
            with translation.override("en"):  # threads don't inherit the test's language
                results[user.username] = _order(
                    user, org, site=hk, node_type=a100, count=3, start=start
                )
        except Exception as exc:  # the test inspects what each one got
            results[user.username] = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=race, args=racer, name=racer[0].username) for racer in racers
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)

    orders = [r for r in results.values() if isinstance(r, Order)]
    refused = [r for r in results.values() if not isinstance(r, Order)]
    assert len(orders) == 1, results
    assert len(refused) == 1, results
    assert Order.objects.count() == 1
    order = Order.objects.get()
    assert order.pk == orders[0].pk
    assert order.status == OrderStatus.AWAITING_PAYMENT
    held = Reservation.objects.filter(group=order.reservation_group)
    assert held.count() == 3
    assert set(held.values_list("status", flat=True)) == {ReservationStatus.HOLD}
    assert set(held.values_list("node_id", flat=True)) == {n.pk for n in nodes[5:]}

    loser = refused[0]
    assert isinstance(loser, NotEnoughCapacity), loser
    assert isinstance(loser, CapacityTaken)
    assert "Nothing was booked or charged" in loser.message
    assert loser.alternatives, "the loser is offered alternatives"
    kinds = {alt.kind for alt in loser.alternatives}
    assert "site" in kinds  # Shenzhen has 32 A100 nodes free
    assert any(alt.site.code == "SZ" and alt.node_count == 3 for alt in loser.alternatives)
    # The loser's tries left nothing behind: one accepted quote, no stray draft or hold.
    assert Quote.objects.count() == 1
    assert Quote.objects.get().status == QuoteStatus.ACCEPTED
    _no_double_booking()
    # The winner's quote PDF and email, after commit; the loser's rolled back with it.
    quote_chains = [s for s in no_quote_emails if s[-1][0] == "billing.tasks.quote_email"]
    assert len(quote_chains) == 1


@pytest.mark.django_db(transaction=True)
def test_a_rival_taking_some_chosen_nodes_is_retried_on_others(no_quote_emails, monkeypatch):
    """Between the placement and the hold a rival books one of the nodes we chose: the
    hold fails (DoubleBooking), the service places again and books other nodes."""
    call_command("seed_demo", stdout=io.StringIO())
    sz = Site.objects.get(code="SZ")
    a100 = NodeType.objects.get(code="a100-40g-4x")
    start = site_today(sz) + timedelta(days=3)
    user, org = _customer("carol")
    real_search = inventory_selectors.availability_search
    stolen: list[int] = []

    def search_then_rival(**kwargs):
        found = real_search(**kwargs)
        if not stolen and found.placement is not None:
            victim = Node.objects.get(pk=found.placement.node_ids[0])
            stolen.append(victim.pk)
            done = threading.Event()

            def rival():  # another customer, on another connection, commits first
                try:
                    services.reservation_hold(
                        nodes=[victim],
                        start_at=kwargs["start_at"],
                        end_at=kwargs["end_at"],
                        owner_ref="order:rival",
                        firm=True,
                    )
                finally:
                    connection.close()
                    done.set()

            threading.Thread(target=rival).start()
            assert done.wait(30)
        return found

    monkeypatch.setattr(inventory_selectors, "availability_search", search_then_rival)
    order = _order(user, org, site=sz, node_type=a100, count=4, start=start)
    held = set(
        Reservation.objects.filter(group=order.reservation_group).values_list("node_id", flat=True)
    )
    assert len(held) == 4
    assert stolen and stolen[0] not in held
    assert Quote.objects.count() == 1  # the failed try rolled back, number and all
    _no_double_booking()


@pytest.mark.django_db(transaction=True)
def test_asking_for_more_than_is_free_is_refused_with_alternatives(no_quote_emails):
    call_command("seed_demo", stdout=io.StringIO())
    hk = Site.objects.get(code="HK")
    h100 = NodeType.objects.get(code="h100-8x-nvlink")
    user, org = _customer("dave")
    with pytest.raises(CapacityTaken) as caught:
        _order(
            user, org, site=hk, node_type=h100, count=20, start=site_today(hk) + timedelta(days=2)
        )
    kinds = {alt.kind for alt in caught.value.alternatives}
    assert "site" in kinds  # Shenzhen has enough H100 nodes
    assert not Order.objects.exists()
    assert not Quote.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_six_customers_at_once_with_room_for_all_each_get_their_nodes(no_quote_emails):
    """Six customers order 2 of Shenzhen's 32 A100 nodes at the same moment (found by the
    multi-host benchmark: some were refused "another customer has just booked the nodes"
    while nodes were free, every search picking the same best nodes). Placements of one
    site and node type take turns (``inventory.services.placement_lock``): all six get
    their order, on twelve different nodes."""
    call_command("seed_demo", stdout=io.StringIO())
    sz = Site.objects.get(code="SZ")
    a100 = NodeType.objects.get(code="a100-40g-4x")
    start = site_today(sz) + timedelta(days=5)
    racers = [_customer(f"racer{i}") for i in range(6)]
    barrier = threading.Barrier(len(racers), timeout=30)
    results: dict[str, object] = {}

    def race(user, org):
        try:
            barrier.wait()
            with translation.override("en"):
                results[user.username] = _order(
                    user, org, site=sz, node_type=a100, count=2, start=start
                )
        except Exception as exc:  # the test inspects what each one got
            results[user.username] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=racer) for racer in racers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert all(isinstance(r, Order) for r in results.values()), results
    held = Reservation.objects.filter(
        group__in=[r.reservation_group for r in results.values()],
        status__in=ACTIVE_RESERVATION_STATUSES,
    )
    assert held.values("node_id").distinct().count() == 12
    _no_double_booking()
