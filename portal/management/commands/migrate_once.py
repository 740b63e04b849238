"""``manage.py migrate_once``: ``migrate`` under a PostgreSQL advisory lock, so that web
hosts starting together migrate one after the other (the second finds nothing to do)
instead of racing to apply the same migration. On SQLite (one host) it is ``migrate``."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

# Any constant of our own (pg_advisory_lock takes a bigint); "gpu-portal-migrate".
MIGRATE_LOCK = 0x67707570_6D696772


class Command(BaseCommand):
    help = "Apply migrations, one host at a time (PostgreSQL advisory lock)."

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            call_command("migrate", interactive=False, verbosity=options["verbosity"])
            return
        with connection.cursor() as cursor:
            self.stdout.write("Waiting for the migration lock…")
            cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK])
            try:
                call_command("migrate", interactive=False, verbosity=options["verbosity"])
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK])
