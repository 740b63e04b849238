"""Customer-facing pages."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from billing import selectors as billing_selectors
from billing import sizing
from billing.models import Term as BillingTerm
from inventory import selectors
from portal.errors import DomainError
from portal.forms import WizardForm


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


TERMS_SHOWN = (("month", 1), ("quarter", 1), ("year", 1))


@require_GET
def wizard(request: HttpRequest) -> HttpResponse:
    """Sizing wizard: model size in, GPUs, node type, fabric, advice and prices per term out."""
    form = WizardForm(request.GET or None)
    context: dict[str, Any] = {"form": form}
    if form.is_bound and form.is_valid():
        site = form.cleaned_data["site"]
        try:
            options = billing_selectors.sizing_options(site=site)
        except DomainError as exc:
            form.add_error("site", exc.message)
            return render(request, "portal/wizard.html", context)
        result = sizing.size(form.sizing_input, options)
        context["result"] = result
        if result.recommended is not None:
            context["offers"] = _offers(
                site=site,
                option_code=result.recommended.code,
                node_count=result.node_count,
                start_date=form.cleaned_data["start_date"],
            )
    return render(request, "portal/wizard.html", context)


def _offers(*, site: Any, option_code: str, node_count: int, start_date: Any) -> list[dict]:
    """A priced draft and the current availability for each term."""
    from billing.services.quotes import (
        ItemSpec,
        priced_lines_as_rows,
        quote_price_preview,
        rental_period,
    )
    from inventory.models import NodeType

    type_code, _plus, card = option_code.partition("+")
    node_type = NodeType.objects.get(code=type_code)
    card_model_id = int(card.removeprefix("gpu")) if card else None
    cards = 0
    if card_model_id:
        from billing.models import CardOptionPrice

        cards = (
            CardOptionPrice.objects.filter(
                node_type=node_type, gpu_model_id=card_model_id, price_book__site=site
            )
            .values_list("max_per_node", flat=True)
            .first()
            or 0
        )
    items = [
        ItemSpec(
            kind="node",
            quantity=Decimal(node_count),
            node_type_id=node_type.pk,
            card_gpu_model_id=card_model_id,
            cards_per_node=cards,
        )
    ]
    offers = []
    for term, duration in TERMS_SHOWN:
        try:
            snapshot, priced = quote_price_preview(
                site=site, term=term, duration=duration, start_date=start_date, items=items
            )
        except DomainError as exc:
            offers.append({"term": term, "error": exc.message})
            continue
        start_at, end_at = rental_period(
            site=site, start_date=start_date, term=term, duration=duration
        )
        found = selectors.availability_search(
            site=site, node_type=node_type, count=node_count, start_at=start_at, end_at=end_at
        )
        offers.append(
            {
                "term": term,
                "term_label": BillingTerm(term).label,
                "priced": priced,
                "lines": priced_lines_as_rows(snapshot, priced),
                "availability": found,
                "leaves": len(found.placement.leaves) if found.placement else None,
            }
        )
    return offers
