"""Invoices over the term: one document per billing period of ``billing.pricing.schedule``.

- The first period's document is issued when the quote is accepted
  (``invoice_issue_first``, called by ``order_create_from_quote``); it is due at the
  order's payment deadline.
- Later periods are issued by a beat job (``invoices_issue_due``) on their issue day and
  due as ``billing.pricing.schedule`` states it (``PORTAL_INVOICE_ISSUE_DAYS`` days before
  each period starts, due when it starts; the one rule the contract and pages print). The
  unique (order, period) constraint makes the job idempotent: run twice, it issues nothing
  twice.
- Each document has its lines (the period's share of every quote line, with the line's
  tax category and rate), metered usage of closed months billed in arrears, and the SLA
  credits not yet applied (negative lines with their explanation and evidence).
- Every document snapshots the customer's fapiao request for finance.

Only orders that were paid (their first period) get later periods; an order that lapsed
or was cancelled gets nothing more. The documents of the schedule add up to the accepted
quote's totals to the cent (``billing.pricing.schedule`` splits every line in whole cents).
"""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import override

from accounts.models import Organisation
from billing.documents.numbers import next_number
from billing.invoicing import ledger
from billing.models import (
    ORDER_IN_SERVICE_STATUSES,
    AddonPrice,
    Invoice,
    InvoiceLine,
    InvoiceLineKind,
    InvoiceStatus,
    Order,
    OrderStatus,
    PriceBook,
    QuoteLine,
    SlaCredit,
    TaxCategory,
    UsageMetric,
    UsageRecord,
)
from billing.pricing import schedule as schedule_engine
from billing.pricing.terms import billing_schedule
from core import jobs, lifecycle
from core.texts import Text
from core.types import Actor

logger = logging.getLogger(__name__)

CENT = Decimal("0.01")
EGRESS_CODE = "egress"
# Orders whose later periods are issued: the first period was paid and the rental runs.
ISSUING_STATUSES = ORDER_IN_SERVICE_STATUSES


def cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def tax_rate_for(*, price_book: PriceBook, category: str) -> Decimal:
    """The VAT rate of a tax category in a price book (the site's rate when not listed)."""
    raw = (price_book.tax_rates or {}).get(category)
    return Decimal(str(raw)) if raw is not None else price_book.site.vat_rate


def fapiao_snapshot(organisation: Organisation) -> dict[str, str]:
    """The customer's fapiao request as it is now (kept on each issued document)."""
    return {
        "type": organisation.fapiao_type,
        "type_label_zh": _fapiao_label(organisation, "zh-hans"),
        "title": organisation.fapiao_buyer,
        "tax_id": organisation.tax_id,
        "address_phone": organisation.fapiao_address_phone,
        "bank_account": organisation.fapiao_bank_account,
    }


def _fapiao_label(organisation: Organisation, language: str) -> str:
    with override(language):
        return str(organisation.get_fapiao_type_display())


# --- The schedule of an order -------------------------------------------------------------


def _quote_lines(order: Order) -> list[QuoteLine]:
    return [line for line in order.quote.lines.all() if line.kind != "free"]


def order_schedule(
    order: Order, quote_lines: list[QuoteLine] | None = None
) -> list[schedule_engine.Period]:
    """The order's billing periods with their lines (``billing.pricing.schedule``). Each period
    line's ``code`` is the quote line's position (see ``_charge_rows``)."""
    quote = order.quote
    if quote_lines is None:
        quote_lines = _quote_lines(order)
    lines = [
        schedule_engine.ChargeLine(
            code=str(line.position),
            description=line.description,
            net=line.net,
            vat=line.vat,
            tax_rate=line.vat_rate or quote.vat_rate,
            period_unit=line.period_unit,
        )
        for line in quote_lines
    ]
    return billing_schedule(quote=quote, tz=order.site.tzinfo, lines=lines, order=order)


