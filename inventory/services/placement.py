"""The placement lock: one placement at a time per site and node type (a PostgreSQL
advisory lock held until the caller's transaction ends). The placement algorithm itself
is the pure ``inventory.placement``; the search that uses it is
``inventory.selectors.availability_search``."""

from __future__ import annotations

from collections.abc import Collection

from django.db import transaction

__all__ = [
    "PLACEMENT_LOCK_CLASS",
    "placement_lock",
]


# pg_advisory_xact_lock's first key: placements (the second is the site and node type).
PLACEMENT_LOCK_CLASS = 0x47505550  # "GPUP"


def placement_lock(*, site_id: int, node_type_ids: Collection[int]) -> None:
    """Place one booking at a time per site and node type, until the caller's transaction
    ends: a search that runs while another placement of the same nodes is not committed
    yet would pick the same "best" nodes, lose at the exclusion constraint and refuse a
    customer while other nodes are free (seen with six customers quoting at once). Locks
    are taken in one order (no deadlock between two placements of several types).
    PostgreSQL only; SQLite (the embedded default) writes one transaction at a time."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("placement_lock needs the caller's transaction")
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for type_id in sorted(set(node_type_ids)):
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)",
                [PLACEMENT_LOCK_CLASS, (site_id << 16) ^ type_id],
            )
