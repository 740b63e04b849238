"""What every parser shares: the damage error, number tokens, tool-label prefixes, and
the wrapper that turns any damage into a damaged result (a parser never raises)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any


class ParseError(ValueError):
    """The input is damaged: empty, garbage, truncated or inconsistent."""


INT_RE = re.compile(r"^[+-]?\d+$")
FLOAT_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
# `srun --label` and `mpirun --tag-output` style prefixes: "0: ", "[1,0]<stdout>:".
LABEL_RE = re.compile(r"^\s*(?:\d+:\s|\[\d+,\d+\]<std(?:out|err)>:)")


def base_result(kind: str) -> dict[str, Any]:
    return {"kind": kind, "ok": False, "damaged": False, "errors": []}


def finite(token: str, what: str) -> float:
    """Parse a float token; non-numbers, NaN and infinities are damage."""
    if not FLOAT_RE.match(token):
        raise ParseError(f"{what}: {token!r} is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise ParseError(f"{what}: {token!r} is not a finite number")
    return value


def run_parser(kind: str, body: Callable[[str, dict[str, Any]], None], text: Any) -> dict[str, Any]:
    """Run a parser body; turn ParseError (and any surprise) into a damaged result."""
    result = base_result(kind)
    try:
        if not isinstance(text, str):
            raise ParseError(f"input is {type(text).__name__}, not text")
        if not text.strip():
            raise ParseError("input is empty")
        if "\x00" in text:
            raise ParseError("input contains NUL bytes: not tool output")
        body(text, result)
    except ParseError as exc:
        result["damaged"] = True
        result["errors"].append(str(exc))
    except Exception as exc:  # never raise on bad input: an unexpected shape is damage too
        result["damaged"] = True
        result["errors"].append(f"unexpected input ({type(exc).__name__}: {exc})")
    result["ok"] = not result["damaged"] and not result["errors"]
    return result
