"""Support tickets: opened by a customer about an order, a node or a GPU with the
diagnostics attached; the two clocks per contract tier, paused while waiting on the
customer (hand-computed times); the staff queue by the clock that runs out first;
internal notes that never reach the customer; every staff action with who and why;
missed clocks on the dashboard; tickets the portal opens itself from a low-utilisation
alert and a node replacement."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone, translation

from core.errors import DomainError
from core.models import OutboxMessage
from inventory.models import Node, NodeEvent
from portal.support import selectors, services
from portal.support.models import SavedReply, Ticket, TicketEvent
from portal.support.subscriptions import LOW_UTILISATION_TASK, REPLACEMENT_TASK
from provisioning.health import services as health_services
from provisioning.health.signals import low_utilisation_raised
from provisioning.models import (
    HealthIncident,
    ReplacementPolicy,
    UtilisationAlert,
    ValidationNodeResult,
    ValidationRun,
)
from tests.factories import run_outbox

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
EMAIL_TASK = services.EMAIL_TASK


def url(name, *args, lang="en"):
    with translation.override(lang):
        return reverse(name, args=args)


def open_ticket(demo, order=None, node=None, *, priority="normal", category="other", now=T0):
    return services.ticket_open(
        organisation=demo["org"],
        actor=demo["customer"],
        subject="Training stalls",
        body="NCCL hangs after step 300.",
        category=category,
        priority=priority,
        language="en",
        order=order,
        node=node,
        now=now,
    )


def test_a_customer_opens_a_ticket_about_a_node_with_the_diagnostics_attached(
    client, demo, served, support
):
    order, node = served["order"], served["node"]
    incident = health_services.incident_open(
        node=node,
        rule="xid_79",
        action="notify",
        metric="DCGM_FI_DEV_XID_ERRORS",
        value=79,
        gpu="3",
        observed_at=timezone.now() - timedelta(minutes=5),
    )
    client.force_login(demo["customer"])
    page = client.get(url("support_ticket_new") + f"?order={order.number}&node={node.hostname}")
    assert page.status_code == 200 and node.hostname in page.content.decode()
    before = timezone.now()
    answer = client.post(
        url("support_ticket_new"),
        {
            "order": order.number,
            "node": node.hostname,
            "category": "hardware",
            "priority": "urgent",
            "subject": "GPU 3 fell off the bus",
            "body": "Our job died with XID 79.",
        },
    )
    ticket = Ticket.objects.get()
    assert answer.status_code == 302 and answer["Location"] == url("support_ticket", ticket.pk)
    # The order is under a signed contract: §7.1's 30-minute response, 4-hour resolution.
    assert ticket.tier == "contract"
    assert ticket.response_due_at - ticket.created_at == timedelta(minutes=30)
    assert ticket.resolution_due_at - ticket.created_at == timedelta(hours=4)
    assert before <= ticket.created_at <= timezone.now()
    assert ticket.diagnostics["incidents"] == [incident.pk]
    page = client.get(url("support_ticket", ticket.pk)).content.decode()
    assert "DCGM_FI_DEV_XID_ERRORS = 79 on " + node.hostname + " GPU 3" in page
    assert "Our job died with XID 79." in page
    # The emails follow the commit: the customer's confirmation with the clocks, and
    # support's notice of a new ticket.
    run_outbox(EMAIL_TASK)
    to = {tuple(m.to): m for m in mail.outbox}
    assert "First response due by:" in to[(demo["customer"].email,)].body
    assert ticket.reference in to[(support.email,)].subject


def test_the_ticket_form_refuses_a_node_of_another_order_and_keeps_what_was_typed(
    client, demo, served
):
    other = Node.objects.exclude(pk=served["node"].pk).filter(node_type=demo["h100"]).first()
    with pytest.raises(DomainError, match="does not serve this order"):
        open_ticket(demo, served["order"], other)
    client.force_login(demo["customer"])
    answer = client.post(
        url("support_ticket_new"),
        {"order": served["order"].number, "node": other.hostname, "category": "hardware",
         "priority": "high", "subject": "Slow node", "body": "Keep this text."},
    )  # fmt: skip
    assert answer.status_code == 200 and "Keep this text." in answer.content.decode()
    assert not Ticket.objects.exists()


def test_clocks_pause_while_waiting_on_the_customer_and_resume_when_they_answer(demo, support):
    # Standard tier (no order), normal: 8 h to the first response, 72 h to resolve.
    ticket = open_ticket(demo)
    assert (ticket.response_due_at, ticket.resolution_due_at) == (
        T0 + timedelta(hours=8),
        T0 + timedelta(hours=72),
    )
    services.ticket_reply(
        ticket=ticket, actor=support, body="Which NCCL version?", staff=True,
        wait_for_customer=True, now=T0 + timedelta(hours=1),
    )  # fmt: skip
    ticket.refresh_from_db()
    assert ticket.status == "waiting" and ticket.paused_at == T0 + timedelta(hours=1)
    assert ticket.first_response_at == T0 + timedelta(hours=1) and not ticket.response_missed
    clock = selectors.ticket_clocks(ticket, now=T0 + timedelta(hours=2))[1]
    assert clock.state == "paused" and clock.remaining == timedelta(hours=71)
    # The customer answers two hours later: the resolution is due two hours later too.
    services.ticket_reply(
        ticket=ticket, actor=demo["customer"], body="2.18.3", now=T0 + timedelta(hours=3)
    )
    ticket.refresh_from_db()
    assert ticket.status == "open" and ticket.paused_at is None
    assert ticket.resolution_due_at == T0 + timedelta(hours=74)
    services.ticket_resolve(
        ticket=ticket, actor=support, resolution="Upgrade NCCL.", now=T0 + timedelta(hours=75)
    )
    ticket.refresh_from_db()
    assert ticket.status == "resolved" and ticket.resolution_missed
    assert [c.state for c in selectors.ticket_clocks(ticket)] == ["met", "missed"]
    # Reopened by the customer: the clock resumes where it stopped (1 h overdue).
    services.ticket_reply(
        ticket=ticket, actor=demo["customer"], body="Still hangs.", now=T0 + timedelta(hours=80)
    )
    ticket.refresh_from_db()
    assert ticket.status == "open" and ticket.resolved_at is None
    assert ticket.resolution_due_at == T0 + timedelta(hours=79)
    moves = [(e.from_status, e.to_status) for e in ticket.events.all()
             if e.from_status != e.to_status]  # fmt: skip
    assert moves == [("", "open"), ("open", "waiting"), ("waiting", "open"),
                     ("open", "resolved"), ("resolved", "open")]  # fmt: skip


def test_the_queue_is_sorted_by_the_clock_that_runs_out_first(
    client, demo, served, support, django_assert_max_num_queries
):
    now = timezone.now()
    low = open_ticket(demo, priority="low", now=now - timedelta(hours=1))  # 23 h left
    urgent = open_ticket(demo, served["order"], priority="urgent", now=now)  # 30 min left
    paused = open_ticket(demo, priority="urgent", now=now - timedelta(minutes=1))
    services.ticket_reply(
        ticket=paused, actor=support, body="Logs?", staff=True, wait_for_customer=True
    )
    normal = open_ticket(demo, priority="normal", now=now)  # 8 h left
    client.force_login(support)
    page = client.get(url("support_staff_queue"))
    order = [int(r) for r in _rows(page.content.decode())]
    assert order == [urgent.pk, normal.pk, low.pk, paused.pk]
    for _n in range(10):
        open_ticket(demo, served["order"], priority="high")
    with django_assert_max_num_queries(12):  # session, user, perms (2), tickets, missed…
        page = client.get(url("support_staff_queue"))
    assert len(_rows(page.content.decode())) == 14


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr data-ticket="(\d+)">', html)


def test_internal_notes_never_reach_the_customer_and_staff_actions_say_who_and_why(
    client, demo, support
):
    ticket = open_ticket(demo)
    services.ticket_note(ticket=ticket, actor=support, body="Customer's VPN is flaky.")
    services.ticket_assign(ticket=ticket, actor=support, assignee=support, reason="on shift")
    services.ticket_set_priority(
        ticket=ticket, actor=support, priority="high", reason="blocks a launch"
    )
    ticket.refresh_from_db()
    # The clocks follow the new priority from the opening (standard high: 4 h / 24 h).
    assert ticket.response_due_at == T0 + timedelta(hours=4)
    events = {e.reason: e for e in TicketEvent.objects.filter(ticket=ticket)}
    assert events["Assigned to support: on shift"].actor == support
    assert events["Priority normal → high: degraded: blocks a launch"].actor == support
    client.force_login(demo["customer"])
    page = client.get(url("support_ticket", ticket.pk)).content.decode()
    assert "VPN is flaky" not in page and "Assigned to" not in page
    client.force_login(support)
    page = client.get(url("support_staff_ticket", ticket.pk)).content.decode()
    assert "VPN is flaky" in page and "Assigned to support: on shift" in page
    # A customer cannot write notes; a role without the permission cannot either.
    with pytest.raises(DomainError):
        services.ticket_note(ticket=ticket, actor=demo["customer"], body="x")
    with pytest.raises(DomainError):
        services.ticket_assign(ticket=ticket, actor=demo["sales"], assignee=None, reason="x")
    run_outbox(EMAIL_TASK)
    assert all("VPN" not in m.body for m in mail.outbox)


def test_a_saved_reply_is_sent_by_email_and_shown_on_the_page(client, demo, support):
    ticket = open_ticket(demo, now=timezone.now())
    saved = SavedReply.objects.create(
        title="Logs", language="en", body="Please attach the output of nvidia-smi -q."
    )
    client.force_login(support)
    answer = client.post(
        url("support_staff_reply", ticket.pk), {"saved_reply": saved.pk, "body": ""}
    )
    assert answer.status_code == 302
    mail.outbox.clear()
    run_outbox(EMAIL_TASK)
    replies = [m for m in mail.outbox if m.to == [demo["customer"].email]]
    assert any("nvidia-smi -q" in m.body for m in replies)
    client.force_login(demo["customer"])
    assert "nvidia-smi -q" in client.get(url("support_ticket", ticket.pk)).content.decode()


def test_missed_clocks_are_recorded_once_and_show_on_the_dashboard(client, demo, support):
    now = timezone.now()
    late = open_ticket(demo, priority="urgent", now=now - timedelta(hours=2))  # 1 h response
    open_ticket(demo, priority="low", now=now)
    run_outbox(EMAIL_TASK)  # the "opened" emails
    mail.outbox.clear()
    assert services.ticket_clocks_sweep(now=now) == 1
    assert services.ticket_clocks_sweep(now=now) == 0
    late.refresh_from_db()
    assert late.response_missed
    assert late.events.filter(reason="The first-response clock ran out.").count() == 1
    run_outbox(EMAIL_TASK)  # support is told (in the portal's default language)
    assert [(m.to, late.reference in m.subject) for m in mail.outbox] == [([support.email], True)]
    assert selectors.missed_clocks_summary(now=now) == {
        "tickets": 1,
        "response": 1,
        "resolution": 0,
    }
    client.force_login(demo["admin"])
    page = client.get(url("support_staff_missed")).content.decode()
    assert late.reference in page and 'data-missed="response">1<' in page
    # The ops dashboard (utilisation and revenue) shows the widget to ops, not to finance.
    users = get_user_model().objects
    client.force_login(users.get(username="ops"))
    page = client.get(url("operations:reports")).content.decode()
    assert 'id="missed-clocks"' in page and 'data-missed="tickets">1<' in page
    client.force_login(users.get(username="finance"))
    page = client.get(url("operations:reports"))
    assert page.status_code == 200 and 'id="missed-clocks"' not in page.content.decode()


def test_a_low_utilisation_alert_opens_a_ticket_with_a_five_minute_response(demo, served, support):
    with transaction.atomic():
        alert = UtilisationAlert.objects.create(
            order=served["order"], utilisation=0.41, pointer="input_bound"
        )
        low_utilisation_raised.send(sender=UtilisationAlert, alert=alert)
    assert OutboxMessage.objects.filter(steps__0__0=LOW_UTILISATION_TASK).exists()
    run_outbox(LOW_UTILISATION_TASK)
    run_outbox(LOW_UTILISATION_TASK)  # a second delivery adds nothing
    ticket = Ticket.objects.get()
    assert (ticket.source, ticket.category, ticket.utilisation_alert) == (
        "low_utilisation", "utilisation", alert
    )  # fmt: skip
    assert ticket.response_due_at - ticket.created_at == timedelta(minutes=5)
    assert "41%" in ticket.subject and ticket.diagnostics["alerts"] == [alert.pk]
    # Support's first reply answers the alert too (it leaves provisioning's staff list).
    services.ticket_reply(ticket=ticket, actor=support, body="Looking at your loader.", staff=True)
    alert.refresh_from_db()
    assert alert.answered_by == support


def test_a_node_to_replace_opens_an_urgent_ticket_about_it(demo, served):
    order, node = served["order"], served["node"]
    ReplacementPolicy.objects.create(order=order, mode="ask", ask_minutes=30)
    NodeEvent.objects.create(node=node, from_status="reserved", to_status="in_service",
                             reason="delivered")  # fmt: skip
    incident = health_services.incident_open(
        node=node, rule="xid_79", action="replace", metric="DCGM_FI_DEV_XID_ERRORS", value=79,
        gpu="5", observed_at=timezone.now(),
    )  # fmt: skip
    health_services.incident_act(incident=incident)
    run_outbox(REPLACEMENT_TASK)
    ticket = Ticket.objects.get(health_incident=incident)
    assert (ticket.source, ticket.priority, ticket.node, ticket.gpu_index) == (
        "replacement", "urgent", node, "5"
    )  # fmt: skip
    assert ticket.diagnostics["incidents"] == [incident.pk]
    assert ticket.diagnostics["node_events"]
    assert HealthIncident.objects.get(pk=incident.pk).status == "awaiting"


def test_a_gpu_serial_while_monitoring_is_down_says_so_and_keeps_the_form(
    client, demo, served, settings
):
    settings.PORTAL_PROMETHEUS_URL = "http://127.0.0.1:9"  # nothing listens there
    client.force_login(demo["customer"])
    answer = client.post(
        url("support_ticket_new"),
        {"gpu_serial": "1650123456789", "category": "hardware", "priority": "high",
         "subject": "GPU errors", "body": "Keep this text."},
    )  # fmt: skip
    html = answer.content.decode()
    assert answer.status_code == 200 and "Monitoring does not answer right now" in html
    assert "Keep this text." in html and "1650123456789" in html
    assert not Ticket.objects.exists()


def test_the_last_validation_of_the_node_is_attached(client, demo, served):
    order, node = served["order"], served["node"]
    run = ValidationRun.objects.create(order=order, profile="quick", status="failed")
    run.nodes.add(node)
    ValidationNodeResult.objects.create(
        run=run, node=node, hostname=node.hostname, gpu_model="H100", accepted=False,
        reasons=[{"code": "gemm", "text": "GEMM 612 TFLOPS under 90% of 989"}],
    )  # fmt: skip
    ticket = open_ticket(demo, order, node, category="hardware")
    assert ticket.diagnostics["validation_run"] == run.pk
    client.force_login(demo["customer"])
    page = client.get(url("support_ticket", ticket.pk)).content.decode()
    assert "GEMM 612 TFLOPS under 90% of 989" in page


def test_the_customers_list_and_status_page_do_not_grow_with_their_tickets(
    client, demo, served, support, django_assert_max_num_queries
):
    for _n in range(3):
        open_ticket(demo, served["order"], served["node"])
    client.force_login(demo["customer"])
    with django_assert_max_num_queries(8) as few:
        assert client.get(url("support_tickets")).status_code == 200
    for _n in range(10):
        open_ticket(demo, served["order"], served["node"])
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = client.get(url("support_tickets")).content.decode()
    assert page.count('href="/en/account/support/') >= 13
    services.status_incident_open(
        site=demo["sz"], component="fabric", impact="degraded", title="IB leaf flaps",
        title_zh="IB 叶交换机抖动", body="Watching.", body_zh="观察中。", actor=support,
        switches=[served["node"].leaf_switch],
    )  # fmt: skip
    with django_assert_max_num_queries(16):
        page = client.get(url("support_customer_status")).content.decode()
    assert "IB leaf flaps" in page
