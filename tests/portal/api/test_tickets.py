"""Support tickets through the API, as on the support pages: opened about an order's
node with its clocks running, the conversation without support's internal notes, a
reply that reopens a resolved ticket, the page's refusals as problem details, and none
of it for another organisation's key or a key without the support scope."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from portal.support import services
from portal.support.models import Ticket
from tests.portal.api.conftest import ApiClient, make_key
from tests.support.conftest import served  # noqa: F401 - a delivered order and its node

pytestmark = pytest.mark.django_db


@pytest.fixture
def support_user(demo):
    return get_user_model().objects.get(username="support")


def test_a_ticket_about_a_node_runs_its_clocks_and_hides_internal_notes(
    demo,
    api,
    other_api,
    served,  # noqa: F811
    support_user,
):
    order, node = served["order"], served["node"]
    opened = api.post(
        "/api/v1/tickets/",
        {
            "subject": "GPU 5 lost",
            "body": "nvidia-smi shows GPU 5 as lost; the job stopped.",
            "category": "hardware",
            "priority": "urgent",
            "order": order.number,
            "node": node.hostname,
        },
    )
    assert opened.status_code == 201, opened.content
    ticket = opened.json()
    assert ticket["reference"] == f"T-{ticket['id']:06d}" and ticket["status"] == "open"
    assert (ticket["order"], ticket["node"]) == (order.number, node.hostname)
    assert {c["kind"]: c["state"] for c in ticket["clocks"]} == {
        "response": "running",
        "resolution": "running",
    }
    assert ticket["messages"][0]["body"].startswith("nvidia-smi") and ticket["history"]
    row = Ticket.objects.get(pk=ticket["id"])
    assert row.organisation == demo["org"] and row.opened_by == demo["customer"]
    # Support answers, writes an internal note and resolves it.
    services.ticket_note(ticket=row, actor=support_user, body="Internal: RMA the GPU.")
    services.ticket_reply(ticket=row, actor=support_user, body="Swapping the node.", staff=True)
    services.ticket_resolve(ticket=row, actor=support_user, resolution="Node replaced.")
    seen = api.get(f"/api/v1/tickets/{row.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    bodies = [m["body"] for m in seen["messages"]]
    assert bodies[1:] == ["Swapping the node.", "Node replaced."]
    assert all("RMA" not in str(part) for part in (seen["messages"], seen["history"]))
    assert seen["messages"][1]["author"] == "支持" and seen["status"] == "resolved"
    assert {c["kind"]: c["state"] for c in seen["clocks"]}["response"] == "met"
    # The customer's reply reopens it.
    reply = api.post(f"/api/v1/tickets/{row.pk}/replies/", {"body": "It failed again."})
    assert reply.status_code == 201 and reply.json()["status"] == "open"
    # Another organisation's key: nothing listed, nothing read or answered.
    assert other_api.get("/api/v1/tickets/").json()["results"] == []
    assert other_api.get(f"/api/v1/tickets/{row.pk}/").status_code == 404
    assert other_api.post(f"/api/v1/tickets/{row.pk}/replies/", {"body": "x"}).status_code == 404
    assert [t["id"] for t in api.get("/api/v1/tickets/").json()["results"]] == [row.pk]


def test_the_pages_refusals_are_problem_details(demo, api, served, other_org):  # noqa: F811
    order = served["order"]
    base = {"subject": "Slow", "body": "All-reduce is slow.", "category": "network"}
    no_order = api.post("/api/v1/tickets/", {**base, "node": served["node"].hostname})
    assert no_order.status_code == 400 and no_order.json()["errors"][0]["field"] == "node"
    not_its = api.post("/api/v1/tickets/", {**base, "order": order.number, "node": "sz-x-999"})
    assert not_its.status_code == 400 and not_its.json()["errors"][0]["field"] == "node"
    blank = api.post("/api/v1/tickets/", {**base, "subject": ""}, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert blank.status_code == 400 and blank.json()["errors"][0]["field"] == "subject"
    org, user = other_org
    theirs = ApiClient(make_key(org, user).secret)
    assert theirs.post("/api/v1/tickets/", {**base, "order": order.number}).status_code == 404
    reader = ApiClient(make_key(demo["org"], demo["customer"], {"support": "read"}).secret)
    refused = reader.post("/api/v1/tickets/", base)
    assert refused.status_code == 403 and refused.json()["code"] == "insufficient_scope"
    assert not Ticket.objects.exists()


def test_a_gpu_serial_while_monitoring_is_down_is_a_field_error_as_on_the_page(
    demo,
    api,
    served,  # noqa: F811
    settings,
):
    settings.PORTAL_PROMETHEUS_URL = "http://127.0.0.1:9"  # nothing listens there
    base = {"subject": "GPU errors", "body": "ECC", "category": "hardware"}
    answer = api.post(
        "/api/v1/tickets/", {**base, "gpu_serial": "1650123456789"}, HTTP_ACCEPT_LANGUAGE="en"
    )
    assert answer.status_code == 400
    [error] = answer.json()["errors"]
    assert error["field"] == "gpu_serial"
    assert error["message"].startswith("Monitoring does not answer right now")
    assert not Ticket.objects.exists()
