"""Celery queue names, in one place (the bottom layer, so every app's tasks can name one).

Each task declares its queue on its decorator (``@shared_task(queue=CeleryQueue.DOCUMENTS)``);
a worker that should only provision runs ``celery -A portal worker -Q provisioning``.
"""

from __future__ import annotations

from enum import StrEnum


class CeleryQueue(StrEnum):
    DEFAULT = "default"
    PROVISIONING = "provisioning"
    VALIDATION = "validation"
    DOCUMENTS = "documents"
    BILLING = "billing"


ALL: tuple[str, ...] = tuple(queue.value for queue in CeleryQueue)
