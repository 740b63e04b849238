"""A ticket about a GPU by its serial, on the support page and through the API, against a
real Prometheus holding two organisations' series (the panel's backfilled fixture): both
go through ``portal.support.selectors.ticket_target_resolve`` and answer alike. The
customer's own serial finds its order, node and index; another organisation's serial is
answered exactly as a serial nobody has (its node and order named nowhere); a serial of
another of the customer's orders than the one chosen is refused, and nothing is opened."""

from __future__ import annotations

import re

import pytest
from django.utils import translation
from django.utils.translation import gettext

from portal.support import selectors
from portal.support.models import Ticket
from tests.billing.test_payments import make_order
from tests.integration.test_monitoring_panel import backfilled, two_orgs  # noqa: F401
from tests.portal.api.conftest import ApiClient, make_key

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

NOT_FOUND = "No GPU with serial %(serial)s reports from your organisation's servers."
FORM = {"category": "hardware", "priority": "high", "subject": "GPU 0", "body": "ECC errors"}


def _page_without(answer, serial: str) -> str:
    """The page's answer with the serial and the CSRF tokens taken out (the rest must not
    differ)."""
    assert answer.status_code == 200
    html = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+', r"\1", answer.content.decode())
    return html.replace(serial, "SERIAL")


def test_only_the_organisations_own_serial_resolves_on_the_page_and_in_the_api(
    backfilled,  # noqa: F811
    client,
    demo,
):
    mine, theirs, a, b = (backfilled[k] for k in ("mine", "theirs", "a", "b"))
    own, foreign, unknown = f"SER-{a.hostname}", f"SER-{b.hostname}", "SER-nobody-has-it"
    org = demo["org"]
    target = selectors.ticket_target_resolve(
        organisation=org, order=None, node=None, gpu_serial=f"  {own} "
    )
    assert target == selectors.TicketTarget(order=mine, node=a, gpu_serial=own, gpu_index="0")
    with pytest.raises(selectors.TicketTargetInvalid) as refused:
        selectors.ticket_target_resolve(organisation=org, order=None, node=None, gpu_serial=foreign)
    assert refused.value.field == "gpu_serial"
    assert refused.value.message == NOT_FOUND % {"serial": foreign}

    # The page: the other organisation's serial reads as one nobody has.
    client.force_login(demo["customer"])
    new = "/en/account/support/new"
    theirs_page = client.post(new, {**FORM, "gpu_serial": foreign})
    html = theirs_page.content.decode()
    assert NOT_FOUND % {"serial": foreign} in html.replace("&#x27;", "'")
    assert b.hostname not in html.replace(foreign, "") and theirs.number not in html
    nobody_page = client.post(new, {**FORM, "gpu_serial": unknown})
    assert _page_without(theirs_page, foreign) == _page_without(nobody_page, unknown)

    # The API: the same field error, in the caller's language.
    api = ApiClient(make_key(org, demo["customer"]).secret, HTTP_ACCEPT_LANGUAGE="en")
    answers = {}
    for serial in (foreign, unknown):
        answer = api.post("/api/v1/tickets/", {**FORM, "gpu_serial": serial})
        assert answer.status_code == 400, answer.content
        assert b.hostname not in answer.content.decode().replace(foreign, "")
        assert theirs.number not in answer.content.decode()
        answers[serial] = answer.json()["errors"]
    assert answers[foreign] == [
        {"field": "gpu_serial", "message": NOT_FOUND % {"serial": foreign}, "code": "invalid"}
    ]
    assert str(answers[unknown]).replace(unknown, foreign) == str(answers[foreign])
    zh = api.post(
        "/api/v1/tickets/", {**FORM, "gpu_serial": foreign}, HTTP_ACCEPT_LANGUAGE="zh-hans"
    )
    message = zh.json()["errors"][0]["message"]
    with translation.override("zh-hans"):
        assert message == gettext(NOT_FOUND) % {"serial": foreign}
    assert message != NOT_FOUND % {"serial": foreign}
    assert not Ticket.objects.exists()

    # A serial of the customer's running order, with another order of theirs chosen.
    second = make_order(demo, nodes=1)
    clash = f"GPU {own} serves order {mine.number}."
    page = client.post(new, {**FORM, "order": second.number, "gpu_serial": own})
    assert page.status_code == 200 and clash in page.content.decode()
    answer = api.post("/api/v1/tickets/", {**FORM, "order": second.number, "gpu_serial": own})
    assert answer.status_code == 422 and answer.json()["detail"] == clash
    assert not Ticket.objects.exists()

    # The own serial opens the ticket about its order, node and GPU, on both paths.
    opened = api.post("/api/v1/tickets/", {**FORM, "gpu_serial": f" {own}"})
    assert opened.status_code == 201, opened.content
    body = opened.json()
    assert (body["order"], body["node"], body["gpu_serial"], body["gpu_index"]) == (
        mine.number,
        a.hostname,
        own,
        "0",
    )
    page = client.post(new, {**FORM, "gpu_serial": own})
    assert page.status_code == 302
    assert {(t.order, t.node, t.gpu_serial, t.gpu_index) for t in Ticket.objects.all()} == {
        (mine, a, own, "0")
    }
