"""An engineer with only an API key and ``portalctl`` goes from availability to a
delivered cluster's ssh config against a live server and a real Celery worker over
Redis: the staff step (marking the bank transfer paid) is done by staff as today; the
worker provisions and validates the nodes (simulated hardware at 1/1000 of real step
times, the real agent against the fake GPU tools) while ``portalctl watch`` follows it
live; the invoice PDF is rendered by the worker and downloaded."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from billing.models import Invoice, Order, OrderStatus
from billing.orders.services import invoice_mark_paid_by_transfer
from inventory.models import Site
from provisioning.models import ProvisioningRun, RunStatus
from tests.integration.test_provisioning_worker import worker_env
from tests.integration.workers import Worker, scratch_broker_url
from tests.polling import wait_until
from tests.portal.api.test_resources import KEYS

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 300


@pytest.fixture
def worker(settings, tmp_path):
    """A real worker on every queue, on a Redis database of this test's own, sharing the
    live server's media directory (it renders the PDFs the server sends)."""
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    limit = {"unpaid_orders": 100, "held_nodes": 1000}
    settings.SELF_SERVICE_HOLD_LIMITS = {"verified": limit, "unverified": limit}
    env = worker_env(tmp_path, DJANGO_MEDIA_ROOT=str(settings.MEDIA_ROOT))
    started = Worker(broker, env=env, threads=2)
    yield started
    started.stop()


def test_from_availability_to_ssh_config_with_the_cli(live_server, demo, worker, tmp_path):
    out = io.StringIO()
    call_command("api_key_create", "--organisation", demo["org"].name, "--scopes", "*:write",
                 "--name", "engineer", stdout=out, stderr=io.StringIO())  # fmt: skip
    key = out.getvalue().strip().splitlines()[-1]
    env = {**os.environ, "PORTALCTL_CONFIG": str(tmp_path / "portalctl.json")}

    def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", "portalctl", *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert (done.returncode == 0) == ok, (args, done.stdout, done.stderr)
        return done

    def cli_json(*args: str) -> dict:
        return json.loads(cli("--json", *args).stdout)

    cli("configure", "--url", live_server.url, "--key", key)
    start = demo["start"].isoformat()
    where = ["--site", "SZ", "--node-type", demo["h100"].code]
    free = cli_json("availability", *where, "--count", "2", "--start-date", start)
    assert free["can_place"]
    estimate = cli_json("estimate", *where, "--nodes", "2", "--start-date", start)
    assert estimate["currency"] == "CNY" and estimate["gross_total"]
    pub = tmp_path / "id_ed25519.pub"
    pub.write_text(KEYS[0])
    ssh_key = cli_json("ssh-key", "add", "--name", "engineer", "--file", str(pub))
    quote = cli_json("quote", "create", *where, "--nodes", "2", "--start-date", start)
    assert quote["status"] == "sent" and quote["gross_total"] == estimate["gross_total"]
    order = cli_json("quote", "accept", quote["number"], "--name", "Li Wei")
    number = order["number"]
    refused = cli("quote", "accept", quote["number"], "--name", "Li Wei", ok=False)
    assert "error [rule_refused]" in refused.stderr
    cli("order", "keys", number, "--key-id", str(ssh_key["id"]))
    cli("order", "terms", number, "--name", "Li Wei")
    transfer = cli_json("order", "pay", number)
    assert transfer["amount"] == order["gross_total"]

    # Staff see the transfer arrive and mark it paid, as today (the admin's action). The
    # rental starts in a week and the site's lead time is now 8 days: provisioning is due.
    Site.objects.filter(code="SZ").update(lead_time_hours=8 * 24)
    invoice = Invoice.objects.get(number=transfer["invoice"])
    watch = subprocess.Popen(
        [sys.executable, "-m", "portalctl", "watch", number, "--interval", "0.3",
         "--timeout", str(RUN_TIMEOUT + 60)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    invoice_mark_paid_by_transfer(invoice=invoice, reference="BANK-REF-1", actor=demo["admin"])
    order_row = Order.objects.get(number=number)
    assert order_row.status in (OrderStatus.PAID, OrderStatus.PROVISIONING)
    run = wait_until(
        lambda: ProvisioningRun.objects.filter(
            order=order_row, status__in=[RunStatus.DELIVERED, RunStatus.FAILED]
        ).first(),
        timeout=RUN_TIMEOUT,  # generous: the whole suite shares two cores
        message="the worker to deliver the cluster",
    )
    assert run.status == RunStatus.DELIVERED, (run.message, worker.stop()[-4000:])
    watched, errors = watch.communicate(timeout=120)
    assert watch.returncode == 0, (watched, errors)
    states = [line.split()[0] for line in watched.splitlines() if not line.startswith(" ")]
    # Followed live: it saw the run under way before it saw the cluster ready.
    assert states[-1] == "ready" and {"provisioning", "validating"} & set(states[:-1]), watched
    assert any(line.startswith("  ") and "%" in line for line in watched.splitlines())

    ssh_config = cli("ssh-config", number).stdout
    hosts = [line.split()[1] for line in ssh_config.splitlines() if line.startswith("Host ")]
    assert len(hosts) == 2 and "User ubuntu" in ssh_config
    hostfile = cli("hostfile", number).stdout.split()
    assert hostfile == [hosts[0], "slots=8", hosts[1], "slots=8"]

    # The invoice PDF: asked of the worker's documents queue, polled until it is there.
    target = tmp_path / "invoice.pdf"
    cli(
        "--lang", "en", "download", "invoice", invoice.number, "-o", str(target), "--timeout", "180"
    )
    assert target.read_bytes().startswith(b"%PDF")
