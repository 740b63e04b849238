"""``manage.py render_contract NUMBER --out FILE.pdf``: the stored signed (sealed) PDF.

A contract not yet countersigned gives its PDF for signature instead, rendered and stored
first when it has none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.contracts import documents as contract_documents
from billing.models import Contract, ContractDocument, ContractDocumentKind


class Command(BaseCommand):
    help = "Write a contract's stored signed PDF (or its PDF for signature) to a file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("number", help="contract number, e.g. C-SZ-2026-000001")
        parser.add_argument("--out", required=True, type=Path, help="the PDF file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        contract = Contract.objects.filter(number=options["number"]).first()
        if contract is None:
            raise CommandError(f"No contract {options['number']}.")
        document = (
            ContractDocument.objects.filter(contract=contract, kind=ContractDocumentKind.SEALED)
            .order_by("pk")
            .first()
        )
        if document is None:
            document = contract_documents.draft_document(contract=contract)
        with document.file.open("rb") as f:
            data = f.read()
        options["out"].write_bytes(data)
        self.stdout.write(
            f"{contract.number} ({document.kind}, {document.language}): {options['out']} "
            f"sha256 {document.sha256}"
        )
