"""Named nodes are held from provisioning (the site's lead time before the start) to the
end of cleaning (its cleaning time after the end): nobody else can book them meanwhile."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import DoubleBooking
from inventory import selectors, services
from inventory.models import Reservation
from tests import factories

pytestmark = pytest.mark.django_db

T0 = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=10)
DAY = timedelta(days=1)


@pytest.fixture
def site_and_node(sz, h100):
    sz.lead_time_hours, sz.cleaning_hours = 24, 8
    sz.save()
    return sz, factories.node(sz, h100)


def book(node, start, end, owner="order:A", **kw):
    return services.reservation_hold(
        nodes=[node], start_at=start, end_at=end, owner_ref=owner, firm=True, **kw
    )[0]


def test_a_booking_holds_its_node_over_lead_time_and_cleaning(site_and_node):
    sz, node = site_and_node
    r = book(node, T0, T0 + 30 * DAY)
    assert (r.held_from, r.held_until) == (T0 - 24 * HOUR, T0 + 30 * DAY + 8 * HOUR)
    # The day before the rental the nodes are being provisioned: not free.
    before = selectors.free_nodes(
        site=sz, node_type=node.node_type, start_at=T0 - 3 * DAY, end_at=T0 - 12 * HOUR
    )
    assert node not in before
    # Right after the end they are being cleaned: a booking starting then is refused,
    # with the reason, and the availability search does not offer them.
    with pytest.raises(DoubleBooking, match="provisioning and cleaning"):
        book(node, T0 + 30 * DAY, T0 + 40 * DAY, owner="order:B")
    assert not selectors.availability_search(
        site=sz, node_type=node.node_type, count=1, start_at=T0 + 30 * DAY, end_at=T0 + 40 * DAY
    ).can_place
    # Once cleaning and the next lead time fit in between, they are bookable again, and
    # the earliest start the search names is exactly that.
    found = selectors.availability_search(
        site=sz, node_type=node.node_type, count=1, start_at=T0 + 30 * DAY, end_at=T0 + 40 * DAY
    )
    assert found.earliest_start == T0 + 30 * DAY + 32 * HOUR
    book(node, T0 + 30 * DAY + 32 * HOUR, T0 + 40 * DAY, owner="order:B")


def test_the_database_refuses_overlapping_held_ranges(site_and_node):
    _sz, node = site_and_node
    book(node, T0, T0 + 5 * DAY)
    with pytest.raises(IntegrityError), transaction.atomic():
        Reservation.objects.create(
            node=node,
            start_at=T0 + 5 * DAY + HOUR,
            end_at=T0 + 9 * DAY,
            held_from=T0 + 5 * DAY,  # inside the first booking's cleaning
            held_until=T0 + 9 * DAY,
            status="firm",
            owner_ref="raw",
        )


def test_a_renewal_continues_on_the_same_nodes_and_gives_cleaning_back_when_dropped(
    site_and_node,
):
    sz, node = site_and_node
    first = book(node, T0, T0 + 30 * DAY)
    assert selectors.availability_search(
        site=sz,
        node_type=node.node_type,
        count=1,
        start_at=T0 + 30 * DAY,
        end_at=T0 + 60 * DAY,
        continues="order:A",
    ).can_place
    renewal = services.reservation_hold(
        nodes=[node],
        start_at=T0 + 30 * DAY,
        end_at=T0 + 60 * DAY,
        owner_ref="quote:R",
        expires_at=T0,
        continues="order:A",
    )[0]
    first.refresh_from_db()
    assert first.held_until == first.end_at  # cleaning moves to the renewal's end
    assert renewal.held_from == renewal.start_at
    assert renewal.held_until == T0 + 60 * DAY + 8 * HOUR
    services.reservation_group_release(group=renewal.group, reason="declined")
    first.refresh_from_db()
    assert first.held_until == T0 + 30 * DAY + 8 * HOUR


HOUR = timedelta(hours=1)
