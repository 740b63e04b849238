"""Replies by email: each ticket email to the customer carries a ``Reply-To`` address of
its own (``support+T000123-<signature>@…``, the signature an HMAC of the ticket under the
secret key), and the mail server pipes what arrives there into
``manage.py support_inbound_email``. A reply counts when its address's signature is the
ticket's and its sender is a member of the ticket's organisation; the quoted text below
it is dropped. Anything else is refused with its reason (the MTA bounces it): nothing is
added to a ticket from an address that did not come from the portal."""

from __future__ import annotations

import hashlib
import hmac
import re
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import getaddresses, parseaddr

from django.conf import settings
from django.contrib.auth import get_user_model

from accounts.models import Membership
from portal.support import services
from portal.support.models import MessageVia, Ticket, TicketMessage

_TAG = re.compile(r"\+T(?P<pk>\d{1,12})-(?P<sig>[0-9a-f]{16})@", re.I)
# Where a mail client starts quoting the message replied to.
_QUOTE_START = re.compile(
    r"^(On .+ wrote:|在.+写道：?|-----Original Message-----|-----原始邮件-----|From: .+)$"
)


class InboundRejected(Exception):
    """Why an incoming email adds nothing to any ticket."""


def _signature(ticket_pk: int) -> str:
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, f"support-ticket:{ticket_pk}".encode(), hashlib.sha256).hexdigest()[:16]


def reply_address(ticket: Ticket) -> str:
    """The ticket's own reply address, or ``""`` when replies by email are not set up."""
    base = settings.PORTAL_SUPPORT_REPLY_ADDRESS
    if not base or "@" not in base:
        return ""
    local, domain = base.split("@", 1)
    return f"{local}+T{ticket.pk}-{_signature(ticket.pk)}@{domain}"


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    if part is None:
        raise InboundRejected("no text/plain part")
    lines = []
    for line in part.get_content().splitlines():
        if _QUOTE_START.match(line.strip()):
            break
        if line.startswith(">"):
            continue
        lines.append(line)
    return "\n".join(lines).strip()


def ticket_reply_from_email(raw: bytes) -> TicketMessage:
    """Add the customer's emailed reply to its ticket (as ``services.ticket_reply``)."""
    message = message_from_bytes(raw, policy=policy.default)
    assert isinstance(message, EmailMessage)
    headers = ("Delivered-To", "X-Original-To", "To", "Cc")
    addresses = [
        addr for _n, addr in getaddresses([v for h in headers for v in message.get_all(h, [])])
    ]
    match = next(
        (m for m in (_TAG.search(a + "@" if "@" not in a else a) for a in addresses) if m), None
    )
    if match is None:
        raise InboundRejected("not addressed to a ticket's reply address")
    pk, signature = int(match["pk"]), match["sig"].lower()
    if not hmac.compare_digest(signature, _signature(pk)):
        raise InboundRejected("the reply address's signature does not match")
    ticket = Ticket.objects.filter(pk=pk).first()
    if ticket is None:
        raise InboundRejected("no such ticket")
    sender = parseaddr(str(message.get("From", "")))[1].strip().lower()
    members = Membership.objects.filter(
        organisation=ticket.organisation_id, user__email__iexact=sender
    ).values_list("user_id", flat=True)
    user_id = next(iter(members), None)
    if not sender or user_id is None:
        raise InboundRejected(f"{sender or 'the sender'} is not a member of the ticket's customer")
    body = _body(message)
    if not body:
        raise InboundRejected("the reply is empty")
    user = get_user_model().objects.get(pk=user_id)
    return services.ticket_reply(ticket=ticket, actor=user, body=body, via=MessageVia.EMAIL)
