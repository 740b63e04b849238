"""Serving a stored document from a web request without ever rendering it there.

The stored PDF is sent when it is current; otherwise the documents queue is asked for it
(through the outbox) and the page says "being prepared" and reloads itself. The reload
carries the time of the first request, so a document that must be fresh is served only
once rendered after it was asked for, and the queue is asked again only when that is
older than ``ASK_AGAIN`` (its message may have died with a worker). Quote, invoice,
credit-note, contract and acceptance-report downloads all go through here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from core.documents import DocumentKind
from core.models import StoredDocument

RELOAD_SECONDS = 3
ASK_AGAIN = timedelta(minutes=2)


def requested_at(request: HttpRequest) -> datetime | None:
    """When the document was first asked for (the reload's ``requested``), if believable."""
    raw = request.GET.get("requested", "")
    try:
        value = datetime.fromisoformat(raw) if raw else None
    except ValueError:
        return None
    if value is None or timezone.is_naive(value) or value > timezone.now():
        return None
    return value


def stored_or_preparing(
    request: HttpRequest,
    *,
    find: Callable[[datetime | None], StoredDocument | None],
    ask: Callable[[], None],
    filename: str,
    title: str,
    heading: str,
    back_url: str,
) -> HttpResponse:
    """The stored document ``find(since)`` returns, or a "being prepared" page after
    ``ask()`` has queued its rendering. ``find`` never renders."""
    requested = requested_at(request)
    document = find(requested)
    if document is not None:
        return FileResponse(
            document.file.open("rb"), content_type="application/pdf", filename=filename
        )
    now = timezone.now()
    if requested is None or now - requested > ASK_AGAIN:
        ask()
        requested = now
    query = request.GET.copy()
    query["requested"] = requested.isoformat()
    reload_url = f"{request.path}?{urlencode(sorted(query.items()))}"
    response = render(
        request,
        "core/document_preparing.html",
        {
            "title": title,
            "heading": heading,
            "reload_url": reload_url,
            "reload_seconds": RELOAD_SECONDS,
            "back_url": back_url,
        },
    )
    response["Retry-After"] = str(RELOAD_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def kind_response(
    request: HttpRequest,
    *,
    kind: DocumentKind[Any, Any],
    owner: Any,
    language: str,
    fresh: bool = False,
    filename: str,
    title: str,
    heading: str,
    back_url: str,
) -> HttpResponse:
    """:func:`stored_or_preparing` for one document kind's owner in ``language``;
    ``fresh``: only a file rendered after the first request is served (a quote whose
    status may just have changed)."""
    return stored_or_preparing(
        request,
        find=lambda since: kind.stored(owner, language=language, since=since if fresh else None),
        ask=lambda: kind.ask(owner, language=language),
        filename=filename,
        title=title,
        heading=heading,
        back_url=back_url,
    )
