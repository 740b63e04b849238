"""``manage.py signing_demo_key``: the demo's signing key and self-signed certificate.

Writes a PKCS#12 file at ``PORTAL_SIGNING_P12`` (protected by
``PORTAL_SIGNING_P12_PASSPHRASE``) once; an existing file, a production key included, is
never replaced. Run by ``seed_demo`` (``make run``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from billing.contracts import signatures


class Command(BaseCommand):
    help = "Create the demo signing key and self-signed certificate once."

    def handle(self, *args: Any, **options: Any) -> None:
        created = signatures.demo_certificate_ensure()
        state = "created" if created else "kept"
        self.stdout.write(f"signing key {state}: {settings.PORTAL_SIGNING_P12}")
