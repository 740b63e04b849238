"""``manage.py contract_verify_chain [NUMBER ...]``: recompute the audit chain of every
contract (or of those named) and say, for each, ``ok`` or its first broken link.

Exits with status 1 when a chain is broken or a named contract does not exist; the check
is ``billing.contracts.services.audit_first_break``, the one the product and the tests use.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.contracts.services import audit_first_break
from billing.models import Contract


class Command(BaseCommand):
    help = "Recompute contracts' audit hash chains; exit 1 on a broken link."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("numbers", nargs="*", help="contract numbers (default: every contract)")

    def handle(self, *args: Any, **options: Any) -> None:
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
