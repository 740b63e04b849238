"""Dunning: reminders, suspension of the one order whose invoice is unpaid, resumption.

The policy is data (``DunningPolicy`` and its steps, after Kill Bill's overdue states).
``dunning_run`` is the beat job; for each issued invoice of an order already paid and
running (its first payment opened the service; an order never paid simply expires) it does
at most one thing per run:

- the latest reminder step that is due and not yet done is sent (earlier ones that were
  missed, e.g. while the beat was down, are recorded as skipped, never sent late in a
  burst). Reminders on and after the due date announce the suspension date;
- once every reminder is done and the announced date has come, the order is suspended:
  a ``Suspension`` with its events, the contract moved to suspended, the nodes powered off
  by provisioning (enqueued by task name, never wiped, nothing deleted), the customer
  emailed.

A period already paid is never suspended: the suspension date is never before the unpaid
invoice's own period starts (``invoice_service_start``), no suspension starts while a paid
period runs, and a suspension ends (nodes powered on) once a paid period begins
(``suspensions_resume_paid_period``, every run) or its invoice is paid. Every step is
recorded once per (invoice, step) under the invoice's row lock and a unique constraint,
so a run twice, or two runs at once, send and create nothing twice. An invoice paid (or
voided) resumes its order's suspension: ``dunning_invoice_paid`` from the payment path,
and the beat job as a backstop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone, translation

from billing.invoicing import services as invoicing
from billing.models import (
    ORDER_IN_SERVICE_STATUSES,
    ContractStatus,
    DunningAction,
    DunningNotice,
    DunningNoticeStatus,
    DunningPolicy,
    DunningStep,
    Invoice,
    InvoiceStatus,
    Order,
    OrderStatus,
    PaymentStatus,
    Suspension,
    SuspensionStatus,
)
from billing.pricing import late_fees
from core import jobs, lifecycle
from core.texts import Text
from core.types import Actor

logger = logging.getLogger(__name__)

# Provisioning powers the order's nodes to match its suspension state (off while an open
# suspension exists, on otherwise); billing knows it only by this name.
POWER_SYNC_TASK = "provisioning.tasks.order_power_sync"
NOTICE_EMAIL_TASK = "billing.tasks.dunning_notice_email"
SUSPENSION_EMAIL_TASK = "billing.tasks.suspension_email"

# Orders whose first payment opened the service: their later invoices are dunned.
DUNNED_ORDER_STATUSES = ORDER_IN_SERVICE_STATUSES
# Only a delivered order has running nodes to power off; others wait for the next run.
SUSPENDABLE_ORDER_STATUSES = (OrderStatus.READY,)
# Invoices that no longer keep an order suspended.
SETTLED = (InvoiceStatus.PAID, InvoiceStatus.VOID)


@dataclass
class DunningResult:
    reminders: int = 0
    skipped: int = 0
    suspended: int = 0
    resumed: int = 0


def active_policy() -> DunningPolicy | None:
    return DunningPolicy.objects.filter(active=True).prefetch_related("steps").first()


def invoice_service_start(invoice: Invoice) -> datetime:
    """When the service this invoice pays for begins: its billing period's start, or the
    order's start for an invoice of the whole order."""
    return invoice.period_start or invoice.order.start_at


def _at(invoice: Invoice, step: DunningStep) -> datetime:
    return invoice.due_at + timedelta(days=step.offset_days)


def earliest_suspension(invoice: Invoice, suspend: DunningStep) -> datetime:
    """The grace period after the due date, and never inside a period already paid: not
    before the unpaid invoice's own period starts."""
    return max(_at(invoice, suspend), invoice_service_start(invoice))


def paid_period_invoice(order: Order, now: datetime) -> Invoice | None:
    """The paid invoice whose billing period is running at ``now``: while there is one,
    the order is never suspended (the contract's §11), whatever else is unpaid."""
    return (
        Invoice.objects.filter(
            order=order,
            status=InvoiceStatus.PAID,
            period_start__lte=now,
            period_end__gt=now,
        )
        .order_by("period_seq")
        .first()
    )


