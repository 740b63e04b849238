"""The public verification page: upload a contract PDF, learn whether it carries our seal
over unchanged bytes (pyHanko's validator), was modified, or is not ours."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from billing.contracts import signatures
from billing.models import Contract
from core.pdf import sha256_of

MAX_UPLOAD = 20 * 1024 * 1024


@require_http_methods(["GET", "POST"])
def contract_verify(request: HttpRequest) -> HttpResponse:
    verdict = None
    contract_number = ""
    error = ""
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is None:
            error = _("Choose a PDF file.")
        elif upload.size > MAX_UPLOAD:
            error = _("The file is larger than 20 MB.")
        else:
            data = upload.read()
            verdict = signatures.verify_pdf(data)
            if verdict.status == "valid":
                match = Contract.objects.filter(final_sha256=sha256_of(data)).first()
                contract_number = match.number if match else ""
    return render(
        request,
        "billing/contracts/verify.html",
        {"verdict": verdict, "contract_number": contract_number, "error": error},
        status=400 if error else 200,
    )
