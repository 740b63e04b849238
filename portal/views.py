"""Customer-facing pages."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from inventory import selectors


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
def catalog(request: HttpRequest) -> HttpResponse:
    """Sites and node types with their specs and live counts of free nodes."""
    sites = selectors.catalog_sites()
    node_types = selectors.catalog_node_types()
    free = selectors.free_counts_now()
    total = selectors.node_counts_by_site_and_type()
    rows = []
    for nt in node_types:
        per_site = [
            {
                "site": site,
                "free": free.get((site.pk, nt.pk), 0),
                "total": total.get((site.pk, nt.pk), 0),
            }
            for site in sites
        ]
        if any(cell["total"] for cell in per_site):
            rows.append({"node_type": nt, "sites": per_site})
    return render(request, "portal/catalog.html", {"sites": sites, "rows": rows})
