"""No double booking: PostgreSQL's exclusion constraint, and the service's clear message."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.errors import DomainError, DoubleBooking, IllegalTransition
from inventory import services
from inventory.models import NodeStatus, Reservation, ReservationEvent, ReservationStatus
from tests import factories

pytestmark = pytest.mark.django_db

T0 = timezone.now().replace(microsecond=0) + timedelta(days=1)
DAY = timedelta(days=1)


@pytest.fixture
def two_nodes(sz, h100):
    return factories.node(sz, h100), factories.node(sz, h100)


def raw_insert(node, start, end, status="firm"):
    """Bypass the service: only the database stands between us and a double booking."""
    return Reservation.objects.create(
        node=node,
        start_at=start,
        end_at=end,
        held_from=start,
        held_until=end,
        status=status,
        expires_at=end if status == "hold" else None,
        owner_ref="test",
    )


def test_database_rejects_an_overlapping_reservation(two_nodes):
    assert connection.vendor == "postgresql"
    a, _ = two_nodes
    raw_insert(a, T0, T0 + 10 * DAY)
    with pytest.raises(IntegrityError, match="reservation_no_overlap"), transaction.atomic():
        raw_insert(a, T0 + 9 * DAY, T0 + 20 * DAY)
    with pytest.raises(IntegrityError, match="reservation_no_overlap"), transaction.atomic():
        raw_insert(a, T0 + 2 * DAY, T0 + 3 * DAY, status="hold")  # inside, and a hold


def test_database_allows_adjacent_ranges_and_other_nodes(two_nodes):
    a, b = two_nodes
    raw_insert(a, T0, T0 + 10 * DAY)
    raw_insert(a, T0 + 10 * DAY, T0 + 20 * DAY)  # half-open: touching is fine
    raw_insert(a, T0 - 5 * DAY, T0)
    raw_insert(b, T0, T0 + 10 * DAY)  # same dates, another node
    assert Reservation.objects.count() == 4


def test_released_reservations_do_not_block(two_nodes):
    a, _ = two_nodes
    raw_insert(a, T0, T0 + 10 * DAY, status="released")
    raw_insert(a, T0, T0 + 10 * DAY, status="expired")
    raw_insert(a, T0, T0 + 10 * DAY)
    assert Reservation.objects.filter(status="firm").count() == 1


def test_service_refuses_overlap_with_a_clear_message_before_the_database(two_nodes):
    a, b = two_nodes
    services.reservation_hold(
        nodes=[a], start_at=T0, end_at=T0 + 10 * DAY, owner_ref="order:1", firm=True
    )
    with pytest.raises(DoubleBooking) as exc:
        services.reservation_hold(
            nodes=[a, b],
            start_at=T0 + 5 * DAY,
            end_at=T0 + 15 * DAY,
            owner_ref="quote:2",
            expires_at=timezone.now() + timedelta(minutes=30),
        )
    assert a.hostname in exc.value.message
    # All or nothing: node b was not booked either.
    assert not Reservation.objects.filter(node=b).exists()


def test_service_books_all_nodes_and_records_events(two_nodes):
    a, b = two_nodes
    booked = services.reservation_hold(
        nodes=[a, b],
        start_at=T0,
        end_at=T0 + 30 * DAY,
        owner_ref="quote:Q-1",
        expires_at=timezone.now() + timedelta(minutes=30),
    )
    assert {r.node_id for r in booked} == {a.pk, b.pk}
    assert {r.status for r in booked} == {ReservationStatus.HOLD}
    assert len({r.group for r in booked}) == 1
    assert ReservationEvent.objects.filter(to_status="hold").count() == 2


def test_service_refuses_maintenance_overlap_and_unbookable_nodes(two_nodes):
    a, b = two_nodes
    services.maintenance_window_create(
        node=a, start_at=T0 + DAY, end_at=T0 + 2 * DAY, reason="firmware"
    )
    with pytest.raises(DoubleBooking, match="maintenance"):
        services.reservation_hold(
            nodes=[a], start_at=T0, end_at=T0 + 10 * DAY, owner_ref="x", firm=True
        )
    services.node_mark_faulty(node=b, reason="GPU 3 fell off the bus (XID 79)")
    with pytest.raises(DoubleBooking, match=b.hostname):
        services.reservation_hold(
            nodes=[b], start_at=T0, end_at=T0 + 10 * DAY, owner_ref="x", firm=True
        )


def test_maintenance_window_cannot_cover_a_booking(two_nodes):
    a, _ = two_nodes
    services.reservation_hold(nodes=[a], start_at=T0, end_at=T0 + 5 * DAY, owner_ref="o", firm=True)
    with pytest.raises(DoubleBooking, match=a.hostname):
        services.maintenance_window_create(
            node=a, start_at=T0 + DAY, end_at=T0 + 2 * DAY, reason="swap PSU"
        )


def test_bad_ranges_are_refused(two_nodes):
    a, _ = two_nodes
    with pytest.raises(DomainError, match="after the start"):
        services.reservation_hold(nodes=[a], start_at=T0, end_at=T0, owner_ref="o", firm=True)
    with pytest.raises(DomainError, match="time zone"):
        services.reservation_hold(
            nodes=[a],
            start_at=T0.replace(tzinfo=None),
            end_at=(T0 + DAY).replace(tzinfo=None),
            owner_ref="o",
            firm=True,
        )
    with pytest.raises(DomainError, match="expiry"):
        services.reservation_hold(nodes=[a], start_at=T0, end_at=T0 + DAY, owner_ref="o")


def test_holds_expire_and_free_the_nodes(two_nodes):
    a, _ = two_nodes
    services.reservation_hold(
        nodes=[a],
        start_at=T0,
        end_at=T0 + 10 * DAY,
        owner_ref="quote:1",
        expires_at=timezone.now() - timedelta(seconds=1),
    )
    assert services.reservation_expire_holds() == 1
    assert services.reservation_expire_holds() == 0  # safe to run twice
    assert Reservation.objects.get().status == ReservationStatus.EXPIRED
    # The node is free again for the same dates.
    services.reservation_hold(
        nodes=[a], start_at=T0, end_at=T0 + 10 * DAY, owner_ref="o", firm=True
    )


def test_confirm_turns_holds_firm_and_ended_bookings_cannot_come_back(two_nodes):
    a, b = two_nodes
    booked = services.reservation_hold(
        nodes=[a, b],
        start_at=T0,
        end_at=T0 + DAY,
        owner_ref="q",
        expires_at=timezone.now() + timedelta(hours=1),
    )
    group = booked[0].group
    firm = services.reservation_group_confirm(group=group)
    assert {r.status for r in firm} == {ReservationStatus.FIRM}
    assert {r.expires_at for r in firm} == {None}
    services.reservation_group_release(group=group, reason="customer cancelled")
    with pytest.raises(IllegalTransition, match="released"):
        services.reservation_group_confirm(group=group)


def test_nodes_keep_status_when_booked_for_the_future(two_nodes):
    a, _ = two_nodes
    services.reservation_hold(nodes=[a], start_at=T0, end_at=T0 + DAY, owner_ref="o", firm=True)
    a.refresh_from_db()
    assert a.status == NodeStatus.AVAILABLE
