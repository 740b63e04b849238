"""Automatic SLA credits: nobody claims them.

Billing does not read provisioning: the provisioning layer gathers each node's facts
(event history, swaps, delivery time, re-validations) as ``billing.pricing.sla.NodeFacts`` and
calls ``sla_credits_record``. For every calendar month (site time) of the order's term that
has ended, each node's credit is computed once (``billing.pricing.sla.node_credit``; the
unique (order, node, month) row makes a second run a no-op) from the node's charge for that
month (its billing periods' charges prorated by time, ``billing.pricing.sla.month_charge``).
A credit goes on the order's next invoice as a negative line with its explanation and
evidence (``billing.invoicing.services``); once no invoice follows (the last period is
issued, or the order bills no more), it becomes a credit note (红字) on the invoice of the
month's billing period; above the approval threshold that credit note waits for finance.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, tzinfo
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from billing.credits import services as credit_services
from billing.invoicing import services as invoicing
from billing.models import (
    CreditNote,
    CreditNoteRequest,
    CreditNoteRequestStatus,
    Invoice,
    InvoiceStatus,
    ItemKind,
    Order,
    QuoteLine,
    SlaCredit,
    TaxCategory,
)
from billing.pricing import sla

KIND_EN = {
    "faulty": "faulty",
    "maintenance": "unplanned maintenance",
    "validation_failed": "failed re-validation",
    "late_delivery": "late delivery",
    "swap": "node swap",
    "degraded": "degraded performance",
}
KIND_ZH = {
    "faulty": "故障",
    "maintenance": "非计划维护",
    "validation_failed": "复检未通过",
    "late_delivery": "延迟交付",
    "swap": "节点更换",
    "degraded": "性能下降",
}


def node_period_charges(order: Order) -> dict[str, list[tuple[Decimal, Decimal, str]]]:
    """Per node type code: for each period, (the net charge of one node, its VAT rate,
    its tax category), from the period's node and card lines divided by the node count."""
    quote = order.quote
    counts: dict[str, int] = {}
    for item in quote.items.select_related("node_type"):
        if item.kind == ItemKind.NODE and item.node_type is not None:
            counts[item.node_type.code] = counts.get(item.node_type.code, 0) + int(item.quantity)
    lines: list[QuoteLine] = [line for line in quote.lines.all() if line.kind != "free"]
    by_position = {str(line.position): line for line in lines}
    out: dict[str, list[tuple[Decimal, Decimal, str]]] = {code: [] for code in counts}
    for period in invoicing.order_schedule(order, lines):
        for code, count in counts.items():
            net = Decimal("0")
            rate, category = quote.vat_rate, TaxCategory.IT_SERVICE
            for pl in period.lines:
                line = by_position[pl.code]
                if line.kind in ("node", "card") and (
                    line.code == code or line.code.startswith(code + ":")
                ):
                    net += pl.net
                    if line.kind == "node":
                        rate, category = line.vat_rate or quote.vat_rate, line.tax_category
            # Not rounded: the month's share and the credit are rounded once, at the end.
            out[code].append((net / count, rate, category))
    return out


def _texts(credit: sla.NodeCredit, month: date, tz: tzinfo) -> dict[str, str]:
    hours = Decimal(credit.unavailable.total_seconds() / 3600).quantize(Decimal("0.01"))
    evidence_en = "; ".join(
        f"{KIND_EN[o.kind]} {o.start.astimezone(tz):%Y-%m-%d %H:%M}–"
        f"{o.end.astimezone(tz):%Y-%m-%d %H:%M}" + (f" ({o.source})" if o.source else "")
        for o in credit.counted
    )
    evidence_zh = "；".join(
        f"{KIND_ZH[o.kind]} {o.start.astimezone(tz):%Y-%m-%d %H:%M}–"
        f"{o.end.astimezone(tz):%Y-%m-%d %H:%M}" + (f"（{o.source}）" if o.source else "")
        for o in credit.counted
    )
    measured = (credit.period_end - credit.period_start).total_seconds() / 3600
    length = Decimal(measured).quantize(Decimal("0.01"))
    return {
        "explanation_en": (
            f"SLA credit, node {credit.node_ref}, {month:%Y-%m}: availability "
            f"{credit.availability}% ({hours} h unavailable of {length} h) → "
            f"{credit.credit_percent}% of the month's charge {credit.node_charge}"
        ),
        "explanation_zh": (
            f"SLA 服务抵扣，节点 {credit.node_ref}，{month:%Y 年 %m 月}：可用率 "
            f"{credit.availability}%（{length} 小时中不可用 {hours} 小时）→ "
            f"抵扣当月费用 {credit.node_charge} 的 {credit.credit_percent}%"
        ),
        "evidence_en": evidence_en,
        "evidence_zh": evidence_zh,
        "hours": str(hours),
        "month": f"{month:%Y-%m}",
    }


