"""The monitoring panel in Chromium, in both languages, on live data: Debian's Prometheus
scrapes the live server's simulated exporters; the charts move without a reload; a
second organisation's customer sees none of the first one's series."""

from __future__ import annotations

import socket
import subprocess
import urllib.request
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from accounts.models import Membership, Organisation
from billing.models import Order
from inventory.models import Node
from provisioning.models import ProvisioningRun, RunKind, RunNode, RunStatus
from provisioning.telemetry import prometheus
from tests import factories
from tests.billing.test_payments import make_order
from tests.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

POINTS = "() => [...document.querySelectorAll('#chart-sm polyline')].map(p => p.getAttribute('points')).join('|')"  # noqa: E501


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serving(order: Order, node: Node) -> None:
    start = timezone.now() - timedelta(hours=1)
    Order.objects.filter(pk=order.pk).update(start_at=start, status="ready")
    run = ProvisioningRun.objects.create(
        order=order, kind=RunKind.PROVISION, status=RunStatus.DELIVERED
    )
    RunNode.objects.create(run=run, node=node, slot=0, delivered_at=start)
    Node.objects.filter(pk=node.pk).update(status="in_service")  # the workload runs


def logged_in(pages, user, name: str):
    login = Client()
    login.force_login(user)
    page = pages.new(name)
    page.context.add_cookies(
        [
            {
                "name": django_settings.SESSION_COOKIE_NAME,
                "value": login.cookies[django_settings.SESSION_COOKIE_NAME].value,
                "url": pages.base_url,
            }
        ]
    )
    return page


def test_the_panel_moves_in_both_languages_and_shows_no_one_elses_series(
    pages, live_server, settings, tmp_path, django_user_model
):
    call_command("seed_demo", verbosity=0)
    demo = factories.demo_objects()
    mine, theirs = make_order(demo, nodes=1), make_order(demo, nodes=1)
    rival_org = Organisation.objects.create(name="Rival Lab")
    Order.objects.filter(pk=theirs.pk).update(organisation=rival_org)
    rival = django_user_model.objects.create_user("rival", "rival@example.com", "pw-rival-2026")
    Membership.objects.create(organisation=rival_org, user=rival, role="owner")
    a, b = Node.objects.filter(node_type=demo["h100"], status="available").order_by("hostname")[:2]
    serving(mine, a)
    serving(theirs, b)

    settings.PORTAL_TELEMETRY_TOKEN = token = "e2e-token"
    settings.PORTAL_TELEMETRY_SIMULATED_TARGET = live_server.url.split("://", 1)[1]
    settings.PORTAL_PANEL_REFRESH_S = 2
    port = free_port()
    proc = prometheus.prometheus_start(
        workdir=tmp_path / "prometheus",
        port=port,
        discovery_url=live_server.url + "/telemetry/targets?status=in_service",
        token=token,
        scrape_s=1.0,
        retention="1d",
    )
    settings.PORTAL_PROMETHEUS_URL = url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=1):  # noqa: S310
                    pass
                rows = prometheus.query("DCGM_FI_PROF_SM_ACTIVE")
            except (OSError, prometheus.PrometheusUnavailable):
                return False
            return {r.labels["node"] for r in rows} == {a.hostname, b.hostname}

        wait_until(ready, timeout=40, interval=0.5, message="both nodes scraped")

        page = logged_in(pages, demo["customer"], "customer")
        for lang, title, absent in (
            ("en", "SM activity", "SM 活跃度"),
            ("zh-hans", "SM 活跃度", "SM activity"),
        ):
            page.goto(f"/{lang}/account/orders/{mine.number}/monitoring/")
            page.evaluate("() => { window.__sameDocument = true; }")
            page.wait_for_selector("#chart-sm circle")
            text = page.locator("main").inner_text() if page.locator("main").count() else ""
            assert title in page.content() and absent not in page.content()
            first = page.evaluate(POINTS)
            assert first
            page.wait_for_function(
                f"(before) => ({POINTS})() !== before", arg=first, timeout=15_000
            )
            assert page.evaluate("() => window.__sameDocument === true"), "reloaded"
            html = page.content()
            assert a.hostname in html and b.hostname not in html, text[:200]

        other = logged_in(pages, rival, "rival")
        other.goto(f"/en/account/orders/{theirs.number}/monitoring/")
        other.wait_for_selector("#chart-sm circle")
        html = other.content()
        assert b.hostname in html and a.hostname not in html
        response = other.goto(f"/en/account/orders/{mine.number}/monitoring/")
        assert response is not None and response.status == 404
        pages.assert_no_server_errors()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
