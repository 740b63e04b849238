"""The customer's monitoring panel against a real Prometheus holding two organisations'
series (backfilled with ``promtool tsdb create-blocks-from openmetrics``, then served by
Debian's prometheus): a customer sees only their order's nodes, within each node's tenure,
whatever they put in the query string; both languages; CSV and JSON export."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from accounts.models import Membership, Organisation
from billing.models import Order
from inventory.models import Node
from portal.support.models import Ticket
from provisioning.health import utilisation
from provisioning.models import (
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunStatus,
    UtilisationAlert,
)
from provisioning.telemetry import exposition as m
from provisioning.telemetry import prometheus
from tests import factories
from tests.billing.test_payments import make_order
from tests.polling import wait_until

pytestmark = [pytest.mark.integration]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def delivered(order: Order, nodes: list[Node]) -> None:
    start = timezone.now() - timedelta(hours=2)
    Order.objects.filter(pk=order.pk).update(start_at=start, status="ready")
    run = ProvisioningRun.objects.create(
        order=order, kind=RunKind.PROVISION, status=RunStatus.DELIVERED
    )
    for i, node in enumerate(nodes):
        RunNode.objects.create(run=run, node=node, slot=i, delivered_at=start)


@pytest.fixture
def two_orgs(demo, django_user_model):
    mine = make_order(demo, nodes=1)
    theirs = make_order(demo, nodes=1)
    other = Organisation.objects.create(name="Rival Lab")
    Order.objects.filter(pk=theirs.pk).update(organisation=other)
    rival = django_user_model.objects.create_user("rival", "rival@example.com", "pw-rival-2026")
    Membership.objects.create(organisation=other, user=rival, role="owner")
    a, b = Node.objects.filter(node_type=demo["h100"], status="available").order_by("hostname")[:2]
    delivered(mine, [a])
    delivered(theirs, [b])
    mine.refresh_from_db()
    return {"mine": mine, "theirs": theirs, "a": a, "b": b, "rival": rival}


@pytest.fixture
def backfilled(two_orgs, settings, tmp_path):
    """Ten minutes of SM activity for both orders' nodes, one sample every 15 s."""
    now = time.time()
    lines = [f"# TYPE {m.SM_ACTIVE} gauge"]
    for t in range(int(now) - 600, int(now) - 5, 15):
        for host, value in ((two_orgs["a"].hostname, 0.9), (two_orgs["b"].hostname, 0.42)):
            for gpu in range(2):
                labels = f'node="{host}",gpu="{gpu}",UUID="GPU-{host}-{gpu}",serial="S{gpu}"'
                lines.append(f"{m.SM_ACTIVE}{{{labels}}} {value} {t}")
    lines.append(f"# TYPE {m.GPU_TEMP} gauge")
    for host in (two_orgs["a"].hostname, two_orgs["b"].hostname):
        labels = f'node="{host}",gpu="0",UUID="GPU-{host}-0",serial="SER-{host}"'
        lines.append(f"{m.GPU_TEMP}{{{labels}}} 60 {int(now) - 30}")
    proc = serve_backfilled(lines, tmp_path, settings, expect=(m.SM_ACTIVE, 4))
    yield two_orgs
    proc.terminate()
    proc.wait(timeout=10)


