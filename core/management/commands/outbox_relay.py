"""``manage.py outbox_relay``: publish pending outbox messages, once or in a loop."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections

from core import outbox


class Command(BaseCommand):
    help = "Publish outbox messages that are still pending (once, or every --every seconds)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--every", type=float, default=0, help="loop with this pause (s)")

    def handle(self, *args: Any, every: float = 0, **options: Any) -> None:
        while True:
            published = outbox.relay()
            if published or not every:
                self.stdout.write(f"published {published}")
            if not every:
                return
            close_old_connections()
            time.sleep(every)
