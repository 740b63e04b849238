"""``manage.py render_quote NUMBER [--version N] [--language zh-hans|en] --out FILE.pdf``.

A sent (or decided, expired, superseded) quote gives its stored document, rendered and
stored first if it has none; a quote that can still change is rendered fresh and not
stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.models import QUOTE_SENT_STATUSES, Quote
from billing.quotes import documents as quote_documents


class Command(BaseCommand):
    help = "Render a quote's PDF to a file (the stored document for a sent quote)."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # ``--version`` is the quote's version here, not Django's: let ours replace it.
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("number", help="quote number, e.g. Q-SZ-2026-000001")
        parser.add_argument(
            "--version", type=int, dest="quote_version", help="version (default: the latest)"
        )
        parser.add_argument(
            "--language",
            choices=[code for code, _name in settings.LANGUAGES],
            help="language of the PDF (default: the quote's)",
        )
        parser.add_argument("--out", required=True, type=Path, help="the PDF file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        number: str = options["number"]
        version: int | None = options["quote_version"]
        quotes = Quote.objects.filter(number=number)
        if version is not None:
            quotes = quotes.filter(version=version)
        quote = quotes.order_by("-version").first()
        if quote is None:
            if version is not None and Quote.objects.filter(number=number).exists():
                raise CommandError(f"Quote {number} has no version {version}.")
            raise CommandError(f"No quote numbered {number}.")
        language = options["language"] or quote.language
        out: Path = options["out"]
        if not out.parent.is_dir():
            raise CommandError(f"No such folder: {out.parent}")
        if quote.status in QUOTE_SENT_STATUSES:
            document = quote_documents.quote_document(quote=quote, language=language)
            with document.file.open("rb") as fh:
                data = fh.read()
            how = f"stored document, sha256 {document.sha256}"
        else:
            data = quote_documents.render_quote_pdf(quote=quote, language=language)
            how = f"fresh rendering of a {quote.get_status_display()} quote, not stored"
        out.write_bytes(data)
        self.stdout.write(
            self.style.SUCCESS(
                f"{quote.number} v{quote.version} [{language}] → {out} ({len(data):,} bytes; {how})"
            )
        )
