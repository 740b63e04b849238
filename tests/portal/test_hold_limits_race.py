"""Issue 25, point 1: hold limits hold against parallel requests. Accepts sent at once
by one organisation are checked one after the other under the organisation's row lock
(``billing.shop.selfservice.organisation_lock``), with real threads on PostgreSQL."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import translation

from accounts.models import Membership, Organisation
from billing.models import Order, OrderStatus
from billing.pricing.periods import site_today
from billing.shop.selfservice import HoldLimitReached, order_self_service
from core import jobs
from inventory.models import Reservation, ReservationStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("online_payments")]

PARALLEL = 5


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    """Documents and emails are enqueued after commit; the broker is not under test."""
    monkeypatch.setattr(jobs, "enqueue_chain", lambda *a, **k: None)


def _new_account(name: str) -> tuple:
    """A fresh sign-up: no legal name or tax ID on file (the unverified limits)."""
    user = get_user_model().objects.create_user(
        name, f"{name}@example.com", "limit-pw-12345678", first_name=name.title()
    )
    org = Organisation.objects.create(name=f"{name.title()} Lab")
    Membership.objects.create(user=user, organisation=org, role="owner")
    return user, org


def _accept_at_once(demo, user, org, *, nodes: int) -> list[object]:
    """``PARALLEL`` accepts released together, each with its own idempotency key."""
    start = site_today(demo["sz"]) + timedelta(days=7)
    barrier = threading.Barrier(PARALLEL, timeout=30)
    results: list[object] = []

    def accept() -> None:
        try:
            barrier.wait()
            with translation.override("en"):
                results.append(
                    order_self_service(
                        user=user,
                        organisation=org,
                        site=demo["sz"],
                        node_type=demo["h100"],
                        node_count=nodes,
                        card_gpu_model_id=None,
                        cards_per_node=0,
                        term="month",
                        duration=1,
                        start_date=start,
                        addons={},
                        payment_method="card",
                        ip="198.51.100.9",
                        idempotency_key=uuid.uuid4().hex,
                    )
                )
        except Exception as exc:  # the test reads what each request got
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=accept) for _ in range(PARALLEL)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert not any(t.is_alive() for t in threads)
    return results


def _held(org) -> int:
    groups = Order.objects.filter(organisation=org, status=OrderStatus.AWAITING_PAYMENT).values(
        "reservation_group"
    )
    return Reservation.objects.filter(group__in=groups, status=ReservationStatus.HOLD).count()


def test_parallel_accepts_never_beat_the_hold_limits(demo, settings):
    # An unverified account: at most 1 unpaid order and 8 held nodes.
    user, org = _new_account("rusher")
    results = _accept_at_once(demo, user, org, nodes=2)
    orders = [r for r in results if isinstance(r, Order)]
    refused = [r for r in results if isinstance(r, HoldLimitReached)]
    assert len(orders) == 1, results
    assert len(refused) == PARALLEL - 1, results
    assert "already has 1 unpaid order" in refused[0].message
    assert Order.objects.filter(organisation=org).count() == 1
    assert _held(org) == 2

    # The node limit too: 4 nodes at most, five accepts of 2 nodes each → exactly two.
    settings.SELF_SERVICE_HOLD_LIMITS = {
        key: {"unpaid_orders": 100, "held_nodes": 4} for key in ("verified", "unverified")
    }
    user, org = _new_account("hoarder")
    results = _accept_at_once(demo, user, org, nodes=2)
    orders = [r for r in results if isinstance(r, Order)]
    refused = [r for r in results if isinstance(r, HoldLimitReached)]
    assert len(orders) == 2, results
    assert len(refused) == PARALLEL - 2, results
    assert "at most 4 nodes" in refused[0].message
    assert _held(org) == 4