def _settlements(invoice: Invoice) -> list[tuple[date, Decimal]]:
    """(day received, amount) of the invoice's payments (by value date) and credits."""
    tz = invoice.order.site.tzinfo
    settlements: list[tuple[date, Decimal]] = []
    for payment in invoice.payments.filter(
        status__in=(PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED), duplicate_of__isnull=True
    ):
        at = payment.succeeded_at or payment.created_at
        settlements.append((payment.value_date or at.astimezone(tz).date(), payment.amount))
    for application in invoice.credit_applications.all():
        settlements.append((application.applied_at.astimezone(tz).date(), application.amount))
    return settlements


def invoice_late_fee(invoice: Invoice, *, until: datetime | None = None) -> Decimal:
    """The late fee the contract's clause 10 gives on ``invoice`` up to ``until`` (today):
    ``billing.pricing.late_fees.late_fee`` over its payments (by value date) and credits.
    A late-fee document bears no late fee of its own (no fee on a fee)."""
    if invoice.late_fee_for_id is not None:
        return Decimal("0")
    tz = invoice.order.site.tzinfo
    return late_fees.late_fee(
        total=invoice.gross_total,
        due_on=invoice.due_at.astimezone(tz).date(),
        settlements=_settlements(invoice),
        until=(until or timezone.now()).astimezone(tz).date(),
    )


# How far back the late-fee job looks for documents paid (it runs hourly; a document paid
# after its due date is invoiced its fee at the next run).
LATE_FEE_WINDOW = timedelta(days=90)


def late_fees_invoice_due(*, now: datetime | None = None) -> int:
    """Beat (idempotent): the late fee of every document paid after its due date is
    invoiced, as contract §10 says, on a payment notice of its own once the overdue
    document is paid in full (the fee is final then: computed to the day each part was
    received). One late-fee document per overdue document (a one-to-one link, checked
    under the order's lock). Returns how many were issued."""
    now = now or timezone.now()
    issued = 0
    overdue_paid = (
        Invoice.objects.filter(
            status=InvoiceStatus.PAID,
            late_fee_for__isnull=True,
            late_fee_invoice__isnull=True,
            paid_at__gte=now - LATE_FEE_WINDOW,
        )
        .select_related("order__site")
        .prefetch_related("payments", "credit_applications")
    )
    for invoice in overdue_paid:
        fee = invoice_late_fee(invoice)
        if fee <= 0:
            continue
        tz = invoice.order.site.tzinfo
        last_day = max(
            (day for day, _amount in _settlements(invoice)),
            default=invoice.paid_at.astimezone(tz).date() if invoice.paid_at else now.date(),
        )
        if (
            invoicing.invoice_issue_late_fee(
                invoice=invoice,
                fee=fee,
                due_on=invoice.due_at.astimezone(tz).date(),
                last_day=last_day,
                rate_percent=late_fees.LATE_FEE_PER_DAY,
                now=now,
            )
            is not None
        ):
            issued += 1
    return issued


def suspensions_resume_paid_period(*, now: datetime | None = None) -> int:
    """Resume every suspended order whose running billing period is paid (the unpaid
    invoice stays unpaid and dunned; the paid period is served)."""
    now = now or timezone.now()
    resumed = 0
    for suspension in Suspension.objects.filter(status=SuspensionStatus.SUSPENDED).select_related(
        "order"
    ):
        paid = paid_period_invoice(suspension.order, now)
        if paid is not None:
            resumed += suspension_resume(suspension=suspension, paid_period=paid)
    return resumed


def dunning_run(*, now: datetime | None = None) -> DunningResult:
    """The beat job (idempotent): resume what was paid (or whose running period is paid),
    then one step per unpaid invoice."""
    now = now or timezone.now()
    result = DunningResult(
        resumed=suspensions_resume_settled() + suspensions_resume_paid_period(now=now)
    )
    policy = active_policy()
    if policy is None:
        return result
    steps = policy.ordered_steps()
    if not steps:
        return result
    first = min(s.offset_days for s in steps)
    candidates = list(
        Invoice.objects.filter(
            status=InvoiceStatus.ISSUED,
            order__status__in=DUNNED_ORDER_STATUSES,
            order__end_at__gt=now,
            due_at__lte=now - timedelta(days=first),
        )
        .order_by("due_at", "pk")
        .values_list("pk", flat=True)
    )
    for pk in candidates:
        _invoice_step(pk, steps, now, result)
    return result