def serve_backfilled(
    lines: list[str], tmp_path, settings, *, expect: tuple[str, int]
) -> subprocess.Popen[bytes]:
    """Debian's Prometheus serving ``lines`` (OpenMetrics with timestamps, backfilled
    into blocks by promtool); ``PORTAL_PROMETHEUS_URL`` points at it once ``expect``
    (metric, series count) answers."""
    source = tmp_path / "series.om"
    source.write_text("\n".join([*lines, "# EOF"]) + "\n")
    data = tmp_path / "data"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        check=True,
        capture_output=True,
    )
    port = free_port()
    (tmp_path / "p.yml").write_text("global: {}\n")
    proc = subprocess.Popen(
        [
            prometheus.prometheus_binary() or "prometheus",
            f"--config.file={tmp_path / 'p.yml'}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    settings.PORTAL_PROMETHEUS_URL = url
    metric, count = expect

    def has_data() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/api/v1/query?query={metric}", timeout=1) as r:  # noqa: S310
                return len(json.load(r)["data"]["result"]) == count
        except OSError:
            return False

    wait_until(has_data, timeout=30, interval=0.1, message="Prometheus with the series")
    return proc


CRAFTED = [
    "",
    "?metric=sm&range=hour",
    '?range=hour&node=~".%2B"',
    "?range=day&node={b}&gpu=0",
    '?range=week"}}%20or%20DCGM_FI_PROF_SM_ACTIVE{{node="{b}"',
    "?range=hour&sel=node%3D~%22.*%22",
]


@pytest.mark.django_db
def test_a_customer_sees_only_their_own_series_whatever_the_query_string(backfilled, client, demo):
    mine, a, b = backfilled["mine"], backfilled["a"], backfilled["b"]
    client.force_login(demo["customer"])
    base = f"/en/account/orders/{mine.number}/monitoring/"
    for crafted in CRAFTED:
        query = crafted.format(b=b.hostname)
        chart = client.get(base + "chart/sm/" + query)
        assert chart.status_code == 200
        html = chart.content.decode()
        assert a.hostname in html and "<polyline" in html, query
        assert b.hostname not in html, query
        for fmt in ("json", "csv"):
            export = client.get(base + f"export.{fmt}" + (query or "?") + "&metric=sm")
            assert export.status_code == 200
            body = export.content.decode()
            assert a.hostname in body and b.hostname not in body, (fmt, query)
    rows = json.loads(client.get(base + "export.json?metric=sm&range=hour").content)["series"]
    assert {r["node"] for r in rows} == {a.hostname}
    # A ticket about a GPU by its serial (the series' ``serial`` label) finds the order and
    # the node it is in; the other organisation's serial is not found.
    form = {"category": "hardware", "priority": "high", "subject": "GPU 0", "body": "ECC"}
    answer = client.post("/en/account/support/new", {**form, "gpu_serial": f"SER-{a.hostname}"})
    assert answer.status_code == 302
    ticket = Ticket.objects.get()
    assert (ticket.order, ticket.node, ticket.gpu_index) == (mine, a, "0")
    refused = client.post("/en/account/support/new", {**form, "gpu_serial": f"SER-{b.hostname}"})
    assert "No GPU with serial SER-" in refused.content.decode() and Ticket.objects.count() == 1
    assert {r["gpu"] for r in rows} == {"0", "1"}
    assert all(abs(r["value"] - 90.0) < 0.01 for r in rows)  # SM activity in %
    # The page itself, in both languages: the node, its GPU serial, no one else's.
    for lang, word in (("en", "Monitoring"), ("zh-hans", "监控")):
        page = client.get(f"/{lang}/account/orders/{mine.number}/monitoring/")
        text = page.content.decode()
        assert page.status_code == 200 and word in text
        assert f"SER-{a.hostname}" in text and b.hostname not in text
    # The other organisation's order is not there at all for this customer.
    theirs = backfilled["theirs"]
    assert client.get(f"/en/account/orders/{theirs.number}/monitoring/").status_code == 404
    assert client.get(f"/en/account/orders/{theirs.number}/monitoring/chart/sm/").status_code == 404
    # And the rival sees theirs only.
    client.force_login(backfilled["rival"])
    html = client.get(f"/en/account/orders/{theirs.number}/monitoring/chart/sm/").content.decode()
    assert b.hostname in html and a.hostname not in html


@pytest.mark.django_db
def test_a_spare_shows_only_from_when_it_joined(backfilled, client, demo):
    """A node's series before it served the order belong to nobody the customer knows."""
    mine, a = backfilled["mine"], backfilled["a"]
    joined = timezone.now() - timedelta(minutes=3)
    NodeSwap.objects.create(
        order=mine,
        failed_node=backfilled["b"],
        spare_node=a,
        reason="test",
        failed_at=joined,
        restored_at=joined,
    )
    client.force_login(demo["customer"])
    rows = json.loads(
        client.get(
            f"/en/account/orders/{mine.number}/monitoring/export.json?metric=sm&range=hour"
        ).content
    )["series"]
    assert rows
    assert min(r["time"] for r in rows) >= joined.isoformat()[:19]


def utilisation_lines(series: dict[str, tuple[float, float, float]], *, minutes: int) -> list[str]:
    """``minutes`` of samples every 15 s up to now per host: (GPU util %, SM activity,
    framebuffer used fraction of 80 GiB), two GPUs each."""
    now = int(time.time())
    lines = []
    for metric, kind in ((m.GPU_UTIL, 0), (m.SM_ACTIVE, 1), (m.FB_USED, 2), (m.FB_FREE, 3)):
        lines.append(f"# TYPE {metric} gauge")
        for t in range(now - minutes * 60, now - 5, 15):
            for host, (util, sm, used) in series.items():
                value = (util, sm, used * 81920, (1 - used) * 81920)[kind]
                for gpu in range(2):
                    lines.append(f'{metric}{{node="{host}",gpu="{gpu}"}} {value} {t}')
    return lines


@pytest.mark.django_db
def test_low_utilisation_raises_one_alert_with_its_pointer_and_staff_answer_it(
    two_orgs, settings, tmp_path, client, demo, mailoutbox
):
    """The seeds: under 75 % for the configured time tells the customer what the metrics
    point at and puts the order on the staff list until an engineer answers. Against a
    real Prometheus: our order at 30 % with full memory and half-idle SMs (memory-bound),
    the rival's at 92 % (nothing); a window longer than the data says nothing."""
    mine, a, b = two_orgs["mine"], two_orgs["a"], two_orgs["b"]
    lines = utilisation_lines(
        {a.hostname: (30.0, 0.3, 0.95), b.hostname: (92.0, 0.9, 0.5)}, minutes=10
    )
    proc = serve_backfilled(lines, tmp_path, settings, expect=(m.GPU_UTIL, 4))
    try:
        settings.PORTAL_PROMETHEUS_SCRAPE_INTERVAL_S = 15.0
        settings.PORTAL_LOW_UTIL_THRESHOLD = 0.75
        # Fail closed: 20 minutes asked, 10 known: no claim either way.
        settings.PORTAL_LOW_UTIL_MINUTES = 20
        assert utilisation.low_utilisation_check() == []
        settings.PORTAL_LOW_UTIL_MINUTES = 8
        raised = utilisation.low_utilisation_check()
        assert [alert.order for alert in raised] == [mine]
        alert = raised[0]
        assert abs(alert.utilisation - 0.30) < 0.01 and alert.pointer == "memory_bound"
        # Asked again a minute later: still one open alert.
        assert utilisation.low_utilisation_check() == []
        # The customer is told what the metrics point at, in the order's language.
        assert factories.run_outbox("provisioning.tasks.utilisation_email") == 1
        [mail] = mailoutbox
        assert mine.number in mail.body and "30" in mail.body
        with translation.override(mine.quote.language or "en"):
            assert str(utilisation.POINTERS["memory_bound"]) in mail.body
        # ... and on the monitoring panel.
        client.force_login(demo["customer"])
        panel_page = client.get(f"/en/account/orders/{mine.number}/monitoring/").content.decode()
        assert f'data-alert="{alert.pk}"' in panel_page and "memory-bound" in panel_page
        # The staff list: raised, not yet answered; an engineer answers it.
        client.force_login(demo["admin"])
        staff_list = reverse("admin:provisioning_utilisationalert_changelist")
        listing = client.get(staff_list).content.decode()
        assert str(mine) in listing or mine.number in listing
        client.post(
            staff_list,
            {"action": "answer", "_selected_action": [alert.pk]},
        )
        alert.refresh_from_db()
        assert alert.answered_at is not None and alert.answered_by == demo["admin"]
        assert alert.answered_at >= alert.raised_at
        # Answered: not raised again until a new full window has passed.
        assert utilisation.low_utilisation_check() == []
        UtilisationAlert.objects.filter(pk=alert.pk).update(
            answered_at=timezone.now() - timedelta(minutes=9)
        )
        assert [a.order for a in utilisation.low_utilisation_check()] == [mine]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
