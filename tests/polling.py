"""The suite's one way of waiting for something another process or thread does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    interval: float = 0.05,
    message: str | Callable[[], str] = "the condition",
    *,
    retry_on: tuple[type[BaseException], ...] = (),
    give_up_if: Callable[[], object] | None = None,
) -> T:
    """Call ``predicate`` every ``interval`` seconds until it returns something truthy, and
    return that; after ``timeout`` seconds fail with ``AssertionError`` naming ``message``
    (what was awaited; a callable is called then, so that it can tell the latest state).

    ``retry_on``: exceptions of ``predicate`` that mean "not yet" (a server not listening
    yet). ``give_up_if``: checked after each miss; truthy fails at once (the process that
    should answer has exited).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except retry_on:
            value = None
        if value:
            return value
        if give_up_if is not None and give_up_if():
            raise AssertionError(f"gave up waiting for {_text(message)}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {_text(message)}")
        time.sleep(interval)


def _text(message: str | Callable[[], str]) -> str:
    return message() if callable(message) else message
