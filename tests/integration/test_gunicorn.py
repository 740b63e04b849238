"""Issue 23, points 1 and 2: the web under gunicorn with the repository's configuration
(deploy/gunicorn.conf.py: gthread, two processes), against the test database. A
PostgreSQL restart (every server connection of the portal's database ended, as a
restart ends them) costs no request: each process checks its kept connection before
reusing it (CONN_HEALTH_CHECKS) and opens a new one. /metrics adds up the request
metrics of both processes."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from django.db import connection

from tests.integration.test_day2 import METRICS_TOKEN, free_port
from tests.integration.workers import ROOT, database_url
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _get(url: str, token: str = "") -> tuple[int, str]:
    request = urllib.request.Request(url)  # noqa: S310
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def gunicorn(tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings.test",
        "DATABASE_URL": database_url(),
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "2",
        "GUNICORN_THREADS": "2",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "PORTAL_METRICS_TOKEN": METRICS_TOKEN,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_until(
        lambda: _get(url + "/healthz")[0] == 200,
        timeout=90,
        interval=0.3,
        retry_on=(OSError,),
        give_up_if=lambda: proc.poll() is not None,
        message="gunicorn to answer /healthz",
    )
    yield url
    proc.terminate()
    out, _ = proc.communicate(timeout=40)
    assert "Traceback" not in out, out[-3000:]


def test_a_postgresql_restart_costs_no_request_and_metrics_add_up_both_processes(gunicorn):
    for _ in range(8):  # both processes serve, and each keeps its connection
        assert _get(gunicorn + "/en/")[0] == 200
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        (ended,) = cursor.fetchone()
    assert ended >= 1  # the web's kept connections
    statuses = [_get(gunicorn + "/en/")[0] for _ in range(8)]
    assert statuses == [200] * 8
    status, text = _get(gunicorn + "/metrics", METRICS_TOKEN)
    assert status == 200
    served = sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("django_http_responses_total_by_status_view_method_total{")
        and 'view="catalog"' in line
        and 'status="200"' in line
    )
    assert served == 16
