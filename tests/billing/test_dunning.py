"""Issue 13, point 6: dunning as data. Reminders before, on and after the due date, a
grace period, then suspension of only the order whose invoice is unpaid (its nodes powered
off through the simulated driver, never wiped), resumption on payment; a period already
paid is never suspended; the beat job run twice sends and creates nothing twice.

The services take ``now``, so one test walks an invoice's whole dunning calendar. Work
enqueued through the outbox is run here by calling the registered tasks (no broker)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from dateutil.relativedelta import relativedelta
from django.core import mail
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from billing.documents.numbers import next_number
from billing.dunning import services as dunning
from billing.models import (
    ContractStatus,
    DunningNotice,
    DunningNoticeStatus,
    DunningPolicy,
    DunningStep,
    Invoice,
    InvoiceStatus,
    Order,
    OrderStatus,
    Suspension,
    SuspensionStatus,
)
from billing.orders import acceptance
from billing.orders.selectors import order_nodes
from billing.orders.services import order_mark_paid
from billing.quotes import services as qs
from core import lifecycle
from inventory.models import NodeStatus, ReservationStatus
from provisioning import runs as provisioning_runs
from provisioning import suspension as power
from provisioning.validation import interface as validation_interface
from tests import factories
from tests.factories import run_outbox
from tests.provisioning.test_runs import drive

pytestmark = pytest.mark.django_db

POWER = "provisioning.tasks.order_power_sync"
MAILS = ("billing.tasks.dunning_notice_email", "billing.tasks.suspension_email")


@pytest.fixture(autouse=True)
def fast(settings, monkeypatch):
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0
    settings.PORTAL_SIMULATED_FAIL = {}

    def accept_all(targets, **kwargs):
        return validation_interface.ValidationOutcome(
            [
                validation_interface.NodeResult(t.node_id, t.hostname, True, [], {"ok": True})
                for t in targets
            ],
            True,
        )

    monkeypatch.setattr(validation_interface, "validate_nodes", accept_all)


@pytest.fixture
def fleet(monkeypatch):
    """The hardware: one simulated node per hostname that keeps its state between calls
    (the simulated driver keeps it in memory only, a real BMC keeps it for good)."""
    hardware: dict = {}
    real = power.driver_for

    def persistent(run, node):
        if node.hostname not in hardware:
            hardware[node.hostname] = real(run, node)
        return hardware[node.hostname]

    monkeypatch.setattr(power, "driver_for", persistent)
    return hardware


def make_order(demo, *, nodes: int = 1, duration: int = 3) -> Order:
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=duration,
        start_date=demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(nodes), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
        language="en",
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    factories.contract_signed_shortcut(order)
    order, _ = order_mark_paid(order=order)
    return order


def delivered(order: Order, fleet: dict) -> list[str]:
    """Provision the order for real (simulated nodes) and put its nodes in the fleet."""
    run = drive(provisioning_runs.provisioning_begin(order_id=order.pk))
    order.refresh_from_db()
    assert order.status == OrderStatus.READY
    nodes = order_nodes(order)
    for node in nodes:
        power.driver_for(run, node)
    assert {fleet[n.hostname].power for n in nodes} == {"on"}
    return [n.hostname for n in nodes]


def marked_ready(order: Order) -> None:
    """Delivered, without running the provisioning (tests that never touch power)."""
    for status in (OrderStatus.PROVISIONING, OrderStatus.VALIDATING, OrderStatus.READY):
        lifecycle.transition(order, to=status, reason="test")


def period_invoice(order: Order, *, month: int, due_at: datetime) -> Invoice:
    """The invoice of the order's ``month``-th period (0 is the first), as the period
    invoicing issues it."""
    start = order.start_at + relativedelta(months=month)
    number = next_number(kind="I", site=order.site, year=start.year)
    invoice = Invoice.objects.create(
        number=number,
        order=order,
        organisation=order.organisation,
        currency=order.currency,
        net_total=Decimal("1000.00"),
        vat_total=Decimal("60.00"),
        gross_total=Decimal("1060.00"),
        due_at=due_at,
        period_start=start,
        period_end=order.start_at + relativedelta(months=month + 1),
        bank_reference=number.replace("-", ""),
    )
    lifecycle.record_creation([invoice], reason="test: period invoice")
    return invoice


def local_day(order: Order, value: datetime) -> str:
    return timezone.localtime(value, order.site.tzinfo).strftime("%Y-%m-%d")


def test_the_standard_policy_is_seeded_as_data():
    policy = DunningPolicy.objects.get(active=True)
    assert [(s.offset_days, s.action) for s in policy.ordered_steps()] == [
        (-7, "remind"),
        (-3, "remind"),
        (0, "remind"),
        (3, "remind"),
        (10, "suspend"),
    ]
    assert policy.grace_days == 10
    # Edited in the admin, checked there: no reminder after the suspension.
    late = DunningStep(policy=policy, offset_days=12, action="remind")
    with pytest.raises(ValidationError, match="before the suspension"):
        late.full_clean()
    with pytest.raises(ValidationError, match="grace period"):
        DunningStep(policy=policy, offset_days=0, action="suspend").clean()


def test_dunning_twice_a_run_reminds_once_per_step_suspends_once_and_payment_resumes(
    demo, fleet, client
):
    unpaid = make_order(demo, nodes=2)
    paid_order = make_order(demo, nodes=2)
    unpaid_hosts = delivered(unpaid, fleet)
    paid_hosts = delivered(paid_order, fleet)
    assert not set(unpaid_hosts) & set(paid_hosts)
    for order in (unpaid, paid_order):  # the contracts are active once the rental runs
        for contract in order.contracts.all():
            lifecycle.transition(contract, to=ContractStatus.ACTIVE, reason="test: started")
    due = unpaid.start_at + relativedelta(months=1)
    invoice = period_invoice(unpaid, month=1, due_at=due)
    other = period_invoice(paid_order, month=1, due_at=due)
    lifecycle.transition(other, to=InvoiceStatus.PAID, reason="test: paid")
    mail.outbox.clear()

    def at(days: int) -> datetime:
        return due + timedelta(days=days, hours=1)

    assert dunning.dunning_run(now=at(-8)).reminders == 0
    for days in (-7, -3, 0, 3):
        assert dunning.dunning_run(now=at(days)).reminders == 1
        assert dunning.dunning_run(now=at(days)).reminders == 0  # the same run again
    assert dunning.dunning_run(now=at(9)).suspended == 0  # announced for day 10
    first = dunning.dunning_run(now=at(10))
    again = dunning.dunning_run(now=at(10))
    assert (first.suspended, again.suspended) == (1, 0)
    notices = DunningNotice.objects.filter(invoice=invoice)
    assert sorted(notices.values_list("step__offset_days", flat=True)) == [-7, -3, 0, 3, 10]
    assert set(notices.exclude(step__offset_days=10).values_list("status", flat=True)) == {
        DunningNoticeStatus.SENT
    }
    assert not DunningNotice.objects.filter(invoice=other).exists()

    # Each email once, even when the email tasks run twice.
    run_outbox(*MAILS)
    run_outbox(*MAILS)
    assert run_outbox(*MAILS) == 0
    subjects = [m.subject for m in mail.outbox]
    assert len(mail.outbox) == 5, subjects
    assert subjects[0] == f"Invoice {invoice.number} is due on {local_day(unpaid, due)}"
    assert subjects[2] == f"Invoice {invoice.number} is due today"
    assert subjects[3] == f"Invoice {invoice.number} is overdue"
    assert subjects[4] == f"Order {unpaid.number} is suspended"
    # The last reminder announces the suspension date; the early ones do not threaten.
    suspend_day = local_day(unpaid, due + timedelta(days=10))
    assert f"still unpaid on {suspend_day}, order {unpaid.number} will be suspended" in (
        " ".join(mail.outbox[3].body.split())
    )
    assert "suspended" not in mail.outbox[0].body
    assert mail.outbox[0].to == ["finance@pearlriver.example", "li.wei@example.com"]

    # Suspended: a state with its events; the contract too; only this order's nodes off.
    suspension = Suspension.objects.get()
    assert (suspension.order, suspension.invoice) == (unpaid, invoice)
    assert suspension.status == SuspensionStatus.SUSPENDED
    assert list(suspension.events.values_list("from_status", "to_status")) == [("", "suspended")]
    assert unpaid.contracts.get().status == ContractStatus.SUSPENDED
    assert paid_order.contracts.get().status == ContractStatus.ACTIVE
    assert run_outbox(POWER) == 1
    run_outbox(POWER)
    assert {h: fleet[h].power for h in unpaid_hosts} == dict.fromkeys(unpaid_hosts, "off")
    assert {h: fleet[h].power for h in paid_hosts} == dict.fromkeys(paid_hosts, "on")
    # Powered off, never wiped; nothing released; the other order's hardware untouched.
    for host in unpaid_hosts:
        ops = [s.operation for s in fleet[host].steps]
        assert ops == ["power_off"], ops
    for host in paid_hosts:
        assert fleet[host].steps == []
    unpaid.refresh_from_db()
    assert unpaid.status == OrderStatus.READY
    for node in order_nodes(unpaid):
        assert node.status == NodeStatus.IN_SERVICE
        assert node.reservations.filter(status=ReservationStatus.FIRM).exists()
        assert node.events.filter(reason__startswith="Powered off").count() == 1

    # The customer sees it on the order page and the suspension page.
    client.force_login(demo["customer"])
    page = client.get(reverse("dashboard_order", args=[unpaid.number])).content.decode()
    assert "Suspended since" in page and invoice.number in page
    page = client.get(reverse("dashboard_order_suspension", args=[unpaid.number]))
    assert page.status_code == 200 and invoice.number in page.content.decode()
    page = client.get(reverse("dashboard_order", args=[paid_order.number])).content.decode()
    assert "Suspended since" not in page

    # Paid: resumed (once), the contract active again, the nodes powered on.
    lifecycle.transition(invoice, to=InvoiceStatus.PAID, reason="test: bank transfer")
    assert dunning.dunning_invoice_paid(invoice=invoice) is True
    assert dunning.dunning_invoice_paid(invoice=invoice) is False
    assert dunning.dunning_run(now=at(11)).resumed == 0
    suspension.refresh_from_db()
    assert suspension.status == SuspensionStatus.RESUMED and suspension.resumed_at
    assert unpaid.contracts.get().status == ContractStatus.ACTIVE
    run_outbox(POWER)
    assert {fleet[h].power for h in unpaid_hosts} == {"on"}
    assert {fleet[h].power for h in paid_hosts} == {"on"}
    assert all(fleet[h].steps == [] for h in paid_hosts)
    run_outbox(*MAILS)
    run_outbox(*MAILS)
    assert [m.subject for m in mail.outbox[5:]] == [f"Order {unpaid.number} is resumed"]
    # Nothing more happens to a paid invoice.
    assert dunning.dunning_run(now=at(30)).suspended == 0


def test_a_paid_current_period_is_never_suspended(demo):
    order = make_order(demo)
    marked_ready(order)
    # The next period's invoice is issued ahead and due 14 days before that period.
    period_start = order.start_at + relativedelta(months=1)
    due = period_start - timedelta(days=14)
    invoice = period_invoice(order, month=1, due_at=due)
    for days in (-7, -3, 0, 3, 10, 13):
        dunning.dunning_run(now=due + timedelta(days=days, hours=1))
    assert not Suspension.objects.exists()
    # The announcement names the day the unpaid period starts, not the end of the grace.
    last = DunningNotice.objects.get(invoice=invoice, step__offset_days=3)
    assert last.suspend_on == period_start
    assert dunning.dunning_run(now=period_start - timedelta(minutes=1)).suspended == 0
    assert dunning.dunning_run(now=period_start).suspended == 1
    assert Suspension.objects.get().invoice == invoice


def test_missed_reminders_are_skipped_not_sent_in_a_burst_and_the_date_moves(demo):
    order = make_order(demo)
    marked_ready(order)
    due = order.start_at + relativedelta(months=1)
    invoice = period_invoice(order, month=1, due_at=due)
    # The beat was down until five days after the due date.
    late = due + timedelta(days=5)
    result = dunning.dunning_run(now=late)
    assert (result.reminders, result.skipped, result.suspended) == (1, 3, 0)
    notice = DunningNotice.objects.get(invoice=invoice, status=DunningNoticeStatus.SENT)
    assert notice.step.offset_days == 3
    # Still announced seven days ahead (the policy's gap), not on day 10.
    assert notice.suspend_on == late + timedelta(days=7)
    assert dunning.dunning_run(now=due + timedelta(days=10, hours=1)).suspended == 0
    assert dunning.dunning_run(now=late + timedelta(days=7)).suspended == 1


def test_a_suspension_ends_when_a_paid_period_begins_and_the_nodes_are_powered_on(demo, fleet):
    """Issue 24, point 3: period 2 unpaid, period 3 paid: suspended in period 2, never in
    period 3 (powered on again at its start, and the order's history says so)."""
    order = make_order(demo, nodes=1, duration=3)
    hosts = delivered(order, fleet)
    second_start = order.start_at + relativedelta(months=1)
    third_start = order.start_at + relativedelta(months=2)
    second = period_invoice(order, month=1, due_at=second_start)
    third = period_invoice(order, month=2, due_at=third_start)
    lifecycle.transition(third, to=InvoiceStatus.PAID, reason="test: paid ahead")
    for days in (-7, -3, 0, 3):
        dunning.dunning_run(now=second_start + timedelta(days=days, hours=1))
    assert dunning.dunning_run(now=second_start + timedelta(days=10, hours=1)).suspended == 1
    run_outbox(POWER)
    assert {fleet[h].power for h in hosts} == {"off"}
    # The last minute of period 2: still suspended. Period 3 (paid) begins: resumed.
    assert dunning.dunning_run(now=third_start - timedelta(minutes=1)).resumed == 0
    assert dunning.dunning_run(now=third_start + timedelta(minutes=1)).resumed == 1
    suspension = Suspension.objects.get(order=order)
    assert suspension.status == SuspensionStatus.RESUMED
    reason = suspension.events.get(to_status=SuspensionStatus.RESUMED).reason
    third_day = local_day(order, third_start)
    assert f"The billing period from {third_day} is paid (invoice {third.number})" in reason
    assert f"Invoice {second.number} is still unpaid" in reason
    run_outbox(POWER)
    assert {fleet[h].power for h in hosts} == {"on"}
    notes = list(order.events.values_list("reason", flat=True))
    assert any(n.startswith("Nodes powered on again: ") and hosts[0] in n for n in notes)
    # Invoice 2 is still unpaid, but no suspension starts inside the paid period 3.
    assert dunning.dunning_run(now=third_start + timedelta(days=5)).suspended == 0
    second.refresh_from_db()
    assert second.status == InvoiceStatus.ISSUED
