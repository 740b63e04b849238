"""``manage.py render_acceptance_report RUN_ID [--language zh-hans|en] --out FILE.pdf``.

A finished run gives its stored report (rendered and stored first if it has none); a run
still pending or running is rendered fresh and not stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from provisioning.models import ValidationRun
from provisioning.validation import report


class Command(BaseCommand):
    help = "Render a validation run's acceptance report to a PDF file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_id", type=int, help="the validation run's id")
        parser.add_argument(
            "--language",
            choices=[code for code, _name in settings.LANGUAGES],
            default="en",
            help="language of the PDF (default: en)",
        )
        parser.add_argument("--out", required=True, type=Path, help="the PDF file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        run = ValidationRun.objects.filter(pk=options["run_id"]).first()
        if run is None:
            raise CommandError(f"No validation run {options['run_id']}.")
        out: Path = options["out"]
        if not out.parent.is_dir():
            raise CommandError(f"No such folder: {out.parent}")
        language: str = options["language"]
        if run.finished:
            document = report.acceptance_report_document(run=run, language=language)
            with document.file.open("rb") as fh:
                data = fh.read()
            how = f"stored document, sha256 {document.sha256}"
        else:
            data = report.render_acceptance_report(run=run, language=language)
            how = f"fresh rendering of a {run.get_status_display()} run, not stored"
        out.write_bytes(data)
        self.stdout.write(
            self.style.SUCCESS(f"run {run.pk} [{language}] → {out} ({len(data):,} bytes; {how})")
        )
