"""Issue 23, point 3: /healthz (the process answers) and /readyz (each dependency and its
state), both answered before the host check."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from core import heartbeats, queues
from core.models import WorkerHeartbeat

DEAD = "redis://127.0.0.1:1/0"  # nothing listens on port 1: connection refused


def test_healthz_answers_for_a_host_that_allowed_hosts_does_not_list(client):
    # A load balancer asks by the web host's IP address.
    response = client.get("/healthz", HTTP_HOST="10.77.0.5")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    # Any other page from that host is refused by the host check.
    assert client.get("/en/", HTTP_HOST="10.77.0.5").status_code == 400


@pytest.mark.django_db
def test_readyz_names_each_dependency_and_requires_the_database_by_default(client):
    WorkerHeartbeat.objects.all().delete()
    response = client.get("/readyz", HTTP_HOST="10.77.0.5")
    # No worker on any queue: reported, but a web process still serves customers.
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body["checks"]) == {"database", "broker", "cache", "workers"}
    assert body["checks"]["database"]["state"] == "ok"
    assert body["checks"]["broker"]["state"] == "ok"
    assert body["checks"]["cache"]["state"] == "ok"
    assert body["checks"]["workers"]["state"] == "down"
    assert body["status"] == "degraded" and body["degraded"] == ["workers"]
    assert body["checks"]["workers"]["queues"] == dict.fromkeys(queues.ALL, 0)

    strict = client.get("/readyz?require=all", HTTP_HOST="10.77.0.5")
    assert strict.status_code == 503
    assert strict.json()["failed"] == ["workers"]
    assert "no live worker on: " in strict.json()["checks"]["workers"]["error"]
    # From elsewhere: the states, not the error texts (addresses, user names).
    outside = client.get("/readyz?require=all", REMOTE_ADDR="203.0.113.9").json()
    assert outside["failed"] == ["workers"] and "error" not in outside["checks"]["workers"]


@pytest.mark.django_db
def test_readyz_is_ready_when_every_queue_has_a_live_worker(client):
    # Two workers between them cover every queue; one that stopped long ago counts for none.
    heartbeats.beat(hostname="w1@a", queues=queues.ALL[:2])
    heartbeats.beat(hostname="w2@b", queues=queues.ALL[2:])
    response = client.get("/readyz?require=all")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "ready"
    assert response.json()["checks"]["workers"]["queues"] == dict.fromkeys(queues.ALL, 1)

    WorkerHeartbeat.objects.filter(hostname="w2@b").update(
        seen_at=WorkerHeartbeat.objects.get(hostname="w1@a", queue=queues.ALL[0]).seen_at
        - 2 * heartbeats.max_age()
    )
    response = client.get("/readyz?require=workers")
    assert response.status_code == 503
    missing = response.json()["checks"]["workers"]["error"]
    assert missing == "no live worker on: " + ", ".join(queues.ALL[2:])


@pytest.mark.django_db
def test_readyz_reports_a_dead_cache_and_broker_and_fails_when_they_are_required(client, settings):
    settings.CELERY_BROKER_URL = DEAD
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": DEAD},
    }
    cache.close()
    try:
        response = client.get("/readyz")
        assert response.status_code == 200  # the database alone is required by default
        body = response.json()
        assert body["checks"]["cache"]["state"] == "down"
        assert "Connection" in body["checks"]["cache"]["error"]
        assert body["checks"]["broker"]["state"] == "down"
        response = client.get("/readyz?require=database,cache")
        assert response.status_code == 503
        assert json.loads(response.content)["failed"] == ["cache"]
    finally:
        cache.close()


def test_readyz_rejects_an_unknown_check_by_name(client):
    response = client.get("/readyz?require=database,disk")
    assert response.status_code == 400
    assert response.json()["error"].startswith("unknown check: disk")
