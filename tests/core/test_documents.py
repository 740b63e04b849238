"""core.documents: every document kind has its render task, on the documents queue, with
the one set of retry options (so a lost ``autoretry_for`` cannot happen again)."""

from __future__ import annotations

import pytest
from django.db import InterfaceError, OperationalError

from core import documents
from core.queues import CeleryQueue
from portal.celery import app

KINDS = {
    "quote",
    "estimate",
    "invoice",
    "credit_note",
    "contract_draft",
    "contract_sealed",
    "contract_audit",
    "acceptance_report",
}


@pytest.fixture(scope="module")
def tasks():
    app.loader.import_default_modules()  # the tasks modules, which import every kind
    return app.tasks


def test_the_six_document_kinds_are_registered(tasks):
    assert set(documents.KINDS) == KINDS


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_has_its_render_task_on_the_documents_queue_with_retries(tasks, name):
    kind = documents.KINDS[name]
    assert kind.render_task in tasks, f"{name}: no task {kind.render_task!r}"
    task = tasks[kind.render_task]
    assert task.queue == CeleryQueue.DOCUMENTS
    assert app.amqp.router.route({}, task.name)["queue"].name == CeleryQueue.DOCUMENTS
    assert {OperationalError, InterfaceError} <= set(task.autoretry_for)
    assert task.acks_late and task.reject_on_worker_lost
    assert task.max_retries == documents.DOCUMENT_TASK_OPTIONS["max_retries"]


def test_a_kind_name_is_registered_once():
    kind = documents.KINDS["quote"]
    other = type(kind)()
    with pytest.raises(ValueError, match="already registered"):
        documents.register(other)
    assert documents.register(kind) is kind