@transaction.atomic
def _invoice_step(
    invoice_id: int, steps: list[DunningStep], now: datetime, result: DunningResult
) -> None:
    # Lock the order, then the invoice: the same order as the payment path (no deadlock).
    order_id = Invoice.objects.values_list("order_id", flat=True).get(pk=invoice_id)
    order = Order.objects.select_for_update().select_related("site").get(pk=order_id)
    invoice = Invoice.objects.select_for_update().get(pk=invoice_id)
    invoice.order = order
    if invoice.status != InvoiceStatus.ISSUED:
        return
    done = {n.step_id: n for n in invoice.dunning_notices.all()}
    reminders = [s for s in steps if s.action == DunningAction.REMIND]
    suspend = next((s for s in steps if s.action == DunningAction.SUSPEND), None)
    due = [s for s in reminders if s.pk not in done and _at(invoice, s) <= now]
    if due:
        latest = due[-1]
        for missed in due[:-1]:
            DunningNotice.objects.create(
                invoice=invoice, step=missed, status=DunningNoticeStatus.SKIPPED
            )
            result.skipped += 1
        suspend_on = None
        if suspend is not None and latest.announces_suspension:
            # Announced in advance: at least the policy's gap after this reminder.
            gap = timedelta(days=suspend.offset_days - latest.offset_days)
            suspend_on = max(earliest_suspension(invoice, suspend), now + gap)
        notice = DunningNotice.objects.create(
            invoice=invoice, step=latest, status=DunningNoticeStatus.SENT, suspend_on=suspend_on
        )
        jobs.enqueue(NOTICE_EMAIL_TASK, notice.pk)
        result.reminders += 1
        return
    if suspend is None or suspend.pk in done or invoice.late_fee_for_id is not None:
        return  # a late-fee document is reminded, never a reason to suspend (§10)
    if any(s.pk not in done for s in reminders):
        return  # a reminder is still to come
    when = earliest_suspension(invoice, suspend)
    announced = [n.suspend_on for n in done.values() if n.suspend_on is not None]
    if announced:
        when = max(when, *announced)
    if now < when:
        return
    if order.status not in SUSPENDABLE_ORDER_STATUSES:
        return
    if paid_period_invoice(order, now) is not None:
        return  # never inside a paid period: waits until an unpaid one runs
    if Suspension.objects.filter(order=order, status=SuspensionStatus.SUSPENDED).exists():
        return  # already suspended for another invoice; this one waits its turn
    suspension_start(invoice=invoice, order=order, now=now)
    DunningNotice.objects.create(invoice=invoice, step=suspend, status=DunningNoticeStatus.DONE)
    result.suspended += 1


def suspension_start(
    *, invoice: Invoice, order: Order, now: datetime, actor: Actor = None
) -> Suspension:
    """Suspend ``order`` for ``invoice`` (the caller holds both rows' locks): its active
    contract moves to suspended, its nodes are powered off, the customer is told."""
    suspension = Suspension.objects.create(order=order, invoice=invoice, suspended_at=now)
    with translation.override(_customer_language(order)):
        reason = _suspended_reason(invoice, order)
    lifecycle.record_creation([suspension], actor=actor, reason=reason)
    for contract in order.contracts.filter(status=ContractStatus.ACTIVE):
        lifecycle.transition(contract, to=ContractStatus.SUSPENDED, actor=actor, reason=reason)
    lifecycle.record_note([order], actor=actor, reason=reason)
    jobs.enqueue(POWER_SYNC_TASK, order.pk)
    jobs.enqueue(SUSPENSION_EMAIL_TASK, suspension.pk, SuspensionStatus.SUSPENDED.value)
    return suspension


def _customer_language(order: Order) -> str:
    """Events the customer reads are written in their language (their quote's)."""
    return order.quote.language


def _suspended_reason(invoice: Invoice, order: Order) -> str:
    return Text(
        "Invoice %(n)s is unpaid since %(due)s: order %(order)s is suspended and its nodes "
        "are powered off. No data is deleted; paying the invoice resumes it.",
        n=invoice.number,
        due=timezone.localtime(invoice.due_at, order.site.tzinfo).strftime("%Y-%m-%d"),
        order=order.number,
    )


