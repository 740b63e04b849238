"""Query counts of the API's lists are pinned: three times the rows cost no more queries
than one (no query per row), and stay under a fixed ceiling."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.webhooks import emit_event, endpoint_create
from billing.orders.selectors import order_nodes
from portal.support import services as support
from provisioning.models import HealthIncident

pytestmark = pytest.mark.django_db

CEILING = 6


def _queries(api, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = api.get(url)
    assert response.status_code == 200, response.content
    return len(captured)


def _add(demo, order, config, api, n: int) -> None:
    node = order_nodes(order)[0]
    for i in range(n):
        quote = api.post("/api/v1/quotes/", config).json()
        api.post(f"/api/v1/quotes/{quote['number']}/accept/", {"name": "Li Wei"})
        support.ticket_open(
            organisation=demo["org"], actor=demo["customer"], subject=f"T{i}", body="Slow.",
            category="network", priority="normal", language="en", order=order,
        )  # fmt: skip
        HealthIncident.objects.create(
            order=order, node=node, rule=f"rule_{i}_{n}", action="notify",
            metric="DCGM_FI_DEV_XID_ERRORS", value=79, observed_at=timezone.now(),
        )  # fmt: skip
        emit_event(demo["org"], "order.paid", {"order": order.number, "i": i})


LISTS = ["quotes", "orders", "invoices", "tickets", "health-events", "webhook-deliveries"]


def test_lists_cost_the_same_queries_for_one_row_and_for_three(demo, api, config, rented):
    order = rented[0]
    endpoint_create(
        organisation=demo["org"], url="http://127.0.0.1:9/h", event_types=["order.paid"],
        actor=None,
    )  # fmt: skip
    _add(demo, order, config, api, 1)
    one = {name: _queries(api, f"/api/v1/{name}/") for name in LISTS}
    _add(demo, order, config, api, 2)
    three = {name: _queries(api, f"/api/v1/{name}/") for name in LISTS}
    assert three == one
    assert max(three.values()) <= CEILING, three
