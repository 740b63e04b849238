"""The customer's order page in a real browser while a simulated provisioning run
proceeds: the progress bars move (read at three times, each higher) through htmx polling,
without a reload of the page."""

from __future__ import annotations

import time

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import translation

from billing.orders.services import order_mark_paid
from provisioning import runs
from provisioning.models import RunNode, StepName
from provisioning.validation import interface
from tests import factories
from tests.billing.test_payments import make_order

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

BARS = "() => [...document.querySelectorAll('#provisioning progress')].map(p => p.value)"


def advance(run_id: int, upto: str) -> None:
    """What the workers do: every node of the run through its steps up to ``upto``."""
    for slot in RunNode.objects.filter(run_id=run_id).values_list("slot", flat=True):
        assert runs.slot_advance(run_id=run_id, slot=slot, upto=upto) == "ok"


def test_the_progress_bars_move_without_a_reload(pages, settings, monkeypatch, celery_sent):
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0  # each step's hardware time: none
    settings.PORTAL_SIMULATED_FAIL = {}
    monkeypatch.setattr(
        interface,
        "validate_nodes",
        lambda targets, **kw: interface.ValidationOutcome(
            [interface.NodeResult(t.node_id, t.hostname, True, [], {}) for t in targets], True
        ),
    )
    call_command("seed_demo", verbosity=0)
    demo = factories.demo_objects()
    order, _ = order_mark_paid(order=make_order(demo, nodes=2))
    run = runs.provisioning_begin(order_id=order.pk)  # what the beat job does when due

    login = Client()
    login.force_login(demo["customer"])
    page = pages.new("customer")
    page.context.add_cookies(
        [
            {
                "name": django_settings.SESSION_COOKIE_NAME,
                "value": login.cookies[django_settings.SESSION_COOKIE_NAME].value,
                "url": pages.base_url,
            }
        ]
    )
    with translation.override("en"):
        page.goto(reverse("dashboard_order", args=[order.number]))
    page.evaluate("() => { window.__sameDocument = true; }")
    first = page.evaluate(BARS)
    assert len(first) == 3, first  # the run's bar and one per node
    assert all(v == 0 for v in first), first

    readings = [first]
    started = time.monotonic()
    for upto in (StepName.POWER_ON, StepName.CHECK_OS):
        advance(run.pk, upto)
        before = readings[-1]
        # The section polls every 2 s: wait for the bars to grow, at most 8 s.
        page.wait_for_function(
            f"(before) => {{ const now = ({BARS})(); "
            "return now.length === before.length && now.every((v, i) => v > before[i]); }",
            arg=before,
            timeout=8_000,
        )
        readings.append(page.evaluate(BARS))
    assert readings[1][0] < readings[2][0] < 100, readings  # validation still to come
    assert page.evaluate("() => window.__sameDocument === true"), "the page was reloaded"
    assert time.monotonic() - started < 16
    assert "check the OS answers" in page.locator("#provisioning").inner_text()
    pages.assert_no_server_errors()