def suspension_resume(
    *, suspension: Suspension, actor: Actor = None, paid_period: Invoice | None = None
) -> bool:
    """Resume a suspended order whose invoice was paid (or voided), or whose running
    billing period is paid (``paid_period``); ``True`` when this call resumed it. Safe
    to call twice."""
    with transaction.atomic():
        locked = (
            Suspension.objects.select_for_update(of=("self",))
            .select_related("order", "invoice")
            .get(pk=suspension.pk)
        )
        if locked.status != SuspensionStatus.SUSPENDED:
            return False
        invoice = locked.invoice
        if invoice.status not in SETTLED and paid_period is None:
            return False
        with translation.override(_customer_language(locked.order)):
            if invoice.status not in SETTLED and paid_period is not None:
                reason = Text(
                    "The billing period from %(start)s is paid (invoice %(paid)s): order "
                    "%(order)s is resumed and its nodes powered on for it. Invoice %(n)s is "
                    "still unpaid.",
                    start=timezone.localtime(
                        invoice_service_start(paid_period), locked.order.site.tzinfo
                    ).strftime("%Y-%m-%d"),
                    paid=paid_period.number,
                    order=locked.order.number,
                    n=invoice.number,
                )
            else:
                reason = (
                    Text(
                        "Invoice %(n)s was paid: order %(order)s is resumed and its nodes "
                        "powered on.",
                        n=invoice.number,
                        order=locked.order.number,
                    )
                    if invoice.status == InvoiceStatus.PAID
                    else Text(
                        "Invoice %(n)s was voided: order %(order)s is resumed and its nodes "
                        "powered on.",
                        n=invoice.number,
                        order=locked.order.number,
                    )
                )
        lifecycle.transition(
            locked,
            to=SuspensionStatus.RESUMED,
            actor=actor,
            reason=reason,
            updates={"resumed_at": timezone.now()},
            locked=True,
        )
        order = locked.order
        if order.end_at > timezone.now():
            for contract in order.contracts.filter(status=ContractStatus.SUSPENDED):
                lifecycle.transition(contract, to=ContractStatus.ACTIVE, actor=actor, reason=reason)
        lifecycle.record_note([order], actor=actor, reason=reason)
        jobs.enqueue(POWER_SYNC_TASK, order.pk)
        jobs.enqueue(SUSPENSION_EMAIL_TASK, locked.pk, SuspensionStatus.RESUMED.value)
        return True


def dunning_invoice_paid(*, invoice: Invoice, actor: Actor = None) -> bool:
    """The payment path calls this once an invoice is paid: its suspension ends now."""
    suspension = Suspension.objects.filter(
        invoice=invoice, status=SuspensionStatus.SUSPENDED
    ).first()
    if suspension is not None:
        return suspension_resume(suspension=suspension, actor=actor)
    # Paying the running period's invoice ends a suspension for an earlier one.
    other = open_suspension(invoice.order)
    if other is not None and paid_period_invoice(invoice.order, timezone.now()) is not None:
        return suspension_resume(
            suspension=other,
            actor=actor,
            paid_period=paid_period_invoice(invoice.order, timezone.now()),
        )
    return False


def suspensions_resume_settled() -> int:
    """Resume every suspension whose invoice is paid or void (the beat's backstop)."""
    resumed = 0
    for suspension in Suspension.objects.filter(
        status=SuspensionStatus.SUSPENDED, invoice__status__in=SETTLED
    ):
        resumed += suspension_resume(suspension=suspension)
    return resumed


def open_suspension(order: Order) -> Suspension | None:
    return (
        Suspension.objects.filter(order=order, status=SuspensionStatus.SUSPENDED)
        .select_related("invoice")
        .first()
    )


def announced_suspension(order: Order) -> DunningNotice | None:
    """The latest reminder of an unpaid invoice of ``order`` that announced a date."""
    return (
        DunningNotice.objects.filter(
            invoice__order=order,
            invoice__status=InvoiceStatus.ISSUED,
            suspend_on__isnull=False,
            invoice__suspension__isnull=True,
        )
        .select_related("invoice")
        .order_by("-created_at", "-pk")
        .first()
    )