def _charge_rows(
    order: Order, period: schedule_engine.Period, quote_lines: list[QuoteLine]
) -> list[dict[str, Any]]:
    by_position = {str(line.position): line for line in quote_lines}
    tz = order.site.tzinfo
    first = period.start.astimezone(tz).date()
    last = (period.end.astimezone(tz) - timedelta(microseconds=1)).date()
    span = f"{first:%Y-%m-%d} – {last:%Y-%m-%d}"
    count = len(periods_of(order))
    rows = []
    for pl in period.lines:
        quote_line = by_position[pl.code]
        one_off = quote_line.period_unit in schedule_engine.ONE_OFF_UNITS
        priced = _priced_parts(quote_line, pl.net, one_off=one_off, periods=count)
        rows.append(
            {
                "kind": InvoiceLineKind.CHARGE,
                "code": quote_line.code,
                "description": quote_line.description + ("" if one_off else f" ({span})"),
                "description_zh": (quote_line.description_zh or quote_line.description)
                + ("" if one_off else f"（{span}）"),
                "quantity": quote_line.quantity,
                "unit": quote_line.unit,
                "unit_price": quote_line.unit_price,
                **priced,
                "net": pl.net,
                "vat": pl.vat,
                "vat_rate": quote_line.vat_rate or order.quote.vat_rate,
                "tax_category": quote_line.tax_category,
                "detail": {
                    "quote_line": quote_line.position,
                    "period": period.seq,
                    "period_unit": quote_line.period_unit,
                },
            }
        )
    return rows


def periods_of(order: Order) -> list[tuple[datetime, datetime]]:
    quote = order.quote
    return schedule_engine.billing_periods(
        term=quote.term, duration=quote.duration, start_date=quote.start_date, tz=order.site.tzinfo
    )


def _priced_parts(
    quote_line: QuoteLine, net: Decimal, *, one_off: bool, periods: int
) -> dict[str, Any]:
    """List price, discount and net of one period's share of a quote line, consistent on
    the line: quantity × periods × unit price = list amount; list amount − discount = net.

    A recurring line charges ``quote periods / billing periods`` of its unit (12 months
    billed monthly: 1 month per invoice; billed quarterly: 3). The list amount is computed
    on the line (so 数量 × 单价 = 金额 holds exactly); the discount is what the quote's
    adjustments take off this period's share, so the net is the schedule's to the cent.
    """
    share = Decimal(quote_line.periods) if one_off else Decimal(quote_line.periods) / periods
    share = share.normalize()
    list_amount = cents(Decimal(quote_line.quantity) * share * quote_line.unit_price)
    if list_amount < net:  # a line priced above its list (never from the engine): no discount
        list_amount = net
    return {
        "periods": share,
        "period_unit": quote_line.period_unit,
        "list_amount": list_amount,
        "discount": list_amount - net,
    }


# --- Metered usage, billed monthly in arrears -----------------------------------------


def _month_start(day: date) -> date:
    return day.replace(day=1)


def egress_allowance(order: Order) -> Decimal:
    """Egress TB the accepted quote already charged (a prepaid estimate)."""
    return sum(
        (line.quantity for line in _quote_lines(order) if line.code == EGRESS_CODE),
        Decimal("0"),
    )


