"""``manage.py support_inbound_email < message.eml``: one emailed reply to a ticket (the
mail server pipes each message of the support mailbox here). Exit status 0 when it was
added; 67 (EX_NOUSER) with the reason when refused, so the mail server bounces it."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand

from core.errors import DomainError
from portal.support.inbound import InboundRejected, ticket_reply_from_email

EX_NOUSER = 67


class Command(BaseCommand):
    help = "Add an emailed reply (read from standard input) to its support ticket."

    def handle(self, *args: Any, **options: Any) -> None:
        raw = sys.stdin.buffer.read()
        try:
            message = ticket_reply_from_email(raw)
        except (InboundRejected, DomainError) as exc:
            self.stderr.write(f"refused: {exc}")
            sys.exit(EX_NOUSER)
        self.stdout.write(f"added to {message.ticket.reference}")
