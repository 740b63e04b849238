"""Reads of the self-service shop: estimates by their key."""

from __future__ import annotations

from billing.models import Estimate


def estimate_by_key(key: str) -> Estimate | None:
    """The estimate with this key (None when there is none), with only what its status
    page and download need (one query)."""
    return (
        Estimate.objects.filter(key=key)
        .only("key", "file", "rendered_at", "reopen_path", "language", "created_at")
        .first()
    )
