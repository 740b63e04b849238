"""Invoices, payment requests, credit notes and contracts, with their PDFs.

A PDF that is stored is sent (``Digest: sha-256=…``); one that is not yet rendered is
asked of the documents queue and answered ``202`` with ``Retry-After`` and an operation
body to poll (the same URL)."""

from __future__ import annotations

import base64
from typing import Any

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from billing.contracts import documents as contract_documents
from billing.contracts import services as contract_services
from billing.contracts import signatures
from billing.credits import documents as credit_note_documents
from billing.invoicing import documents as invoice_documents
from billing.models import Contract, ContractDocument, ContractDocumentKind, CreditNote, Invoice
from core.models import StoredDocument
from portal.api import serializers as s
from portal.api.base import ApiView
from portal.api.views.common import language, one_or_404, organisation
from portal.dashboard import selectors as dashboard

RETRY_SECONDS = 3

PDF_RESPONSES = {
    (200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY, description="The PDF."),
    202: OpenApiResponse(
        s.DocumentPendingSerializer, description="Being rendered: retry after Retry-After."
    ),
}


def _pdf(request: Request, document: StoredDocument | None, filename: str, ask: Any) -> Any:
    if document is not None:
        response = FileResponse(
            document.file.open("rb"), content_type="application/pdf", filename=filename
        )
        digest = base64.b64encode(bytes.fromhex(document.sha256)).decode()
        response["Digest"] = f"sha-256={digest}"
        return response
    ask()
    return Response(
        {
            "kind": "document_render",
            "status": "pending",
            "done": False,
            "retry_after": RETRY_SECONDS,
            "poll": request.path,
        },
        status=202,
        headers={"Retry-After": str(RETRY_SECONDS)},
    )


class PdfView(ApiView):
    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        return super().perform_content_negotiation(request, force=True)


class BillingView(ApiView):
    scope_family = "billing"


def _invoices(request: Request) -> Any:
    return dashboard.invoice_list_for_org(organisation(request)).order_by()


class InvoiceList(BillingView):
    @extend_schema(
        operation_id="invoices_list",
        responses=s.paged(s.InvoiceSerializer),
        summary="Invoices and payment requests / 发票与付款通知书",
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, _invoices(request), s.InvoiceSerializer)


class InvoiceDetail(BillingView):
    @extend_schema(operation_id="invoices_read", responses=s.InvoiceSerializer)
    def get(self, request: Request, number: str) -> Response:
        return Response(s.InvoiceSerializer(one_or_404(_invoices(request), number=number)).data)


class InvoicePdf(PdfView, BillingView):
    @extend_schema(
        operation_id="invoices_pdf",
        responses=PDF_RESPONSES,
        summary="The invoice's PDF in the request's language",
    )
    def get(self, request: Request, number: str) -> Any:
        invoice: Invoice = one_or_404(_invoices(request), number=number)
        kind, lang = invoice_documents.INVOICE, language()
        return _pdf(
            request,
            kind.stored(invoice, language=lang),
            f"{invoice.number}.pdf",
            lambda: kind.ask(invoice, language=lang),
        )


def _credit_notes(request: Request) -> Any:
    return CreditNote.objects.filter(organisation=organisation(request)).select_related(
        "invoice", "order"
    )


class CreditNoteList(BillingView):
    @extend_schema(
        operation_id="credit_notes_list",
        responses=s.paged(s.CreditNoteSerializer),
        summary="Credit notes / 红字发票（贷项通知单）",
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, _credit_notes(request), s.CreditNoteSerializer)


class CreditNoteDetail(BillingView):
    @extend_schema(operation_id="credit_notes_read", responses=s.CreditNoteSerializer)
    def get(self, request: Request, number: str) -> Response:
        note = one_or_404(_credit_notes(request), number=number)
        return Response(s.CreditNoteSerializer(note).data)


class CreditNotePdf(PdfView, BillingView):
    @extend_schema(operation_id="credit_notes_pdf", responses=PDF_RESPONSES)
    def get(self, request: Request, number: str) -> Any:
        note: CreditNote = one_or_404(_credit_notes(request), number=number)
        kind, lang = credit_note_documents.CREDIT_NOTE, language()
        return _pdf(
            request,
            kind.stored(note, language=lang),
            f"{note.number}.pdf",
            lambda: kind.ask(note, language=lang),
        )


class ContractsView(ApiView):
    scope_family = "contracts"


def _contracts(request: Request) -> Any:
    return Contract.objects.filter(organisation=organisation(request)).select_related("order")


class ContractList(ContractsView):
    @extend_schema(
        operation_id="contracts_list",
        responses=s.paged(s.ContractSerializer),
        summary="Contracts / 合同",
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, _contracts(request), s.ContractSerializer)


class ContractDetail(ContractsView):
    @extend_schema(
        operation_id="contracts_read",
        responses=s.ContractSerializer,
        summary="Status, signing link, sealed PDF / 合同状态、签署链接、已盖章 PDF",
    )
    def get(self, request: Request, number: str) -> Response:
        contract = one_or_404(_contracts(request), number=number)
        return Response(s.ContractSerializer(contract, context={"language": language()}).data)


class ContractPdf(PdfView, ContractsView):
    @extend_schema(
        operation_id="contracts_pdf",
        responses=PDF_RESPONSES,
        summary="The sealed PDF once countersigned, before that the PDF to sign",
    )
    def get(self, request: Request, number: str) -> Any:
        contract: Contract = one_or_404(_contracts(request), number=number)
        sealed = dashboard.contract_sealed(contract)
        document = sealed or contract_documents.DRAFT.stored(contract)
        kind = sealed.kind if sealed else "draft"
        return _pdf(
            request,
            document,
            f"{contract.number}-{kind}.pdf",
            lambda: contract_documents.DRAFT.ask(contract),
        )


class ContractVerification(ContractsView):
    @extend_schema(
        operation_id="contracts_verification",
        responses=s.ContractVerificationSerializer,
        summary="Check the signatures of the contract's signed PDF and its audit chain, as "
        "the public verify page does / 验证合同签名与审计链",
    )
    def get(self, request: Request, number: str) -> Response:
        contract: Contract = one_or_404(_contracts(request), number=number)
        document = dashboard.contract_sealed(contract) or (
            ContractDocument.objects.filter(contract=contract, kind=ContractDocumentKind.SIGNED)
            .order_by("pk")
            .first()
        )
        kind = document.kind if document is not None else "none"
        verdict = signatures.Verdict("unknown", detail="not signed yet")
        if document is not None:
            with document.file.open("rb") as stream:
                verdict = signatures.verify_pdf(stream.read())
        return Response(
            s.ContractVerificationSerializer(
                {
                    "contract": contract.number,
                    "document": kind,
                    "sha256": document.sha256 if document is not None else "",
                    "status": verdict.status,
                    "signer": verdict.signer,
                    "signed_at": verdict.signed_at,
                    "detail": verdict.detail,
                    "audit_chain_intact": contract_services.audit_verify(contract),
                    "signatures": [vars(r) for r in verdict.signatures],
                }
            ).data
        )
