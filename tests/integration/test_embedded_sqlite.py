"""The embedded default (``make run``: SQLite, the filesystem broker) under concurrent
load: signed webhooks arriving together never answer 500 ("database is locked")."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.polling import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec_embedded_test"
CONCURRENT = 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _embedded_env(var_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DJANGO_DEBUG="1",
        PORTAL_VAR_DIR=str(var_dir),
        STRIPE_WEBHOOK_SECRET=SECRET,
    )
    return env


def _signed(event_id: str) -> tuple[bytes, str]:
    body = json.dumps(
        {
            "id": event_id,
            "object": "event",
            "created": int(time.time()),
            "type": "payment_intent.succeeded",
            "data": {
                "object": {
                    "id": f"pi_{event_id}",
                    "object": "payment_intent",
                    "amount": 100,
                    "currency": "cny",
                    "status": "succeeded",
                    "metadata": {},
                }
            },
        }
    ).encode()
    t = int(time.time())
    mac = hmac.new(SECRET.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return body, f"t={t},v1={mac}"


def _post(url: str, event_id: str) -> int:
    body, signature = _signed(event_id)
    request = urllib.request.Request(  # noqa: S310 - loopback only
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Stripe-Signature": signature},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - loopback
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_concurrent_signed_webhooks_on_the_embedded_default_never_answer_500(tmp_path):
    env = _embedded_env(tmp_path)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/stripe/webhook"
    try:
        wait_until(  # the server answers
            lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() or True,
            timeout=60,
            interval=0.2,
            message="the embedded server to start",
            retry_on=(OSError,),
            give_up_if=lambda: server.poll() is not None,
        )
        for round_ in range(3):
            ids = [f"evt_embedded_{round_}_{i}" for i in range(CONCURRENT)]
            with ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
                statuses = list(pool.map(lambda i: _post(url, i), ids))
            assert statuses == [200] * CONCURRENT, statuses
    finally:
        server.terminate()
        log, _ = server.communicate(timeout=30)
    assert "database is locked" not in log, log[-3000:]
    with sqlite3.connect(tmp_path / "portal.sqlite3") as db:
        stored = db.execute("SELECT COUNT(*) FROM billing_stripeevent").fetchone()[0]
        waiting = db.execute("SELECT COUNT(*) FROM core_outboxmessage").fetchone()[0]
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert stored == 3 * CONCURRENT  # each event stored once
    assert waiting == 3 * CONCURRENT  # and its processing handed to the outbox
    assert mode == "wal"
