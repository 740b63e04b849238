"""Real Celery worker processes for integration tests, on a Redis database of their own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import redis
from django.conf import settings
from django.db import connection

from core import queues

ROOT = Path(__file__).resolve().parents[2]


def scratch_broker_url() -> str:
    """A Redis database that only the test at hand uses (the one after the suite's own),
    emptied first."""
    suite = redis.Redis.from_url(settings.REDIS_URL).connection_pool.connection_kwargs
    url = f"redis://{suite.get('host', '127.0.0.1')}:{suite.get('port', 6379)}/"
    url += str((int(suite.get("db", 0)) + 1) % 16)
    redis.Redis.from_url(url).flushdb()
    return url


def database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


class _Drained:
    """A process whose output (stdout and stderr together) is read as it comes, by a
    thread, as a process supervisor would: a pipe nobody reads fills up (64 KiB) and then
    every thread of the process that logs blocks on its write. The worker's JSON logs
    (a line per task enqueued, started and finished) filled it in a minute or two and
    stalled day two's replacement."""

    proc: subprocess.Popen[str]

    def _drain(self) -> None:
        self._lines: list[str] = []
        stream = self.proc.stdout
        assert stream is not None

        def read() -> None:
            for line in stream:
                self._lines.append(line)

        self._reader = threading.Thread(target=read, name="drain", daemon=True)
        self._reader.start()

    def output(self) -> str:
        """What the process printed so far."""
        return "".join(self._lines)

    def _finish(self, timeout: float) -> str:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=10)
        return self.output()

    def kill(self) -> str:
        """SIGKILL: no clean shutdown, no acknowledgement of the running task."""
        self.proc.send_signal(signal.SIGKILL)
        return self._finish(20)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self._finish(30)


class Worker(_Drained):
    """``celery worker`` on every project queue of ``broker_url``, solo pool (a SIGKILL
    kills the task it runs; ``threads``: that many tasks at once in one process, which a
    SIGKILL kills together), pointed at the test database."""

    def __init__(
        self, broker_url: str, *, env: dict[str, str] | None = None, threads: int = 0
    ) -> None:
        self.name = f"test-{uuid.uuid4().hex[:8]}"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "portal.settings.test",
            "DATABASE_URL": database_url(),
            "REDIS_URL": broker_url,
            "CELERY_BROKER_URL": broker_url,
            "PORTAL_OUTBOX_RELAY_EVERY": "1",
            **(env or {}),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", "worker", "-Q", ",".join(queues.ALL),
             *(["-P", "threads", "-c", str(threads)] if threads else ["-P", "solo"]),
             "-n", f"{self.name}@%h", "--loglevel=INFO",
             "--without-mingle", "--without-gossip", "--without-heartbeat"],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self._drain()


class Beat(_Drained):
    """``celery beat`` on ``broker_url`` (celery-redbeat: its schedule and its lock in that
    Redis), pointed at the test database. ``schedule`` replaces beat's table (the settings'
    one) in that process; ``env`` may shorten the lock (``PORTAL_BEAT_LOCK_TIMEOUT_S``)."""

    def __init__(
        self,
        broker_url: str,
        *,
        schedule: dict[str, dict[str, object]] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "portal.settings.test",
            "DATABASE_URL": database_url(),
            "REDIS_URL": broker_url,
            "CELERY_BROKER_URL": broker_url,
            **(env or {}),
        }
        start = (
            "import json, sys; from portal.celery import app; "
            + (
                f"app.conf.beat_schedule = json.loads({json.dumps(schedule)!r}); "
                if schedule
                else ""
            )
            + "app.start(['beat', '--loglevel=INFO'])"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", start],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self._drain()
