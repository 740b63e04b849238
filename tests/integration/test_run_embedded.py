"""Issue 25, point 13: ``run_embedded`` with a broker that is not the filesystem one
(Redis) starts on a fresh data folder and keeps its web server, worker and beat running
(beat's schedule file lived under ``var/celery``, which only the filesystem broker used
to create; with a Redis broker beat keeps its schedule and its one-beat lock in Redis,
celery-redbeat)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import redis

from tests.integration.workers import scratch_broker_url
from tests.polling import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - loopback only
            return True
    except OSError as exc:
        return getattr(exc, "code", None) is not None  # any HTTP answer: it is up


def test_run_embedded_with_redis_on_a_fresh_data_folder_keeps_running(tmp_path):
    var_dir = tmp_path / "fresh-var"  # does not exist yet
    broker = scratch_broker_url()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DJANGO_DEBUG="1",
        PORTAL_VAR_DIR=str(var_dir),
        REDIS_URL=broker,
    )
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_embedded", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_until(lambda: _answers(f"http://127.0.0.1:{port}/healthz"), timeout=240)
        # Beat runs and holds its lock (issue 23: one beat, its schedule in the broker).
        beat = redis.Redis.from_url(broker)
        wait_until(lambda: beat.exists("redbeat::lock"), timeout=240)
        time.sleep(3)  # run_embedded stops everything within a second of one exiting
        assert process.poll() is None, process.stderr.read().decode()[-3000:]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
