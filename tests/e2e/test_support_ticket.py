"""A support ticket in Chromium, in both languages: the customer opens it about a node of
their order, sees its clocks running; support finds it at the top of the queue, takes
it, answers with a saved reply and waits on the customer (first response met, the
resolution clock paused); the customer answers (the clock runs again); support resolves
it; the customer sees it resolved with both clocks met, and the replies went out by email."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from portal.support.models import SavedReply, Ticket
from tests import factories
from tests.billing.test_payments import make_order
from tests.support.conftest import deliver
from tests.zh_text import english_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


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


def states(page) -> list[str]:
    return page.eval_on_selector_all(".clocks [data-clock]", "els => els.map(e => e.dataset.state)")


def test_a_ticket_from_the_customer_through_the_queue_to_resolution(pages, celery_sent):
    call_command("seed_demo", verbosity=0)
    demo = factories.demo_objects()
    order = make_order(demo, nodes=1)
    node = deliver(order)
    support = get_user_model().objects.get(username="support")
    SavedReply.objects.create(title="NCCL", language="en", body="Please run with NCCL_DEBUG=INFO.")
    customer = logged_in(pages, demo["customer"], "customer")
    staff = logged_in(pages, support, "support")
    for lang, subject in (("en", "Training stalls"), ("zh-hans", "训练卡住")):
        customer.goto(f"/{lang}/account/support/new?order={order.number}")
        customer.select_option("select[name=node]", node.hostname)
        customer.select_option("select[name=category]", "hardware")
        customer.select_option("select[name=priority]", "urgent")
        customer.fill("input[name=subject]", subject)
        customer.fill("textarea[name=body]", "NCCL hangs after step 300.")
        customer.click("#ticket-form button[type=submit]")
        customer.wait_for_selector("#ticket-status")
        ticket = Ticket.objects.get(subject=subject)
        assert states(customer) == ["running", "running"]
        assert customer.locator("#ticket-status").get_attribute("class") == "status status-open"

        staff.goto(f"/{lang}/staff/support/")
        assert staff.locator("#queue tbody tr").first.get_attribute("data-ticket") == str(ticket.pk)
        staff.click(f"#queue a[href$='/tickets/{ticket.pk}/']")
        staff.select_option("#assign-form select[name=assignee]", str(support.pk))
        staff.fill("#assign-form input[name=reason]", "on shift")
        staff.click("#assign-form button[type=submit]")
        staff.wait_for_selector("#assignee:has-text('support')")
        staff.select_option("#reply-form select[name=saved_reply]", label="NCCL (en)")
        staff.check("#reply-form input[name=wait_for_customer]")
        staff.click("#reply-form button[type=submit]")
        staff.wait_for_selector("#ticket-status.status-waiting")
        assert states(staff) == ["met", "paused"]

        customer.reload()
        assert "NCCL_DEBUG=INFO" in customer.locator("#conversation").inner_text()
        assert customer.locator("#waiting").count() == 1 and states(customer) == ["met", "paused"]
        customer.fill("#reply-form textarea[name=body]", "Log attached: ring 0 stalls.")
        customer.click("#reply-form button[type=submit]")
        customer.wait_for_selector("#ticket-status.status-open")
        assert states(customer) == ["met", "running"]

        staff.reload()
        assert "ring 0 stalls" in staff.locator("#conversation").inner_text()
        staff.fill("#resolve-form textarea[name=resolution]", "Pinned NCCL_ALGO=Ring.")
        staff.click("#resolve-form button[type=submit]")
        staff.wait_for_selector("#ticket-status.status-resolved")

        customer.reload()
        assert states(customer) == ["met", "met"]
        assert "Pinned NCCL_ALGO=Ring." in customer.locator("#conversation").inner_text()
        if lang == "zh-hans":
            data = (subject, node.hostname, order.number, ticket.reference, "NCCL", "NCCL_DEBUG",
                    "INFO", "NCCL_ALGO", "Ring", "Log attached: ring 0 stalls.",
                    "NCCL hangs after step 300.", "Please run with NCCL_DEBUG=INFO.",
                    "Pinned NCCL_ALGO=Ring.", "support", "customer",  # and the contract
                    *order.contracts.values_list("number", flat=True))  # fmt: skip
            words = english_words(customer.content(), data=data)
            assert words == [], words
            staff_data = (*data, demo["org"].name, demo["customer"].email, "on shift",
                          "Demo inventory.")  # the seed's node events  # fmt: skip
            words = english_words(staff.content(), data=staff_data)
            assert words == [], words
    emails = [(t.args[0], t.args[1]) for t in celery_sent if t.name.endswith("ticket_email")]
    assert ("reply" in {k for _t, k in emails}) and ("resolved" in {k for _t, k in emails})
    pages.assert_no_server_errors()
