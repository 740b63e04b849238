"""The contract's audit chain, as arithmetic (no Django): the exact text each entry's
hash covers, and the hash. The audit record prints that text per entry, so anyone can
recompute the chain from the PDF: ``sha256(body) == hash`` and each body's ``prev`` is
the hash of the entry before (``GENESIS`` for the first)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

GENESIS = "0" * 64


def entry_body(
    *, prev_hash: str, seq: int, at: str, kind: str, actor: Any, detail: dict[str, Any]
) -> str:
    """Canonical JSON (sorted keys, no spaces, UTF-8 text) of one entry; ``at`` is the
    entry's time in ISO 8601 with microseconds and offset, ``actor`` the user's id."""
    return json.dumps(
        {"prev": prev_hash, "seq": seq, "at": at, "kind": kind, "actor": actor, "detail": detail},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )


def body_hash(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def entry_hash(
    *, prev_hash: str, seq: int, at: str, kind: str, actor: Any, detail: dict[str, Any]
) -> str:
    return body_hash(
        entry_body(prev_hash=prev_hash, seq=seq, at=at, kind=kind, actor=actor, detail=detail)
    )


def first_break(entries: list[dict[str, Any]]) -> int | None:
    """Given ``[{"seq", "body", "hash"}, ...]`` (as the audit record's embedded file has
    them), the ``seq`` of the first entry whose hash or link does not hold, else None."""
    prev = GENESIS
    for e in entries:
        try:
            parsed = json.loads(e["body"])
        except (TypeError, ValueError):
            return int(e.get("seq", 0))
        if parsed.get("prev") != prev or body_hash(e["body"]) != e["hash"]:
            return int(e["seq"])
        prev = e["hash"]
    return None
