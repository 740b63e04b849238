"""Gapless numbers do not serialise self-service ordering: an order takes its quote, order
and invoice numbers (row locks held to the commit) only after its nodes are placed and
held, and a refused order never takes them."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from accounts.models import Organisation
from billing.models import NumberSequence
from billing.pricing.periods import rental_period, site_today
from billing.shop.selfservice import CapacityTaken, order_self_service
from inventory.models import Node, NodeType, Reservation, Site
from inventory.services import reservation_hold
from tests.polling import wait_until

pytestmark = pytest.mark.usefixtures("online_payments")


def _start(site: Site):
    return site_today(site) + timedelta(days=10)


def _order(node_count: int):
    customer = get_user_model().objects.get(username="customer")
    site = Site.objects.get(code="HK")
    return order_self_service(
        user=customer,
        organisation=Organisation.objects.get(memberships__user=customer),
        site=site,
        node_type=NodeType.objects.get(code="h100-8x-nvlink"),
        node_count=node_count,
        card_gpu_model_id=None,
        cards_per_node=0,
        term="day",
        duration=3,
        start_date=_start(site),
        addons={},
        payment_method="card",
        ip="198.51.100.7",
    )


@contextmanager
def numbers_locked():
    """Another transaction holds the number sequences (every row, and new ones) until the
    block ends, as a concurrent order numbering its documents would."""
    locked, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute('LOCK TABLE "billing_numbersequence" IN EXCLUSIVE MODE')
                locked.set()
                release.wait(60)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(30), "the number sequences were not locked"
        yield
    finally:
        release.set()
        holder.join(30)


def _waits_for_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return bool(row) and row[0] == "Lock"


def _has_written(pid: int, table: str) -> bool:
    """The backend ``pid`` holds the lock that writing rows of ``table`` takes."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_locks WHERE pid = %s AND relation = %s::regclass"
            " AND mode = 'RowExclusiveLock'",
            [pid, table],
        )
        return cursor.fetchone() is not None


@pytest.mark.django_db(transaction=True)
def test_an_order_locks_its_numbers_only_after_its_nodes_are_held(demo):
    """While another order holds the number sequences, this one has already placed and
    held its nodes when it starts to wait for its numbers."""
    started: dict = {}
    done: dict = {}

    def order_in_its_own_connection():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                started["pid"] = cursor.fetchone()[0]
            done["order"] = _order(2)
        except Exception as exc:  # reported by the assertion below
            done["error"] = exc
        finally:
            connection.close()

    with numbers_locked():
        ordering = threading.Thread(target=order_in_its_own_connection)
        ordering.start()
        wait_until(lambda: "pid" in started or done, timeout=30, message="the order to start")
        pid = started["pid"]
        wait_until(
            lambda: done or _waits_for_a_lock(pid),
            timeout=60,
            message="the order to wait for its numbers",
        )
        assert not done, done
        assert _has_written(pid, "inventory_reservation")  # held before numbering
    ordering.join(60)
    order = done.get("order")
    assert order is not None, done
    assert order.number.startswith("O-HK-")
    assert order.quote.number.startswith("Q-HK-")
    held_for = Reservation.objects.filter(group=order.reservation_group)
    assert {r.owner_ref for r in held_for} == {f"order:{order.number}"}


@pytest.mark.django_db(transaction=True)
def test_a_refused_order_takes_no_number(demo):
    hk = Site.objects.get(code="HK")
    start_at, end_at = rental_period(site=hk, start_date=_start(hk), term="day", duration=3)
    reservation_hold(  # every Hong Kong H100 node over the period
        nodes=list(Node.objects.filter(site=hk, node_type__code="h100-8x-nvlink")),
        start_at=start_at,
        end_at=end_at,
        owner_ref="order:taken",
        firm=True,
    )
    with numbers_locked(), transaction.atomic():
        with connection.cursor() as cursor:  # waiting for a number would fail, not hang
            cursor.execute("SET LOCAL lock_timeout = '10s'")
        with pytest.raises(CapacityTaken):
            _order(2)
    assert not NumberSequence.objects.filter(kind="Q").exists()
