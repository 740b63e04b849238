"""Automatic SLA credits: nobody claims them.

Billing does not read provisioning: the provisioning layer gathers each node's facts
(event history, swaps, delivery time, re-validations) as ``billing.pricing.sla.NodeFacts`` and
calls ``sla_credits_record``. For every billing period of the order that has ended, each
node's credit is computed once (``billing.pricing.sla.node_credit``; the unique (order, node,
period) row makes a second run a no-op) from the node's share of that period's charge.
A credit goes on the order's next invoice as a negative line with its explanation and
evidence (``billing.invoicing.services``); a credit for the last period, which no invoice
follows, becomes a credit note (红字) on that period's invoice at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, tzinfo
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from billing.credits import services as credit_services
from billing.invoicing import services as invoicing
from billing.models import (
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
            out[code].append(((net / count).quantize(Decimal("0.01")), rate, category))
    return out


def _texts(credit: sla.NodeCredit, seq: int, tz: tzinfo) -> dict[str, str]:
    hours = Decimal(credit.unavailable.total_seconds() / 3600).quantize(Decimal("0.01"))
    first = credit.period_start.astimezone(tz).strftime("%Y-%m-%d")
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
    return {
        "explanation_en": (
            f"SLA credit, node {credit.node_ref}, billing period {seq} from {first}: "
            f"availability {credit.availability}% ({hours} h unavailable) → "
            f"{credit.credit_percent}% of {credit.node_charge}"
        ),
        "explanation_zh": (
            f"SLA 服务抵扣，节点 {credit.node_ref}，第 {seq} 个计费周期（{first} 起）："
            f"可用率 {credit.availability}%（不可用 {hours} 小时）→ "
            f"抵扣 {credit.node_charge} 的 {credit.credit_percent}%"
        ),
        "evidence_en": evidence_en,
        "evidence_zh": evidence_zh,
        "hours": str(hours),
    }


def sla_credits_record(
    *,
    order: Order,
    facts: Iterable[tuple[str, sla.NodeFacts]],
    now: datetime | None = None,
) -> list[SlaCredit]:
    """Compute, once, the credits of every ended billing period of ``order`` from the
    facts of its nodes (pairs of node type code and facts). Returns the credits created
    now (a second run creates none). Credits of the last period become a credit note."""
    now = now or timezone.now()
    order = Order.objects.select_related("site", "quote", "organisation").get(pk=order.pk)
    tz = order.site.tzinfo
    periods = invoicing.order_schedule(order)
    charges = node_period_charges(order)
    created: list[SlaCredit] = []
    facts = list(facts)
    for period in periods:
        if period.end > now:
            continue
        for type_code, node_facts in facts:
            if type_code not in charges:
                continue
            if SlaCredit.objects.filter(
                order=order, node_ref=node_facts.node_ref, period_seq=period.seq
            ).exists():
                continue
            charge, rate, category = charges[type_code][period.seq - 1]
            credit = sla.node_credit(
                node_facts, start=period.start, end=period.end, node_charge=charge
            )
            if credit.amount <= 0:
                continue
            texts = _texts(credit, period.seq, tz)
            try:
                with transaction.atomic():
                    created.append(
                        SlaCredit.objects.create(
                            order=order,
                            node_ref=credit.node_ref,
                            period_seq=period.seq,
                            period_start=period.start,
                            period_end=period.end,
                            availability=credit.availability,
                            credit_percent=credit.credit_percent,
                            node_charge=charge,
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


def sla_credits_settle_last(*, order: Order) -> list:
    """Credits that no later invoice will carry (their period is the last, or the order
    bills no more) become one credit note on their period's invoice."""
    periods = invoicing.order_schedule(order)
    last = periods[-1].seq
    pending = list(
        SlaCredit.objects.filter(order=order, invoice_line__isnull=True, credit_note__isnull=True)
    )
    notes = []
    by_seq: dict[int, list[SlaCredit]] = {}
    for credit in pending:
        if credit.period_seq == last or order.status not in invoicing.ISSUING_STATUSES:
            by_seq.setdefault(credit.period_seq, []).append(credit)
    for seq, items in sorted(by_seq.items()):
        invoice = (
            Invoice.objects.filter(order=order, period_seq=seq)
            .exclude(status=InvoiceStatus.VOID)
            .first()
        )
        if invoice is None:
            continue
        note = credit_services.credit_note_issue(
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
        SlaCredit.objects.filter(pk__in=[c.pk for c in items]).update(credit_note=note)
        notes.append(note)
    return notes