def _usage_rows(order: Order, *, before: date) -> tuple[list[dict[str, Any]], list[int]]:
    """Lines for the order's unbilled egress usage of months ended before ``before``
    (site dates), and the usage record ids they bill. Usage up to the quote's prepaid
    allowance is not billed again."""
    records = list(
        UsageRecord.objects.filter(
            order=order,
            metric=UsageMetric.EGRESS_TB,
            invoice__isnull=True,
            day__lt=_month_start(before),
        )
        .select_related("voids")
        .order_by("day", "pk")
    )
    if not records:
        return [], []
    price = (
        AddonPrice.objects.filter(price_book_id=order.quote.price_book_id, code=EGRESS_CODE)
        .values_list("price", flat=True)
        .first()
    )
    if price is None:
        logger.warning("Order %s has egress usage but no egress price: not billed", order.number)
        return [], []
    book = PriceBook.objects.select_related("site").get(pk=order.quote.price_book_id)
    rate = tax_rate_for(price_book=book, category=TaxCategory.TELECOM)
    already = sum(
        (
            r.quantity
            for r in UsageRecord.objects.filter(
                order=order, metric=UsageMetric.EGRESS_TB, invoice__isnull=False
            )
        ),
        Decimal("0"),
    )
    allowance_left = max(egress_allowance(order) - already, Decimal("0"))
    # Billed beyond the prepaid allowance so far: what corrections can give back.
    billed_beyond = max(already - egress_allowance(order), Decimal("0"))
    months: dict[date, list[UsageRecord]] = {}
    corrections: dict[date, list[UsageRecord]] = {}
    for record in records:
        # A voiding record of a record billed already corrects that invoice; one whose
        # record is still unbilled cancels it out within the month below.
        corrects_billed = record.voids_id is not None and record.voids.invoice_id is not None
        group = corrections if corrects_billed else months
        group.setdefault(_month_start(record.day), []).append(record)
    rows = []
    for month in sorted(set(months) | set(corrections)):
        items = months.get(month, [])
        if items:
            used = sum((r.quantity for r in items), Decimal("0"))
            covered = min(used, allowance_left)
            allowance_left -= covered
            billable = used - covered
            net = cents(billable * price)
            rows.append(
                {
                    "kind": InvoiceLineKind.USAGE,
                    "code": EGRESS_CODE,
                    "description": (
                        f"Internet egress traffic {month:%Y-%m}: {used} TB used, {covered} TB "
                        f"in the prepaid allowance, {billable} TB billed in arrears"
                    ),
                    "description_zh": (
                        f"公网出口流量 {month:%Y-%m}：实际用量 {used} TB，预付额度内 {covered} "
                        f"TB，超出 {billable} TB 按实际用量后付"
                    ),
                    "quantity": billable,
                    "unit": "tb",
                    "unit_price": price,
                    "list_amount": net,
                    "net": net,
                    "vat": cents(net * rate),
                    "vat_rate": rate,
                    "tax_category": TaxCategory.TELECOM,
                    "detail": {
                        "month": f"{month:%Y-%m}",
                        "used_tb": str(used),
                        "prepaid_tb": str(covered),
                        "records": len(items),
                    },
                }
            )
        voids = corrections.get(month, [])
        if voids:
            voided = -sum((r.quantity for r in voids), Decimal("0"))
            given_back = min(voided, billed_beyond)
            billed_beyond -= given_back
            net = cents(-given_back * price)
            reasons = "; ".join(dict.fromkeys(r.void_reason for r in voids))
            rows.append(
                {
                    "kind": InvoiceLineKind.USAGE,
                    "code": EGRESS_CODE,
                    "description": (
                        f"Correction: internet egress traffic {month:%Y-%m}, "
                        f"{voided} TB voided ({reasons})"
                    ),
                    "description_zh": (
                        f"更正：公网出口流量 {month:%Y-%m}，作废 {voided} TB（{reasons}）"
                    ),
                    "quantity": -given_back,
                    "unit": "tb",
                    "unit_price": price,
                    "list_amount": net,
                    "net": net,
                    "vat": cents(net * rate),
                    "vat_rate": rate,
                    "tax_category": TaxCategory.TELECOM,
                    "detail": {
                        "month": f"{month:%Y-%m}",
                        "voided_tb": str(voided),
                        "credited_tb": str(given_back),
                        "reasons": reasons,
                        "records": len(voids),
                    },
                }
            )
    return rows, [r.pk for r in records]


# --- SLA credits not yet applied ----------------------------------------------------------


