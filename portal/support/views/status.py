"""The public status pages under ``/<lang>/status/``: every site's components and its
incidents with their updates. Nothing here names a customer, an order or a node."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from inventory.models import Site
from portal.support import selectors


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "support/status_index.html", {"sites": selectors.status_sites()})


@require_GET
def site(request: HttpRequest, code: str) -> HttpResponse:
    found = Site.objects.filter(code__iexact=code).first()
    if found is None:
        raise Http404
    return render(request, "support/status_site.html", {"status": selectors.site_status(found)})
