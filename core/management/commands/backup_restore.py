"""``manage.py backup_restore BACKUP --database NEW --media-root DIR``: restore a backup
into a new database and documents folder, and check every document's SHA-256."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import backups


class Command(BaseCommand):
    help = (
        "Restore a backup (a folder written by backup_create) into a NEW database and a "
        "new documents folder, then check every stored document against its SHA-256."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("backup", type=Path, help="the backup's folder")
        parser.add_argument("--database", required=True, help="the new database's name")
        parser.add_argument(
            "--media-root", required=True, type=Path, help="the new documents folder"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = backups.backup_restore(
                folder=Path(options["backup"]),
                database=options["database"],
                media_root=Path(options["media_root"]),
            )
        except backups.BackupError as exc:
            raise CommandError(str(exc)) from exc
        if not result.ok:
            for problem in result.problems:
                self.stderr.write(problem)
            raise CommandError(
                f"Restored into {options['database']}, but {len(result.problems)} of "
                f"{result.checked} stored documents failed their check (listed above)."
            )
        self.stdout.write(
            f"Restored into database {options['database']} and {options['media_root']}: "
            f"{result.checked} stored documents checked, every SHA-256 matches."
        )
