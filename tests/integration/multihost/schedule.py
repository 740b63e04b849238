"""Beat's table with every interval (and each entry's expiry) times a factor."""

from __future__ import annotations

from typing import Any


def scaled_schedule(table: dict[str, dict[str, Any]], scale: float) -> dict[str, dict[str, Any]]:
    out = {}
    for name, entry in table.items():
        entry = {**entry, "schedule": float(entry["schedule"]) * scale}
        if "expires" in entry.get("options", {}):
            entry["options"] = {**entry["options"], "expires": entry["options"]["expires"] * scale}
        out[name] = entry
    return out
