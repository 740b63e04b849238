"""A quote's PDF from a web request, never rendered there (``core.document_views``).

A sent quote's stored document is current once rendered after sending; a draft's only
when rendered after it was asked for (the reload's ``requested`` time).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from billing.models import Quote
from billing.quotes import documents as quote_documents
from core.document_views import kind_response


def quote_pdf_response(
    request: HttpRequest, *, quote: Quote, language: str, filename: str, back_url: str
) -> HttpResponse:
    return kind_response(
        request,
        kind=quote_documents.QUOTE,
        owner=quote,
        language=language,
        fresh=True,
        filename=filename,
        title=_("Quote %(number)s: PDF being prepared") % {"number": quote.number},
        heading=_("Quote %(number)s v%(version)s")
        % {"number": quote.number, "version": quote.version},
        back_url=back_url,
    )
