"""Maintenance planning (issue 22, point 3): the page lists every affected order and
customer before confirming; a window over a firm booking needs the override permission
and a reason; the customers are told by email and webhook ``notice_days`` ahead; the
organisation's iCal feed shows the told windows (its own only); an overridden window is
unplanned downtime for the SLA credits (contract §7.1–7.2)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core import mail
from django.urls import reverse
from django.utils import timezone, translation
from icalendar import Calendar

from accounts import webhooks
from accounts.models import MemberRole, Membership, Organisation, WebhookEvent
from billing.invoicing import services as invoicing
from billing.models import Order, OrderStatus
from billing.orders import services as orders
from billing.pricing import sla as sla_table
from inventory import services as inventory_services
from inventory.models import (
    MaintenanceNotice,
    MaintenancePlan,
    MaintenanceStatus,
    MaintenanceWindow,
    Reservation,
)
from portal.operations import services
from provisioning import runs, sla
from provisioning.models import ProvisioningRun, RunStatus
from tests.billing.test_contracts import make_order
from tests.factories import run_outbox

pytestmark = pytest.mark.django_db

NOTIFY = "portal.operations.tasks.maintenance_notify_task"
EMAIL = "portal.operations.tasks.maintenance_email_task"


def _url(name, *args, lang="en"):
    with translation.override(lang):
        return reverse(name, args=args)


def _local(site, value: datetime) -> str:
    return timezone.localtime(value, site.tzinfo).strftime("%Y-%m-%dT%H:%M")


@pytest.fixture
def booked(demo):
    """A paid order of two H100 nodes from 2027-01-01 (firm), its nodes."""
    order = make_order(demo, term="month", duration=1, start=date(2027, 1, 1))
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-1", actor=demo["admin"]
    )
    order.refresh_from_db()
    reservations = list(Reservation.objects.filter(group=order.reservation_group))
    assert {r.status for r in reservations} == {"firm"}
    return order, [r.node for r in reservations]


@pytest.fixture
def ops_client(client, demo):
    client.force_login(get_user_model().objects.get(username="ops"))
    return client


def _form(order, nodes, **extra):
    start = order.start_at + timedelta(days=4, hours=2)
    return {
        "site": order.site_id,
        "title": "Replace PDU in rack",
        "scope": "nodes",
        "hostnames": " ".join(n.hostname for n in nodes[:1]),
        "start": _local(order.site, start),
        "end": _local(order.site, start + timedelta(hours=4)),
        # The window is about five weeks ahead: told at once.
        "notice_days": "60",
        **extra,
    }


def test_the_preview_lists_the_affected_order_and_customer_and_an_override_is_needed(
    ops_client, booked, demo
):
    order, nodes = booked
    page = ops_client.post(
        _url("operations:maintenance_new"), _form(order, nodes, action="preview")
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert order.number in html and demo["org"].name in html
    assert nodes[0].hostname in html
    assert not MaintenancePlan.objects.exists()  # a preview plans nothing
    # Confirming without a reason is refused with the bookings named; nothing is planned.
    page = ops_client.post(
        _url("operations:maintenance_new"), _form(order, nodes, action="confirm")
    )
    assert "covers active bookings" in page.content.decode()
    assert not MaintenancePlan.objects.exists()
    # With the reason it is planned, recorded with who and why, unplanned for the SLA.
    page = ops_client.post(
        _url("operations:maintenance_new"),
        _form(order, nodes, action="confirm", override_reason="PDU smoking, cannot wait"),
    )
    plan = MaintenancePlan.objects.get()
    assert page.status_code == 302 and page["Location"].endswith(f"/maintenance/{plan.pk}/")
    assert plan.unplanned and plan.windows.count() == 1
    event = plan.events.get()
    assert event.actor.username == "ops" and "PDU smoking" in event.reason


def test_sales_cannot_plan_and_finance_cannot_see_maintenance(client, booked):
    order, nodes = booked
    for username, status in (("sales", 403), ("finance", 403)):
        client.force_login(get_user_model().objects.get(username=username))
        assert (
            client.post(_url("operations:maintenance_new"), _form(order, nodes)).status_code
            == status
        )
    assert not MaintenancePlan.objects.exists()


def test_announced_maintenance_emails_the_customer_fires_the_webhook_and_fills_the_feed(
    ops_client, booked, demo
):
    order, nodes = booked
    org = demo["org"]
    webhooks.endpoint_create(
        organisation=org,
        url="https://hooks.example.com/maintenance",
        event_types=["maintenance.announced"],
        actor=None,
    )
    mail.outbox.clear()
    ops_client.post(
        _url("operations:maintenance_new"),
        _form(order, nodes, action="confirm", override_reason="PDU smoking, cannot wait"),
    )
    plan = MaintenancePlan.objects.get()
    assert plan.status == MaintenanceStatus.SCHEDULED
    # Its notice time has come: the notifying task is enqueued at once (outbox).
    assert run_outbox(NOTIFY) == 1
    plan.refresh_from_db()
    assert plan.status == MaintenanceStatus.ANNOUNCED and plan.announced_at is not None
    notice = MaintenanceNotice.objects.get(plan=plan)
    assert notice.organisation == org and notice.orders[0]["number"] == order.number
    event = WebhookEvent.objects.get(type="maintenance.announced")
    assert event.data["orders"] == [{"number": order.number, "nodes": [nodes[0].hostname]}]
    assert event.data["unplanned"] is True
    assert run_outbox(EMAIL) == 1
    sent = mail.outbox[-1]
    assert order.quote.contact_email in sent.to
    assert order.number in sent.body and nodes[0].hostname in sent.body
    assert services.feed_url(org.pk) in sent.body
    # Told twice? The task is idempotent: no second notice, email or event.
    assert services.maintenance_notify(plan_id=plan.pk) == 0
    assert WebhookEvent.objects.filter(type="maintenance.announced").count() == 1
    # The feed at the secret address holds the window; another organisation's does not.
    feed = ops_client.get(_url("maintenance_feed", services.feed_token(org.pk)))
    assert feed.status_code == 200 and feed["Content-Type"].startswith("text/calendar")
    events = [c for c in Calendar.from_ical(feed.content).walk("VEVENT")]
    assert len(events) == 1
    assert events[0].decoded("dtstart") == plan.start_at
    assert "Replace PDU" in str(events[0]["summary"])
    other = Organisation.objects.create(name="Other Lab", legal_name="Other Lab Ltd.")
    other_feed = ops_client.get(_url("maintenance_feed", services.feed_token(other.pk)))
    assert not Calendar.from_ical(other_feed.content).walk("VEVENT")
    assert ops_client.get(_url("maintenance_feed", "1:forged")).status_code == 404
    # The member's own feed, logged in; a member of the other organisation sees nothing.
    customer = demo["customer"]
    ops_client.force_login(customer)
    mine = ops_client.get(_url("maintenance_feed_member"))
    assert len(Calendar.from_ical(mine.content).walk("VEVENT")) == 1
    eve = get_user_model().objects.create_user("eve", "eve@other.example", "pw-eve-12345")
    Membership.objects.create(user=eve, organisation=other, role=MemberRole.OWNER)
    ops_client.force_login(eve)
    assert not Calendar.from_ical(ops_client.get(_url("maintenance_feed_member")).content).walk(
        "VEVENT"
    )


def test_notice_days_ahead_waits_for_the_sweep(booked, demo):
    order, nodes = booked
    start = order.start_at - timedelta(days=2)  # before the booking: nobody affected
    plan = inventory_services.maintenance_plan_create(
        title="Firmware",
        scope="nodes",
        node_ids=[nodes[1].pk],
        start_at=start,
        end_at=start + timedelta(hours=2),
        notice_days=7,
        actor=demo["admin"],
    )
    assert plan.notify_at == start - timedelta(days=7)
    assert run_outbox(NOTIFY) == 0  # not yet: a week before the start
    due, _ = inventory_services.maintenance_plans_due(now=plan.notify_at - timedelta(minutes=1))
    assert plan.pk not in due
    due, _ = inventory_services.maintenance_plans_due(now=plan.notify_at)
    assert plan.pk in due


def test_cancelling_frees_the_nodes_and_keeps_who_and_why(booked, demo):
    order, nodes = booked
    start = order.end_at + timedelta(days=3)
    plan = inventory_services.maintenance_plan_create(
        title="Cabling",
        scope="rack",
        rack=nodes[0].rack,
        start_at=start,
        end_at=start + timedelta(hours=3),
        actor=demo["admin"],
    )
    assert plan.windows.count() == nodes[0].rack.nodes.exclude(status="retired").count()
    inventory_services.maintenance_plan_cancel(plan=plan, actor=demo["admin"], reason="vendor late")
    plan.refresh_from_db()
    assert plan.status == MaintenanceStatus.CANCELLED and not plan.windows.exists()
    assert plan.events.order_by("-created_at", "-id").first().reason == "vendor late"


def test_an_overridden_window_is_unplanned_downtime_in_the_sla_credit(booked, demo):
    """Hand computation (contract §7.1): January 2027 in Shenzhen has 744 h. The override
    window takes node 1 for 4 h on 5 January: availability 100 × (1 − 4/744) = 99.462…%,
    below 99.9 % and not below 99 %: the 10 % tier of the node's January charge. Node 2
    has no downtime: no credit."""
    order, _nodes = booked
    run = runs.run_create(order=order)
    ProvisioningRun.objects.filter(pk=run.pk).update(
        status=RunStatus.DELIVERED, finished_at=order.start_at
    )
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.READY)
    slot_one = run.run_nodes.order_by("slot").first().node
    start = order.start_at + timedelta(days=4, hours=2)
    inventory_services.maintenance_plan_create(
        title="PDU",
        scope="nodes",
        node_ids=[slot_one.pk],
        start_at=start,
        end_at=start + timedelta(hours=4),
        override_reason="PDU smoking",
        actor=demo["admin"],
    )
    facts = {f.node_ref: f for _code, f in sla.order_sla_facts(order)}
    outages = facts[slot_one.hostname].outages
    assert [(o.kind, o.end - o.start) for o in outages] == [("maintenance", timedelta(hours=4))]
    (p1,) = invoicing.order_schedule(order)
    assert sla.sla_credits_gather_and_record(order_id=order.pk, now=p1.end) == 1
    credit = order.sla_credits.get()
    assert credit.node_ref == slot_one.hostname
    assert credit.availability == Decimal("99.462")
    assert credit.credit_percent == 10


def test_a_planned_window_announced_72_hours_ahead_is_excluded_and_a_later_one_counts(demo):
    """§7.2: planned maintenance announced at least 72 hours ahead is not downtime. A node
    in maintenance for 2 h inside a planned window announced 4 days ahead: 0 h counted;
    announced 2 days ahead: the 2 h count."""
    site = demo["sz"]
    start = datetime(2027, 3, 10, 2, 0, tzinfo=site.tzinfo)
    plan = MaintenancePlan(
        site=site, title="x", start_at=start, end_at=start + timedelta(hours=2), notice_days=4
    )
    window = MaintenanceWindow(plan=plan, start_at=plan.start_at, end_at=plan.end_at)
    month = (datetime(2027, 3, 1, tzinfo=site.tzinfo), datetime(2027, 4, 1, tzinfo=site.tzinfo))
    down = sla_table.Outage("maintenance", start, start + timedelta(hours=2))
    for announced_days, counted_hours in ((4, 0), (2, 2)):
        plan.announced_at = start - timedelta(days=announced_days)
        outage, planned = sla.maintenance_facts(window, [month])
        assert outage is None and planned is not None
        credit = sla_table.node_credit(
            sla_table.NodeFacts("n1", outages=(down,), planned=(planned,)),
            start=month[0],
            end=month[1],
            node_charge=Decimal("1000"),
        )
        assert credit.unavailable == timedelta(hours=counted_hours)


def test_planning_over_a_booking_needs_the_override_permission(client, booked):
    """A planner without ``inventory.override_booking`` sees the affected booking and
    no confirm button; posting the confirmation anyway is refused and plans nothing."""
    order, nodes = booked
    planner = get_user_model().objects.create_user(
        "planner", "planner@example.com", "x-unused-12345", is_staff=True
    )
    planner.user_permissions.add(Permission.objects.get(codename="add_maintenanceplan"))
    client.force_login(planner)
    preview = client.post(_url("operations:maintenance_new"), _form(order, nodes, action="preview"))
    assert order.number in preview.content.decode()
    assert 'id="confirm"' not in preview.content.decode()
    refused = client.post(
        _url("operations:maintenance_new"),
        _form(order, nodes, action="confirm", override_reason="because"),
    )
    assert refused.status_code == 403
    assert not MaintenancePlan.objects.exists()


def test_the_sweep_tells_due_plans_and_completes_ended_ones(booked, demo):
    order, nodes = booked
    start = order.end_at + timedelta(days=2)
    plan = inventory_services.maintenance_plan_create(
        title="BIOS",
        scope="nodes",
        node_ids=[nodes[0].pk],
        start_at=start,
        end_at=start + timedelta(hours=2),
        notice_days=1,
        actor=demo["admin"],
    )
    assert services.maintenance_notify(plan_id=plan.pk, now=plan.notify_at) == 0  # nobody
    plan.refresh_from_db()
    assert plan.status == MaintenanceStatus.ANNOUNCED
    _due, ended = inventory_services.maintenance_plans_due(now=plan.end_at)
    plan.refresh_from_db()
    assert ended == 1 and plan.status == MaintenanceStatus.COMPLETED
    assert plan.windows.get().end_at == plan.end_at  # the window stays: it happened
    assert plan.events.order_by("created_at", "id").last().reason == "The window ended."


def test_the_chinese_plan_page_names_the_zone_and_the_scope_in_chinese_punctuation(
    ops_client, booked, demo
):
    order, nodes = booked
    start = order.end_at + timedelta(days=3)
    plan = inventory_services.maintenance_plan_create(
        title="Cabling",
        scope="rack",
        rack=nodes[0].rack,
        start_at=start,
        end_at=start + timedelta(hours=3),
        actor=demo["admin"],
    )
    html = ops_client.get(_url("operations:maintenance_detail", plan.pk, lang="zh-hans"))
    html = html.content.decode()
    assert "（北京时间，UTC+08:00）" in html and "Asia/Shanghai" not in html
    assert "<h1>维护：Cabling</h1>" in html
    assert f"<dd>一个机柜：{nodes[0].rack}</dd>" in html  # the scope, then the rack
    en = ops_client.get(_url("operations:maintenance_detail", plan.pk)).content.decode()
    assert "(China Standard Time, UTC+08:00)" in en and f": {nodes[0].rack}</dd>" in en