def _credit_rows(order: Order) -> tuple[list[dict[str, Any]], list[SlaCredit]]:
    credits = list(
        SlaCredit.objects.select_for_update()
        .filter(order=order, invoice_line__isnull=True, credit_note__isnull=True)
        .exclude(amount=0)
        .order_by("period_seq", "node_ref")
    )
    rows = []
    for credit in credits:
        rate = Decimal(str(credit.evidence.get("vat_rate", "0")))
        rows.append(
            {
                "kind": InvoiceLineKind.CREDIT,
                "code": "sla-credit",
                "description": credit.evidence.get("explanation_en", credit.explanation),
                "description_zh": credit.evidence.get("explanation_zh", credit.explanation),
                "quantity": Decimal("1"),
                "unit": "",
                "unit_price": -credit.amount,
                "list_amount": -credit.amount,
                "net": -credit.amount,
                "vat": -cents(credit.amount * rate),
                "vat_rate": rate,
                "tax_category": credit.evidence.get("tax_category", TaxCategory.IT_SERVICE),
                "detail": {"sla_credit": credit.pk, **credit.evidence},
            }
        )
    return rows, credits


# --- Issuing ----------------------------------------------------------------------------


def _invoice_create(
    *,
    order: Order,
    rows: list[dict[str, Any]],
    due_at: datetime,
    actor: Actor,
    period: schedule_engine.Period | None,
    now: datetime,
    reason: str = "",
    late_fee_for: Invoice | None = None,
) -> Invoice:
    net = sum((r["net"] for r in rows), Decimal("0"))
    vat = sum((r["vat"] for r in rows), Decimal("0"))
    year = now.astimezone(order.site.tzinfo).year
    number = next_number(kind="I", site=order.site, year=year)
    invoice = Invoice.objects.create(
        number=number,
        order=order,
        organisation=order.organisation,
        currency=order.currency,
        net_total=net,
        vat_total=vat,
        gross_total=net + vat,
        issued_at=now,
        due_at=due_at,
        bank_reference=number.replace("-", ""),
        period_seq=period.seq if period else None,
        period_start=period.start if period else None,
        period_end=period.end if period else None,
        fapiao=fapiao_snapshot(order.organisation),
        late_fee_for=late_fee_for,
    )
    InvoiceLine.objects.bulk_create(
        [InvoiceLine(invoice=invoice, position=i + 1, **row) for i, row in enumerate(rows)]
    )
    lifecycle.record_creation(
        [invoice],
        actor=actor,
        reason=reason
        or (
            _("Issued for billing period %(seq)s.") % {"seq": period.seq}
            if period
            else Text("Issued for metered usage.")
        ),
    )
    # The customer's credit balance in this currency lowers what is due, by itself.
    applied = ledger.credit_balance_apply(invoice=invoice, now=now)
    if applied:
        invoice.refresh_from_db()
        lifecycle.record_note(
            [invoice],
            actor=actor,
            reason=Text(
                "Credit balance applied: %(amount)s %(cur)s; %(due)s still due.",
                amount=applied,
                cur=invoice.currency,
                due=invoice.amount_due,
            ),
        )
    jobs.enqueue("billing.tasks.document_render_invoice", invoice.pk, order.quote.language)
    jobs.enqueue("billing.tasks.invoice_issued_email", invoice.pk)
    return invoice


def invoice_paid_by_credit(*, invoice: Invoice, actor: Actor = None) -> bool:
    """A later period's invoice that credits cover in full is paid (no payment is due).
    The first period's document goes through the order's paid path instead."""
    if invoice.status != InvoiceStatus.ISSUED or invoice.amount_due > 0:
        return False
    reason = Text("Paid in full by credit notes and the credit balance.")
    lifecycle.transition(
        invoice,
        to=InvoiceStatus.PAID,
        actor=actor,
        reason=reason,
        updates={"paid_at": timezone.now()},
    )
    return True


def invoice_issue_first(*, order: Order, due_at: datetime, actor: Actor) -> Invoice:
    """The first period's document, issued with the order (inside its transaction)."""
    quote_lines = _quote_lines(order)
    period = order_schedule(order, quote_lines)[0]
    return _invoice_create(
        order=order,
        rows=_charge_rows(order, period, quote_lines),
        due_at=due_at,
        actor=actor,
        period=period,
        now=timezone.now(),
    )


