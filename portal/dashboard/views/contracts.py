"""The customer's contract pages under ``/<lang>/account/orders/<number>/``: read the exact
PDF, ask for a one-time code, sign; accept the standard terms of a short order."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_POST

from accounts.decorators import customer_required
from accounts.models import MemberRole
from accounts.throttle import client_ip
from billing.contracts import documents as contract_documents
from billing.contracts import gate
from billing.contracts import services as contract_services
from billing.models import Contract, ContractDocumentKind, ContractStatus, Order
from core.document_views import stored_or_preparing
from core.errors import DomainError
from portal.dashboard import selectors
from portal.dashboard.views.common import order_or_404

SIGNERS = (MemberRole.OWNER, MemberRole.BILLING)


def _contract(order: Order) -> Contract:
    contract = gate.gate_state(order).contract
    if contract is None:
        raise Http404
    return contract


def _page(
    request: HttpRequest,
    order: Order,
    contract: Contract,
    *,
    typed: dict[str, str] | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    draft = selectors.contract_draft(contract)
    return render(
        request,
        "billing/contracts/contract.html",
        {
            "order": order,
            "contract": contract,
            "draft": draft,
            "current": selectors.contract_current_document(contract) or draft,
            "can_sign": request.membership.role in SIGNERS
            and contract.status == ContractStatus.DRAFTED,
            "gate": gate.gate_state(order),
            "typed": typed or {},
            "sign_error": error,
            # A contract drafted before the legal entity was required cannot be signed.
            "legal_missing": contract_services.parties_missing(contract)
            if contract.status == ContractStatus.DRAFTED
            else [],
        },
        status=status,
    )


@customer_required
@require_GET
def contract_page(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    return _page(request, order, _contract(order))


@xframe_options_sameorigin  # the contract page shows the PDF to sign in a frame
@customer_required
@require_GET
def contract_pdf_view(request: HttpRequest, number: str) -> HttpResponse:
    """The sealed PDF once countersigned, the customer's signed PDF once signed, before
    that the exact PDF for signature."""
    order = order_or_404(request, number)
    contract = _contract(order)
    current = selectors.contract_current_document(contract)
    kind = current.kind if current else ContractDocumentKind.DRAFT
    return stored_or_preparing(
        request,
        find=lambda since: current or contract_documents.DRAFT.stored(contract),
        ask=lambda: contract_documents.DRAFT.ask(contract),
        filename=f"{contract.number}-{kind}.pdf",
        title=_("%(number)s: PDF being prepared") % {"number": contract.number},
        heading=contract.number,
        back_url=reverse("dashboard_order", args=[number]),
    )


@customer_required
@require_POST
def contract_code(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    contract = _contract(order)
    try:
        contract_services.signing_code_send(contract=contract, user=request.user)
        messages.success(
            request,
            _("A one-time code was sent to %(email)s.") % {"email": request.user.email},
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("dashboard_contract", number=order.number)


@customer_required
@require_POST
def contract_sign(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    contract = _contract(order)
    typed = {
        "full_name": request.POST.get("full_name", "")[:200],
        "title": request.POST.get("title", "")[:200],
    }
    try:
        contract_services.contract_sign(
            contract=contract,
            user=request.user,
            full_name=request.POST.get("full_name", ""),
            title=request.POST.get("title", ""),
            consent=request.POST.get("consent") == "on",
            code=request.POST.get("code", ""),
            pdf_sha256=request.POST.get("pdf_sha256", ""),
            ip=client_ip(request),
            user_agent=request.META.get("HTTP_USER_AGENT", ""),
        )
    except DomainError as exc:
        # The page again with what was typed (name and title), the error beside the form.
        return _page(request, order, contract, typed=typed, error=exc.message, status=400)
    messages.success(request, _("Signed. We countersign and send you the sealed PDF."))
    return redirect("dashboard_contract", number=order.number)


@customer_required
@require_POST
def order_terms(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    if request.POST.get("accept") != "on":
        messages.error(request, _("Tick the box to accept the standard terms."))
        return redirect("dashboard_order", number=order.number)
    try:
        gate.terms_accept(
            order=order,
            user=request.user,
            name=request.POST.get("name", "") or request.user.get_full_name() or "",
            ip=client_ip(request),
        )
        messages.success(request, _("Standard terms accepted."))
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("dashboard_order", number=order.number)
