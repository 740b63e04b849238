"""core.heap: start-up objects frozen, garbage made later still collected."""

from __future__ import annotations

import gc
import weakref

from core import heap


class _Node:
    pass


def test_start_up_objects_are_frozen_and_later_garbage_is_still_collected():
    try:
        frozen = heap.freeze_startup_objects()
        assert frozen > 10_000  # Django, the models, the templates…
        assert gc.get_freeze_count() == frozen
        # a reference cycle made afterwards is garbage the collector still finds
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