def is_legacy(order: Order) -> bool:
    """An order from before the schedule: its one invoice (no lines, no period) billed the
    whole term, so no period is issued for it."""
    return Invoice.objects.filter(order=order, period_seq__isnull=True, lines__isnull=True).exists()


def invoice_issue_period(
    *, order: Order, seq: int, now: datetime | None = None, actor: Actor = None
) -> Invoice | None:
    """Issue period ``seq`` of a paid order with its usage and credit lines. Returns the
    new invoice, or ``None`` when it exists already (idempotent) or the order does not
    bill any more."""
    now = now or timezone.now()
    with transaction.atomic():
        order = (
            Order.objects.select_for_update()
            .select_related("site", "quote", "organisation")
            .get(pk=order.pk)
        )
        if order.status not in ISSUING_STATUSES:
            return None
        if Invoice.objects.filter(order=order, period_seq=seq).exists() or is_legacy(order):
            return None
        quote_lines = _quote_lines(order)
        periods = order_schedule(order, quote_lines)
        if not 1 <= seq <= len(periods):
            return None
        period = periods[seq - 1]
        rows = _charge_rows(order, period, quote_lines)
        today = now.astimezone(order.site.tzinfo).date()
        usage_rows, usage_ids = _usage_rows(order, before=today)
        credit_rows, credits = _credit_rows(order)
        gross = sum((r["net"] + r["vat"] for r in rows + usage_rows + credit_rows), Decimal("0"))
        if gross < 0:  # credits larger than the invoice: they go on a credit note instead
            credit_rows, credits = [], []
        due_at = schedule_engine.due_at(period_start=period.start, issued_at=now)
        try:
            with transaction.atomic():
                invoice = _invoice_create(
                    order=order,
                    rows=rows + usage_rows + credit_rows,
                    due_at=due_at,
                    actor=actor,
                    period=period,
                    now=now,
                )
        except IntegrityError:
            return None
        _link(invoice, usage_ids, credits)
        invoice_paid_by_credit(invoice=invoice, actor=actor)
        return invoice


def _link(invoice: Invoice, usage_ids: list[int], credits: list[SlaCredit]) -> None:
    if usage_ids:
        UsageRecord.objects.filter(pk__in=usage_ids).update(invoice=invoice)
    if credits:
        lines = {
            line.detail.get("sla_credit"): line
            for line in invoice.lines.filter(kind=InvoiceLineKind.CREDIT)
        }
        for credit in credits:
            credit.invoice_line = lines[credit.pk]
            credit.save(update_fields=["invoice_line"])


def invoice_issue_usage(*, order: Order, now: datetime | None = None) -> Invoice | None:
    """After the last period: the order's closed months of usage on a document of their
    own (outside the schedule). ``None`` when there is nothing to bill."""
    now = now or timezone.now()
    with transaction.atomic():
        order = Order.objects.select_for_update().select_related("site", "quote").get(pk=order.pk)
        today = now.astimezone(order.site.tzinfo).date()
        rows, usage_ids = _usage_rows(order, before=today)
        if not rows:
            return None
        invoice = _invoice_create(
            order=order,
            rows=rows,
            due_at=schedule_engine.extra_due_at(issued_at=now),
            actor=None,
            period=None,
            now=now,
        )
        _link(invoice, usage_ids, [])
        return invoice


