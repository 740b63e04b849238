"""Shared objects of the support desk's tests: a delivered order of the demo customer
with its node, and the demo's support engineer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from billing.models import Order
from inventory.models import Node, Reservation
from provisioning.models import ProvisioningRun, RunKind, RunNode, RunStatus
from tests.billing.test_payments import make_order


def deliver(order: Order) -> Node:
    """The order as delivered an hour ago: its held node serves it."""
    start = timezone.now() - timedelta(hours=1)
    Order.objects.filter(pk=order.pk).update(start_at=start, status="ready")
    node = Reservation.objects.filter(group=order.reservation_group).first().node
    run = ProvisioningRun.objects.create(
        order=order, kind=RunKind.PROVISION, status=RunStatus.DELIVERED
    )
    RunNode.objects.create(run=run, node=node, slot=0, delivered_at=start)
    order.refresh_from_db()
    return node


@pytest.fixture
def served(demo):
    order = make_order(demo, nodes=1)
    node = deliver(order)
    return {"order": order, "node": node}


@pytest.fixture
def support(demo):
    return get_user_model().objects.get(username="support")
