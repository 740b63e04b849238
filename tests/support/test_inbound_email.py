"""Replies by email: the customer's email carries the ticket's own signed reply address;
what comes back to it from a member of the organisation is added to the ticket (quoted
text dropped, the clocks resume); a forged address or a stranger adds nothing; the
command the mail server pipes into says why it refused (and exits non-zero)."""

from __future__ import annotations

import io
import sys

import pytest
from django.core import mail
from django.core.management import call_command

from portal.support import inbound, services
from portal.support.models import Ticket
from tests.factories import run_outbox

pytestmark = pytest.mark.django_db


def raw(to: str, sender: str, body: str) -> bytes:
    return (
        f"From: Li Wei <{sender}>\r\nTo: {to}\r\nSubject: Re: [T-000001] Training stalls\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\n"
        f"{body}\r\n\r\nOn Tue, 1 Dec 2026 at 10:00, Support wrote:\r\n> Which NCCL version?\r\n"
    ).encode()


@pytest.fixture
def waiting(demo, support, settings):
    settings.PORTAL_SUPPORT_REPLY_ADDRESS = "support@portal.example"
    ticket = services.ticket_open(
        organisation=demo["org"], actor=demo["customer"], subject="Training stalls",
        body="NCCL hangs.", category="other", priority="normal", language="en",
    )  # fmt: skip
    services.ticket_reply(
        ticket=ticket, actor=support, body="Which NCCL version?", staff=True,
        wait_for_customer=True,
    )  # fmt: skip
    return ticket


def test_a_reply_by_email_lands_on_the_ticket_and_resumes_the_clocks(demo, waiting):
    run_outbox(services.EMAIL_TASK)
    sent = [m for m in mail.outbox if m.to == [demo["customer"].email] and "Which" in m.body]
    address = inbound.reply_address(waiting)
    assert sent and sent[0].reply_to == [address] and address.startswith("support+T")
    assert "Reply to this email" in sent[0].body
    message = inbound.ticket_reply_from_email(
        raw(address, demo["customer"].email.upper(), "2.18.3")
    )
    assert (message.body, message.via, message.author) == ("2.18.3", "email", demo["customer"])
    waiting.refresh_from_db()
    assert waiting.status == "open" and waiting.paused_at is None


def test_a_forged_address_or_a_stranger_adds_nothing(demo, waiting):
    forged = inbound.reply_address(waiting).replace(f"+T{waiting.pk}-", f"+T{waiting.pk + 1}-")
    with pytest.raises(inbound.InboundRejected, match="signature"):
        inbound.ticket_reply_from_email(raw(forged, demo["customer"].email, "hi"))
    with pytest.raises(inbound.InboundRejected, match="not a member"):
        inbound.ticket_reply_from_email(
            raw(inbound.reply_address(waiting), "eve@elsewhere.example", "hi")
        )
    with pytest.raises(inbound.InboundRejected, match="reply address"):
        inbound.ticket_reply_from_email(raw("support@portal.example", demo["customer"].email, "x"))
    assert Ticket.objects.get(pk=waiting.pk).messages.count() == 2


def test_the_command_says_why_it_refused(demo, waiting, monkeypatch, capsys):
    message = raw(inbound.reply_address(waiting), "eve@elsewhere.example", "hi")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(message)))
    with pytest.raises(SystemExit) as exit_:
        call_command("support_inbound_email")
    assert exit_.value.code == 67 and "not a member" in capsys.readouterr().err