def _late_fee_row(
    invoice: Invoice, *, fee: Decimal, due_on: date, last_day: date, rate_percent: Decimal
) -> dict[str, Any]:
    """The late fee as one line, taxed as the overdue document's main charge (a late fee
    is part of the price of what was sold, 价外费用): the fee is the gross amount, its VAT
    is taken out of it (net = fee ÷ (1 + rate), to the cent)."""
    main = invoice.lines.exclude(kind=InvoiceLineKind.CREDIT).order_by("-net", "position").first()
    rate = main.vat_rate if main is not None else invoice.order.quote.vat_rate
    category = main.tax_category if main is not None else TaxCategory.IT_SERVICE
    net = cents(fee / (1 + rate))
    values = {
        "n": invoice.number,
        "due": due_on.isoformat(),
        "last": last_day.isoformat(),
        "rate": f"{rate_percent.normalize():f}",
    }
    return {
        "kind": InvoiceLineKind.LATE_FEE,
        "code": "late_fee",
        "description": (
            "Late fee on {n}: {rate} % a day from the day after {due} to {last}, "
            "on what was unpaid each day (contract §10)"
        ).format(**values),
        "description_zh": (
            "{n} 滞纳金：自 {due} 次日起至 {last}，按每日未付金额的 {rate}% 计（合同第十条）"
        ).format(**values),
        "quantity": Decimal("1"),
        "unit": "",
        "unit_price": net,
        "periods": Decimal("1"),
        "period_unit": "",
        "list_amount": net,
        "discount": Decimal("0"),
        "net": net,
        "vat": fee - net,
        "vat_rate": rate,
        "tax_category": category,
        "detail": {
            "late_fee_for": invoice.number,
            "due_on": values["due"],
            "last_day": values["last"],
            "rate_percent": values["rate"],
            "fee": str(fee),
        },
    }


def invoice_issue_late_fee(
    *,
    invoice: Invoice,
    fee: Decimal,
    due_on: date,
    last_day: date,
    rate_percent: Decimal,
    now: datetime | None = None,
) -> Invoice | None:
    """The late-fee document of ``invoice`` (paid after its due date; ``fee`` computed by
    ``billing.dunning``): one line, due ``EXTRA_PAY_DAYS`` after it is issued. ``None``
    when it exists already (idempotent) or there is no fee."""
    now = now or timezone.now()
    if fee <= 0:
        return None
    with transaction.atomic():
        order = (
            Order.objects.select_for_update()
            .select_related("site", "quote")
            .get(pk=invoice.order_id)
        )
        if Invoice.objects.filter(late_fee_for=invoice).exists():
            return None
        row = _late_fee_row(
            invoice, fee=fee, due_on=due_on, last_day=last_day, rate_percent=rate_percent
        )
        try:
            with transaction.atomic():
                created = _invoice_create(
                    order=order,
                    rows=[row],
                    due_at=schedule_engine.extra_due_at(issued_at=now),
                    actor=None,
                    period=None,
                    now=now,
                    reason=Text("Late fee on %(n)s.", n=invoice.number),
                    late_fee_for=invoice,
                )
        except IntegrityError:
            return None
        return created


def invoices_issue_due(*, now: datetime | None = None) -> int:
    """Beat: issue every later period whose issue day has come, and bill closed months of
    usage of orders past their last period. Idempotent: run twice, it issues nothing twice.
    Returns how many documents were issued."""
    now = now or timezone.now()
    issued = 0
    candidates = Order.objects.filter(status__in=ISSUING_STATUSES).select_related("site", "quote")
    for order in candidates:
        existing = set(
            Invoice.objects.filter(order=order, period_seq__isnull=False).values_list(
                "period_seq", flat=True
            )
        )
        periods = order_schedule(order)
        today = now.astimezone(order.site.tzinfo).date()
        for period in periods[1:]:
            if period.seq in existing or period.issue_on > today:
                continue
            if invoice_issue_period(order=order, seq=period.seq, now=now) is not None:
                issued += 1
    # Once every period is issued there is no next invoice: closed months of usage go on
    # a document of their own, month by month.
    for order in Order.objects.filter(
        status__in=(*ISSUING_STATUSES, OrderStatus.ENDED), usage_records__invoice__isnull=True
    ).distinct():
        last = order_schedule(order)[-1].seq
        if Invoice.objects.filter(order=order, period_seq=last).exists() and (
            invoice_issue_usage(order=order, now=now) is not None
        ):
            issued += 1
    return issued
