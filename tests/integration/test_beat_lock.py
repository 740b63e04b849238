"""Issue 23, point 1: exactly one beat. Two real beat processes on one broker: the one
that holds celery-redbeat's lock sends each job once per interval, the other sends
nothing; when the first is killed, the second takes over and still sends once per
interval."""

from __future__ import annotations

import json
import time

import pytest
import redis

from tests.integration.workers import Beat, scratch_broker_url
from tests.polling import wait_until

INTERVAL_S = 1.0
TASK = "core.tasks.outbox_relay_task"  # on the default queue; no worker runs it here
LOCK_TIMEOUT_S = 4


def _sent(client: redis.Redis) -> int:
    """How many messages of TASK wait in the default queue (nothing consumes them)."""
    return sum(
        1 for raw in client.lrange("default", 0, -1) if json.loads(raw)["headers"]["task"] == TASK
    )


@pytest.mark.django_db(transaction=True)
def test_a_second_beat_sends_nothing_until_the_first_dies():
    broker = scratch_broker_url()
    client = redis.Redis.from_url(broker)
    env = {
        "PORTAL_BEAT_LOCK_TIMEOUT_S": str(LOCK_TIMEOUT_S),
        "PORTAL_BEAT_MAX_LOOP_INTERVAL_S": "1",
    }
    schedule = {"tick": {"task": TASK, "schedule": INTERVAL_S}}
    first = Beat(broker, schedule=schedule, env=env)
    wait_until(
        lambda: client.exists("redbeat::lock"),
        timeout=60,
        give_up_if=lambda: first.proc.poll() is not None,
        message=lambda: (
            "the first beat to take the lock"
            + (first.stop()[-2000:] if first.proc.poll() is not None else "")
        ),
    )
    second = Beat(broker, schedule=schedule, env=env)
    try:
        wait_until(lambda: _sent(client) >= 1, timeout=30)
        # Let the second beat start and wait on the lock, then count over a window.
        time.sleep(3)
        before, began = _sent(client), time.monotonic()
        time.sleep(6)
        sent, window = _sent(client) - before, time.monotonic() - began
        # Once per interval (one beat); two beats would send about twice as many.
        assert window / INTERVAL_S - 2 <= sent <= window / INTERVAL_S + 1, (sent, window)
        assert second.proc.poll() is None  # alive, waiting for the lock

        first_out = first.kill()
        assert "beat: Acquired lock" in first_out
        # The lock expires LOCK_TIMEOUT_S after the last renewal: the second takes over.
        killed_at = _sent(client)
        wait_until(lambda: _sent(client) > killed_at, timeout=LOCK_TIMEOUT_S + 30)
        before, began = _sent(client), time.monotonic()
        time.sleep(4)
        sent, window = _sent(client) - before, time.monotonic() - began
        assert window / INTERVAL_S - 2 <= sent <= window / INTERVAL_S + 1, (sent, window)
    finally:
        second_out = second.stop()
        first.stop()
    assert "beat: Acquired lock" in second_out
