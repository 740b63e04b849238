"""The order's documents on the dashboard: the quote, invoice, credit note and acceptance
report PDFs (in the page's language; asked of the documents queue when not stored yet) and
the metered usage as CSV."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from accounts.decorators import customer_required
from billing.credits import documents as credit_note_documents
from billing.invoicing import documents as invoices
from billing.quotes.views import documents as quote_documents
from core.csv import csv_download, write_csv
from core.document_views import kind_response
from portal.dashboard import selectors
from portal.dashboard.views.common import order_or_404, page_language
from provisioning.validation import report as acceptance_report
from provisioning.validation import selectors as validation_selectors
from provisioning.validation.archive import raw_outputs_zip

USAGE_COLUMNS = ("external_id", "day", "metric", "quantity", "node", "invoice")


@customer_required
@require_GET
def order_quote_pdf(request: HttpRequest, number: str) -> HttpResponse:
    """The PDF of the quote the order was accepted from, in the page's language."""
    quote = selectors.order_quote_for_org(request.organisation, number)
    if quote is None:
        raise Http404
    return quote_documents.quote_pdf_response(
        request,
        quote=quote,
        language=page_language(request),
        filename=f"{quote.number}-v{quote.version}.pdf",
        back_url=reverse("dashboard_order", args=[number]),
    )


@customer_required
@require_GET
def invoice_pdf(request: HttpRequest, number: str) -> HttpResponse:
    """An invoice's PDF in the page's language (re-rendered once it is paid or void)."""
    invoice = selectors.invoice_for_org(request.organisation, number)
    if invoice is None:
        raise Http404
    language = page_language(request)
    return kind_response(
        request,
        kind=invoices.INVOICE,
        owner=invoice,
        language=language,
        filename=f"{invoice.number}.pdf",
        title=_("%(number)s: PDF being prepared") % {"number": invoice.number},
        heading=invoice.number,
        back_url=reverse("dashboard_order", args=[invoice.order.number]),
    )


@customer_required
@require_GET
def acceptance_report_pdf(request: HttpRequest, number: str, run_id: int) -> HttpResponse:
    """The acceptance report of a finished validation run of the order, in the page's
    language (asked of the documents queue if the worker has not stored it yet)."""
    run = selectors.acceptance_run_for_org(request.organisation, number, run_id)
    if run is None:
        raise Http404
    language = page_language(request)
    return kind_response(
        request,
        kind=acceptance_report.ACCEPTANCE_REPORT,
        owner=run,
        language=language,
        filename=f"acceptance-{number}-{run.pk}.pdf",
        title=_("Acceptance report: PDF being prepared"),
        heading=_("Acceptance report of order %(number)s") % {"number": number},
        back_url=reverse("dashboard_order", args=[number]),
    )


@customer_required
@require_GET
def acceptance_raw_outputs(
    request: HttpRequest, number: str, run_id: int, node_id: int
) -> HttpResponse:
    """One node's raw outputs of a passed validation run of the order, as a zip with
    SHA256SUMS (the hashes the acceptance report lists)."""
    run = selectors.acceptance_run_for_org(request.organisation, number, run_id)
    if run is None:
        raise Http404
    result = run.results.filter(node_id=node_id).first()
    if result is None:
        raise Http404
    folder = f"{number}-run{run.pk}-{result.hostname}"
    data = raw_outputs_zip(validation_selectors.node_artifacts(run, node_id), folder=folder)
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{folder}.zip"'
    return response


@customer_required
@require_GET
def credit_note_pdf_view(request: HttpRequest, number: str) -> HttpResponse:
    note = selectors.credit_note_for_org(request.organisation, number)
    if note is None:
        raise Http404
    language = page_language(request)
    return kind_response(
        request,
        kind=credit_note_documents.CREDIT_NOTE,
        owner=note,
        language=language,
        filename=f"{note.number}.pdf",
        title=_("%(number)s: PDF being prepared") % {"number": note.number},
        heading=note.number,
        back_url=reverse("dashboard_order", args=[note.order.number]),
    )


@customer_required
@require_GET
def order_usage_csv(request: HttpRequest, number: str) -> HttpResponse:
    """The order's usage records as they were received, and the invoice that billed each."""
    order = order_or_404(request, number)
    return csv_download(
        write_csv(
            (
                [
                    record.external_id,
                    record.day.isoformat(),
                    record.metric,
                    str(record.quantity),
                    record.node_hostname,
                    record.invoice.number if record.invoice else "",
                ]
                for record in selectors.order_usage_records(order)
            ),
            columns=USAGE_COLUMNS,
            verbatim=("day", "metric", "quantity", "invoice"),
        ),
        filename=f"{order.number}-usage.csv",
    )
