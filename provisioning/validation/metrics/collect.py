"""What derivation collects (:class:`_Out`: metrics, problems, observations, parse
errors), shared by the per-check modules."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from provisioning.validation.metrics.table import METRICS
from provisioning.validation.rules import (
    Reason,
    metric_key,
)


def _reason(code: str, text: str, **params: Any) -> Reason:
    return Reason(code=code, params=params, text=text)


class _Out:
    """What derivation collects (a metric outside :data:`METRICS` is a programming error)."""

    def __init__(self) -> None:
        self.metrics: dict[str, Any] = {}
        self.problems: list[Reason] = []
        self.observations: list[Reason] = []
        self.parse_errors: dict[str, str] = {}

    def put(self, name: str, value: Any, size: int | None = None) -> None:
        if name not in METRICS:
            raise KeyError(f"metric {name!r} is not in metrics.METRICS")
        self.metrics[metric_key(name, size)] = value


def _finite_list(values: Iterable[Any]) -> list[float] | None:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return None
        out.append(float(v))
    return out
