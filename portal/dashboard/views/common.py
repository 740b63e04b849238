"""What every dashboard view shares: the order lookup and the page's language."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from django.utils import translation

from billing.models import Order
from portal.dashboard import selectors


def order_or_404(request: HttpRequest, number: str) -> Order:
    """The request's organisation's order ``number``; 404 for anyone else's, exactly like
    one that does not exist."""
    order = selectors.order_for_org(request.organisation, number)
    if order is None:
        raise Http404
    return order


def page_language(request: HttpRequest) -> str:
    """The language the page (and so its PDFs) is shown in."""
    return translation.get_language() or request.LANGUAGE_CODE or "en"
