"""Which spare replaces a failed node (pure: no Django).

A spare is of the same node type, free for the rest of the order's period (the caller
filters for that). Among those, prefer one under the failed node's leaf switch, then
under a leaf the rest of the cluster uses, then in the same rack; ties by hostname, so
the choice is repeatable.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SpareCandidate:
    node_id: int
    hostname: str
    leaf_id: int
    rack_id: int


def choose_spare(
    candidates: Sequence[SpareCandidate],
    *,
    failed_leaf_id: int,
    failed_rack_id: int,
    cluster_leaf_ids: Collection[int] = (),
) -> SpareCandidate | None:
    """The best spare, or ``None`` when there is none."""
    if not candidates:
        return None
    return min(
        candidates,
        key=lambda c: (
            c.leaf_id != failed_leaf_id,
            c.leaf_id not in cluster_leaf_ids,
            c.rack_id != failed_rack_id,
            c.hostname,
        ),
    )
