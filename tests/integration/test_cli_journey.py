"""An engineer with only an API key and ``portalctl`` goes from availability to a
delivered cluster's ssh config against a live server; the staff step (marking the bank
transfer paid) is done by staff as today, and the provisioning worker's steps are driven
in this process as in tests/provisioning/test_runs.py (simulated hardware)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from billing.invoicing import documents as invoice_documents
from billing.models import Invoice, Order, OrderStatus
from billing.orders.services import invoice_mark_paid_by_transfer
from portal.celery import app
from provisioning import runs
from provisioning.validation import interface
from tests.portal.api.test_resources import KEYS
from tests.provisioning.test_runs import drive

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def simulated(settings, monkeypatch):
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0
    settings.PORTAL_SIMULATED_FAIL = {}
    limit = {"unpaid_orders": 100, "held_nodes": 1000}
    settings.SELF_SERVICE_HOLD_LIMITS = {"verified": limit, "unverified": limit}

    def accept_all(targets, **kwargs):
        return interface.ValidationOutcome(
            [interface.NodeResult(t.node_id, t.hostname, True, [], {"ok": True}) for t in targets],
            True,
        )

    monkeypatch.setattr(interface, "validate_nodes", accept_all)


def test_from_availability_to_ssh_config_with_the_cli(live_server, demo, simulated, tmp_path):
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

    # Staff see the transfer arrive and mark it paid, as today (the admin's action).
    invoice = Invoice.objects.get(number=transfer["invoice"])
    invoice_mark_paid_by_transfer(invoice=invoice, reference="BANK-REF-1", actor=demo["admin"])
    assert Order.objects.get(number=number).status == OrderStatus.PAID
    # The provisioning worker's part (the run's canvas), in this process.
    run = drive(runs.provisioning_begin(order_id=Order.objects.get(number=number).pk))
    assert run.status == "delivered"

    watched = cli("watch", number, "--interval", "0.2", "--timeout", "30")
    assert "ready" in watched.stdout
    ssh_config = cli("ssh-config", number).stdout
    hosts = [line.split()[1] for line in ssh_config.splitlines() if line.startswith("Host ")]
    assert len(hosts) == 2 and "User ubuntu" in ssh_config
    hostfile = cli("hostfile", number).stdout.split()
    assert hostfile == [hosts[0], "slots=8", hosts[1], "slots=8"]

    kind = invoice_documents.INVOICE
    app.tasks[kind.render_task](*kind.task_args(invoice, language="en"))
    target = tmp_path / "invoice.pdf"
    cli("--lang", "en", "download", "invoice", invoice.number, "-o", str(target), "--timeout", "10")
    assert target.read_bytes().startswith(b"%PDF")
