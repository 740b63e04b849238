"""``manage.py contract_verify_chain [NUMBER ...]``: recompute the audit chain of every
contract (or of those named) and say, for each, ``ok`` or its first broken link.

``--audit-pdf FILE`` recomputes the chain from an audit record PDF alone (the entries it
prints, attached to it as ``audit-chain.json``), with no database: what a customer or an
arbitrator can do with the file they hold.

Exits with status 1 when a chain is broken or a named contract does not exist; the check
is ``billing.contracts.services.audit_first_break``, the one the product and the tests use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.contracts import chain, signatures
from billing.contracts.services import audit_first_break
from billing.models import Contract


class Command(BaseCommand):
    help = "Recompute contracts' audit hash chains; exit 1 on a broken link."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("numbers", nargs="*", help="contract numbers (default: every contract)")
        parser.add_argument(
            "--audit-pdf", type=Path, help="recompute the chain printed in this audit record"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["audit_pdf"]:
            self._from_pdf(options["audit_pdf"])
            return
        numbers: list[str] = options["numbers"]
        contracts = Contract.objects.order_by("pk")
        if numbers:
            contracts = contracts.filter(number__in=numbers)
            missing = sorted(set(numbers) - set(contracts.values_list("number", flat=True)))
            if missing:
                raise CommandError(f"No contract {', '.join(missing)}.")
        broken = 0
        checked = 0
        for contract in contracts.iterator():
            checked += 1
            entry = audit_first_break(contract)
            if entry is None:
                count = contract.audit.count()
                self.stdout.write(f"{contract.number}: ok ({count} entries)")
                continue
            broken += 1
            self.stdout.write(
                f"{contract.number}: BROKEN at entry {entry.seq} ({entry.kind}, "
                f"{entry.at.isoformat()}): its hash does not match its content and the "
                "entry before"
            )
        if broken:
            raise CommandError(f"{broken} of {checked} contract chains are broken.")
        self.stdout.write(f"{checked} contract chains intact.")

    def _from_pdf(self, path: Path) -> None:
        try:
            files = signatures.embedded_files(path.read_bytes())
        except Exception as exc:  # not a PDF, unreadable
            raise CommandError(f"{path}: not a readable PDF ({type(exc).__name__}).") from exc
        if not files:
            raise CommandError(f"{path}: no audit chain attached (not an audit record?).")
        record = json.loads(files[0])
        entries = record.get("entries", [])
        broken = chain.first_break(entries)
        if broken is not None:
            self.stdout.write(f"{record.get('contract')}: BROKEN at entry {broken}")
            raise CommandError(f"{path}: the chain breaks at entry {broken}.")
        self.stdout.write(f"{record.get('contract')}: ok ({len(entries)} entries, from {path})")
