"""Long-lived objects kept out of the garbage collector's way in worker processes.

A Celery child holds a few hundred thousand Python objects that live as long as it does
(Django, the models, the templates, WeasyPrint's and fontTools' tables). Every full
collection walks them all: rendering the three-page quote PDF creates enough objects to
trigger one about every second render, about 100 ms of the render's CPU each time.
``gc.freeze()`` (Python 3.7+, the technique Instagram described for its Django workers)
moves every object alive at that point into a permanent generation the collector skips;
garbage made later is collected as before. Called once per process, after start-up and a
full collection, so nothing that is already garbage is kept.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> int:
    """Collect, then freeze what is left; the number of objects frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