def _period_at(periods: list[Any], at: datetime) -> Any:
    for period in periods:
        if period.start <= at < period.end:
            return period
    return periods[-1]


def sla_credits_record(
    *,
    order: Order,
    facts: Iterable[tuple[str, sla.NodeFacts]],
    now: datetime | None = None,
) -> list[SlaCredit]:
    """Compute, once, the credits of every ended calendar month of ``order`` from the
    facts of its nodes (pairs of node type code and facts). Returns the credits created
    now (a second run creates none). Credits no invoice will carry become a credit note."""
    now = now or timezone.now()
    order = Order.objects.select_related("site", "quote", "organisation").get(pk=order.pk)
    tz = order.site.tzinfo
    periods = invoicing.order_schedule(order)
    charges = node_period_charges(order)
    created: list[SlaCredit] = []
    facts = list(facts)
    for month, start, end in sla.calendar_months(order.start_at, order.end_at, tz):
        if end > now:
            continue
        period = _period_at(periods, start)
        for type_code, node_facts in facts:
            if type_code not in charges:
                continue
            if SlaCredit.objects.filter(
                order=order, node_ref=node_facts.node_ref, month=month
            ).exists():
                continue
            per_period = charges[type_code]
            charge = sla.month_charge(
                [(p.start, p.end, per_period[p.seq - 1][0]) for p in periods], start, end
            )
            _net, rate, category = per_period[period.seq - 1]
            credit = sla.node_credit(node_facts, start=start, end=end, node_charge=charge)
            if credit.amount <= 0:
                continue
            texts = _texts(credit, month, tz)
            try:
                with transaction.atomic():
                    created.append(
                        SlaCredit.objects.create(
                            order=order,
                            node_ref=credit.node_ref,
                            period_seq=period.seq,
                            month=month,
                            period_start=start,
                            period_end=end,
                            availability=credit.availability,
                            credit_percent=credit.credit_percent,
                            node_charge=credit.node_charge,
                            amount=credit.amount,
                            explanation=texts["explanation_en"],
                            evidence={
                                **texts,
                                "vat_rate": str(rate),
                                "tax_category": category,
                                "outages": [
                                    {
                                        "kind": o.kind,
                                        "start": o.start.isoformat(),
                                        "end": o.end.isoformat(),
                                        "source": o.source,
                                    }
                                    for o in credit.counted
                                ],
                            },
                        )
                    )
            except IntegrityError:
                continue  # computed meanwhile by another run
    sla_credits_settle_last(order=order)
    return created


def _credit_reason(order: Order) -> str:
    with translation.override(order.quote.language):
        return _("SLA credit, computed automatically from the service records.")


def sla_credits_settle_last(*, order: Order) -> list[Any]:
    """Credits that no later invoice will carry (their period is the last, or the order
    bills no more) become one credit note on their period's invoice."""
    periods = invoicing.order_schedule(order)
    last = periods[-1].seq
    no_next_invoice = (
        order.status not in invoicing.ISSUING_STATUSES
        or Invoice.objects.filter(order=order, period_seq=last).exists()
    )
    waiting = {
        int(line["detail"]["sla_credit"])
        for request in CreditNoteRequest.objects.filter(
            invoice__order=order, status=CreditNoteRequestStatus.PENDING
        )
        for line in request.lines
        if isinstance(line.get("detail"), dict) and line["detail"].get("sla_credit")
    }
    pending = [
        c
        for c in SlaCredit.objects.filter(
            order=order, invoice_line__isnull=True, credit_note__isnull=True
        )
        if c.pk not in waiting
    ]
    notes: list[Any] = []
    by_seq: dict[int, list[SlaCredit]] = {}
    for credit in pending:
        if credit.period_seq == last or no_next_invoice:
            by_seq.setdefault(credit.period_seq, []).append(credit)
    for seq, items in sorted(by_seq.items()):
        invoice = (
            Invoice.objects.filter(order=order, period_seq=seq)
            .exclude(status=InvoiceStatus.VOID)
            .first()
        )
        if invoice is None:
            continue
        note = credit_services.credit_note_request(
            invoice=invoice,
            lines=[
                credit_services.CreditLine(
                    description=c.evidence.get("explanation_en", c.explanation),
                    description_zh=c.evidence.get("explanation_zh", ""),
                    net=c.amount,
                    vat_rate=Decimal(c.evidence.get("vat_rate", "0")),
                    tax_category=c.evidence.get("tax_category", TaxCategory.IT_SERVICE),
                    detail={"sla_credit": c.pk, **c.evidence},
                )
                for c in items
            ],
            reason=_credit_reason(order),
            actor=None,
        )
        if isinstance(note, CreditNote):
            SlaCredit.objects.filter(pk__in=[c.pk for c in items]).update(credit_note=note)
        notes.append(note)  # a CreditNoteRequest waits for finance (above the threshold)
    return notes
