"""The same Idempotency-Key from ten threads at once makes one quote (PostgreSQL): the
first claims the key in the transaction that does the work, the others wait on its row
and answer its result."""

import threading

import pytest
from django.db import connection

from billing.models import Quote
from core import jobs
from tests.portal.api.conftest import ApiClient, make_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_ten_threads_one_key_make_one_quote(demo, monkeypatch):
    monkeypatch.setattr(jobs, "enqueue_chain", lambda steps: None)  # no broker here
    key = make_key(demo["org"], demo["customer"])
    body = {
        "site": "SZ",
        "node_type": demo["h100"].code,
        "node_count": 1,
        "term": "month",
        "duration": 1,
        "start_date": demo["start"].isoformat(),
    }
    barrier = threading.Barrier(10)
    answers = []

    def post():
        try:
            barrier.wait()
            answers.append(
                ApiClient(key.secret).post("/api/v1/quotes/", body, idempotency_key="same-key")
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 10
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["number"] for a in answers}) == 1
    assert Quote.objects.filter(organisation=demo["org"]).count() == 1
    assert sum(a.get("Idempotent-Replayed") == "true" for a in answers) == 9
