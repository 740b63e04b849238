"""The customer's money documents beyond invoices: credit notes (PDF) and an order's
metered usage (CSV). Behind ``customer_required``; another organisation's document or
order answers 404, exactly like one that does not exist."""

from __future__ import annotations

import csv
import io
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from accounts.decorators import customer_required
from billing.credits import documents as credit_note_pdf
from billing.invoicing import services as invoicing
from billing.models import CreditNote, Order, UsageRecord
from core.document_views import stored_or_preparing
from inventory.resources import escape_formula


def order_money_context(order: Order) -> dict[str, Any]:
    """The order page's credit notes and the invoice schedule over the term (each period
    with its total and whether its document is issued)."""
    issued = {i.period_seq for i in order.invoices.all() if i.period_seq}
    periods = invoicing.order_schedule(order)
    return {
        "credit_notes": list(order.credit_notes.select_related("invoice")),
        "invoice_schedule": [
            {"seq": p.seq, "start": p.start, "gross": p.gross, "issued": p.seq in issued}
            for p in periods
        ]
        if len(periods) > 1
        else [],
    }


@customer_required
@require_GET
def credit_note_pdf_view(request: HttpRequest, number: str) -> HttpResponse:
    note = CreditNote.objects.filter(organisation=request.organisation, number=number).first()
    if note is None:
        raise Http404
    language = translation.get_language() or request.LANGUAGE_CODE or "en"
    return stored_or_preparing(
        request,
        find=lambda since: credit_note_pdf.stored_credit_note_document(
            note=note, language=language
        ),
        ask=lambda: credit_note_pdf.credit_note_document_ask(note=note, language=language),
        filename=f"{note.number}.pdf",
        title=_("%(number)s: PDF being prepared") % {"number": note.number},
        heading=note.number,
        back_url=reverse("dashboard_order", args=[note.order.number]),
    )


@customer_required
@require_GET
def order_usage_csv(request: HttpRequest, number: str) -> HttpResponse:
    """The order's usage records as they were received, and the invoice that billed each."""
    order = Order.objects.filter(organisation=request.organisation, number=number).first()
    if order is None:
        raise Http404
    out = io.StringIO()
    out.write("\ufeff")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["external_id", "day", "metric", "quantity", "node", "invoice"])
    for record in UsageRecord.objects.filter(order=order).select_related("invoice"):
        writer.writerow(
            [
                escape_formula(record.external_id),
                record.day.isoformat(),
                record.metric,
                str(record.quantity),
                escape_formula(record.node_hostname),
                record.invoice.number if record.invoice else "",
            ]
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{order.number}-usage.csv"'
    return response
