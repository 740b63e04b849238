"""The public verification page: upload a contract PDF, learn whether it carries our
signatures over unchanged bytes (pyHanko's validator), was modified, or is not ours.

Anyone may use it, so it is bounded: the request body is refused above
``CONTRACT_VERIFY_MAX_BYTES`` before it is parsed, each client gets
``CONTRACT_VERIFY_PER_HOUR`` checks an hour, and the file is hashed in chunks as it
streams (never read into memory whole).
"""

from __future__ import annotations

import hashlib
from datetime import UTC
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from accounts.throttle import client_ip
from billing.contracts import signatures
from billing.models import Contract
from core import ratelimit

RATE_WINDOW_S = 3600
# Room for the multipart envelope and the CSRF field around the file itself.
ENVELOPE_BYTES = 64 * 1024


def _megabytes(n: int) -> str:
    return f"{n / (1024 * 1024):.0f}"


def _over_rate(request: HttpRequest) -> bool:
    digest = hashlib.sha256(client_ip(request).encode()).hexdigest()[:32]
    return ratelimit.over_limit(
        f"contract-verify:{digest}",
        limit=settings.CONTRACT_VERIFY_PER_HOUR,
        window=RATE_WINDOW_S,
    )


def _times(verdict: signatures.Verdict, contract: Contract | None) -> list[dict[str, Any]]:
    tz = contract.site.tzinfo if contract is not None else None
    rows = []
    for report in verdict.signatures:
        when = report.timestamp_at or report.signed_at
        rows.append(
            {
                "report": report,
                "utc": when.astimezone(UTC) if when else None,
                "local": timezone.localtime(when, tz) if when and tz else None,
            }
        )
    return rows


@require_http_methods(["GET", "POST"])
def contract_verify(request: HttpRequest) -> HttpResponse:
    verdict = None
    contract = None
    error = ""
    status = 200
    limit = settings.CONTRACT_VERIFY_MAX_BYTES
    if request.method == "POST":
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit + ENVELOPE_BYTES:
            # Refused before Django parses (and spools) the upload.
            error = _("The file is larger than %(mb)s MB.") % {"mb": _megabytes(limit)}
            status = 413
        elif _over_rate(request):
            error = _("Too many checks from your network in the last hour: try again later.")
            status = 429
        else:
            upload = request.FILES.get("file")
            if upload is None:
                error, status = _("Choose a PDF file."), 400
            elif upload.size > limit:
                error = _("The file is larger than %(mb)s MB.") % {"mb": _megabytes(limit)}
                status = 413
            else:
                digest = hashlib.sha256()
                for chunk in upload.chunks():
                    digest.update(chunk)
                sha = digest.hexdigest()
                upload.seek(0)
                verdict = signatures.verify_pdf(upload.file)
                if verdict.status == "valid":
                    contract = (
                        Contract.objects.select_related("site")
                        .filter(
                            Q(final_sha256=sha)
                            | Q(customer_signed_sha256=sha)
                            | Q(documents__sha256=sha)
                        )
                        .first()
                    )
    return render(
        request,
        "billing/contracts/verify.html",
        {
            "verdict": verdict,
            "contract": contract,
            "contract_number": contract.number if contract else "",
            "times": _times(verdict, contract) if verdict else [],
            "site_timezone": contract.site.timezone if contract else "",
            "max_mb": _megabytes(limit),
            "error": error,
        },
        status=status,
    )
