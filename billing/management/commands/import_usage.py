"""``manage.py import_usage FILE.csv``: import metered usage (all rows or none), through
the same resource as the admin and the API (``billing.invoicing.resources``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.invoicing.usage import UsageImportError, usage_import_csv


class Command(BaseCommand):
    help = "Import usage records (egress traffic) from a CSV file; nothing is stored on errors."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: {exc}") from exc
        try:
            result = usage_import_csv(text=text, source="csv", actor=None)
        except UsageImportError as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(exc.message) from exc
        self.stdout.write(f"usage records: {result.created} new, {result.unchanged} unchanged")
