"""Serving a quote's PDF from a web request without rendering it there.

The stored document is sent when it is current; otherwise the documents queue is asked
for it and the page says "being prepared" and reloads itself (the anonymous estimate
does the same, see ``portal.views.estimate_status``). The reload carries the time of the
request, so a draft is served only once re-rendered after it was asked for, and the
queue is asked again only when that is older than ``RENDER_ASK_AGAIN``.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from billing import quote_pdf
from billing.models import Quote

RELOAD_SECONDS = 3


def _requested_at(request: HttpRequest) -> datetime | None:
    raw = request.GET.get("requested", "")
    try:
        value = datetime.fromisoformat(raw) if raw else None
    except ValueError:
        return None
    if value is None or timezone.is_naive(value) or value > timezone.now():
        return None
    return value


def quote_pdf_response(
    request: HttpRequest, *, quote: Quote, language: str, filename: str, back_url: str
) -> HttpResponse:
    requested = _requested_at(request)
    document = quote_pdf.stored_quote_document(quote=quote, language=language, since=requested)
    if document is not None:
        return FileResponse(
            document.file.open("rb"), content_type="application/pdf", filename=filename
        )
    now = timezone.now()
    if requested is None or now - requested > quote_pdf.RENDER_ASK_AGAIN:
        quote_pdf.quote_document_ask(quote=quote, language=language)
        requested = now
    query = request.GET.copy()
    query["requested"] = requested.isoformat()
    reload_url = f"{request.path}?{urlencode(sorted(query.items()))}"
    response = render(
        request,
        "billing/document_preparing.html",
        {
            "quote": quote,
            "reload_url": reload_url,
            "reload_seconds": RELOAD_SECONDS,
            "back_url": back_url,
        },
    )
    response["Retry-After"] = str(RELOAD_SECONDS)
    response["Cache-Control"] = "no-store"
    return response
