"""``manage.py backup_create --to DIR [--keep N]``: a backup (core.backups) and retention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import backups


class Command(BaseCommand):
    help = "Back up the database (pg_dump, custom format) and the stored documents."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--to", required=True, type=Path, help="the backups folder")
        parser.add_argument("--keep", type=int, default=14, help="newest backups kept (default 14)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            folder = backups.backup_create(to=Path(options["to"]), keep=int(options["keep"]))
        except backups.BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Backup written: {folder}")
