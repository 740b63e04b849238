"""The operations console in a real browser, in both languages: the reservation calendar
at 2,000 nodes (paged rows, the order and customer on hover, a click opens the order) and
the maintenance flow (the affected order and customer listed before confirming, the
override reason, the customer told by email)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from billing.orders import services as orders
from inventory.models import MaintenancePlan, Reservation, Site
from portal.celery import app
from tests import factories
from tests.billing.test_contracts import make_order

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

NOTIFY = "portal.operations.tasks.maintenance_notify_task"
EMAIL = "portal.operations.tasks.maintenance_email_task"


def _login(pages, user, lang: str):
    client = Client()
    client.force_login(user)
    page = pages.new(user.username)
    page.context.add_cookies(
        [
            {
                "name": django_settings.SESSION_COOKIE_NAME,
                "value": client.cookies[django_settings.SESSION_COOKIE_NAME].value,
                "url": pages.base_url,
            },
            {"name": django_settings.LANGUAGE_COOKIE_NAME, "value": lang, "url": pages.base_url},
        ]
    )
    return page


def _run(sent, name: str) -> int:
    ran = 0
    for task in [t for t in sent if t.name == name]:
        app.tasks[name](*task.args)
        sent.remove(task)
        ran += 1
    return ran


@pytest.mark.parametrize("lang", ["en", "zh-hans"])
def test_calendar_at_2000_nodes_and_the_maintenance_flow(pages, celery_sent, lang):
    call_command("seed_demo", verbosity=0)
    demo = factories.demo_objects()
    order = make_order(demo, term="month", duration=1, start=date(2027, 1, 1))
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-1", actor=demo["admin"]
    )
    booked = list(Reservation.objects.filter(group=order.reservation_group).select_related("node"))
    start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    factories.operations_fleet(2000, start=start, prefix="e2e", site_code="EE")
    fleet_site = Site.objects.get(code="EE")
    ops = get_user_model().objects.get(username="ops")
    page = _login(pages, ops, lang)

    # The calendar: 2,000 nodes, a quarter, 100 rows a page grouped by unit and rack.
    page.goto(f"/{lang}/staff/operations/calendar/?zoom=quarter&site={fleet_site.pk}")
    rows = page.locator(".gantt-row[data-node]")
    assert rows.count() == 100
    assert "2000" in page.locator("main").inner_text()
    assert page.locator(".gantt-group.unit").first.inner_text().endswith("e2e-SU00")
    assert page.locator(".gantt-track .bar.firm").count() == 100
    # Nobody asks for these nodes: their expiring holds are no conflict.
    assert page.locator(".gantt-track .bar.hold.conflict").count() == 0
    page.locator("#page-next").click()
    assert page.locator(".gantt-row[data-node]").first.get_attribute("data-node") == "e2e-00100"

    # The customer's booking: order and customer on hover; a click opens the order.
    page.goto(
        f"/{lang}/staff/operations/calendar/?zoom=quarter&start=2027-01-01&site={order.site_id}"
    )
    node = booked[0].node.hostname
    bar = page.locator(f'.gantt-row[data-node="{node}"] .bar.firm')
    title = bar.get_attribute("title")
    assert order.number in title and demo["org"].name in title
    bar.click()
    page.wait_for_url(f"**/admin/billing/order/{order.pk}/change/")

    # Maintenance over the booking: preview lists the order and customer; confirm with
    # a reason; the customer is told.
    page.goto(f"/{lang}/staff/operations/maintenance/new/")
    page.select_option("#id_site", str(order.site_id))
    page.fill("#id_title", "Replace PDU")
    page.check("input[name=scope][value=nodes]")
    page.fill("#id_hostnames", node)
    window = timezone.localtime(order.start_at + timedelta(days=4), order.site.tzinfo)
    page.fill("#id_start", window.strftime("%Y-%m-%dT02:00"))
    page.fill("#id_end", window.strftime("%Y-%m-%dT06:00"))
    page.fill("#id_notice_days", "60")
    page.click("#preview")
    affected = page.locator("#affected").inner_text()
    assert order.number in affected and demo["org"].name in affected and node in affected
    assert not MaintenancePlan.objects.exists()
    page.fill("#id_override_reason", "PDU smoking")
    page.click("#confirm")
    page.wait_for_url("**/staff/operations/maintenance/*/")
    plan = MaintenancePlan.objects.get()
    assert plan.unplanned
    assert _run(celery_sent, NOTIFY) == 1  # what the worker does
    assert _run(celery_sent, EMAIL) == 1
    page.reload()
    assert demo["org"].name in page.locator("#notices").inner_text()
    assert page.locator("#plan-announced").inner_text().strip() != "—"
    sent = mail.outbox[-1]
    assert order.number in sent.body and node in sent.body
    pages.assert_no_server_errors()
