"""Gapless document numbers."""

from __future__ import annotations

from billing.models import NumberSequence
from inventory.models import Site


def next_number(*, kind: str, site: Site, year: int) -> str:
    """The next gapless number for a document kind: ``Q-SZ-2026-000123``.

    Must run inside the transaction that creates the document: the sequence row stays
    locked until it commits, and a rollback gives the number back.
    """
    seq, _created = NumberSequence.objects.get_or_create(kind=kind, site=site, year=year)
    seq = NumberSequence.objects.select_for_update().get(pk=seq.pk)
    seq.last += 1
    seq.save(update_fields=["last"])
    return f"{kind}-{site.code}-{year}-{seq.last:06d}"
