"""Every billing task declares its queue; every document render retries database errors."""

from __future__ import annotations

from celery import current_app
from django.db import InterfaceError, OperationalError

import billing.tasks  # noqa: F401  (registers the tasks)
from core.queues import CeleryQueue


def _billing_tasks() -> dict:
    return {n: t for n, t in current_app.tasks.items() if n.startswith("billing.")}


def test_every_document_task_retries_database_errors():
    documents = {
        n: t for n, t in _billing_tasks().items() if n.startswith("billing.tasks.document_")
    }
    assert "billing.tasks.document_render_credit_note" in documents
    assert len(documents) == 7
    for name, task in documents.items():
        retried = tuple(getattr(task, "autoretry_for", ()))
        assert OperationalError in retried and InterfaceError in retried, name
        assert task.acks_late and task.max_retries == 3, name
        assert task.queue == CeleryQueue.DOCUMENTS, name


def test_every_billing_task_declares_a_known_queue_under_its_old_name():
    tasks = _billing_tasks()
    assert len(tasks) == 28  # with the late-fee notices and the seal sweep (issue 24)
    for name, task in tasks.items():
        assert name.startswith("billing.tasks."), name
        assert task.queue in set(CeleryQueue), name
