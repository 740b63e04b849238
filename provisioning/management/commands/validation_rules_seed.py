"""``manage.py validation_rules_seed``: store the seed acceptance rules (VALIDATION.md)
that are not in the database yet (idempotent; edited rules are kept)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from provisioning.validation.services import validation_rules_seed


class Command(BaseCommand):
    help = "Store the seed acceptance rules that are missing (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        created, kept = validation_rules_seed()
        self.stdout.write(f"validation rules: {created} created, {kept} already there")
