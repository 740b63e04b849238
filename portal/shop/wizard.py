"""The sizing wizard: a model in; plans that can run out (cheapest and fastest), each
priced per term with today's availability, beside the seeds' rule of thumb."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from billing.models import Term as BillingTerm
from billing.pricing import selectors as billing_selectors
from billing.pricing.periods import rental_period
from billing.quotes.services import ItemSpec, priced_lines_as_rows, quote_price_preview
from core.errors import DomainError
from inventory import selectors, sizing
from portal.shop.forms import WizardForm
from portal.shop.views import configure_url

TERMS_SHOWN = (("month", 1), ("quarter", 1), ("year", 1))


@require_GET
def wizard(request: HttpRequest) -> HttpResponse:
    """Sizing wizard: a model in; plans that can run out (cheapest and fastest), each
    priced per term with today's availability, beside the seeds' rule of thumb."""
    form = WizardForm(request.GET or None)
    context: dict[str, Any] = {"form": form}
    valid = form.is_bound and form.is_valid()
    if valid:
        site = form.cleaned_data["site"]
    else:  # the seeds' examples, sized on the first data centre's offer
        sites = selectors.catalog_sites()
        site = sites[0] if sites else None
    try:
        options = billing_selectors.sizing_options(site=site) if site else []
    except DomainError as exc:
        if valid:
            form.add_error("site", exc.message)
            return render(request, "portal/wizard.html", context)
        options = []
    context["examples"] = sizing.seed_examples(options)
    if valid:
        result = sizing.size(form.sizing_input, options)
        context["result"] = result
        start_date = form.cleaned_data["start_date"]
        if result.cheapest is not None:
            context["offers"] = _offers(
                site=site,
                option_code=result.cheapest.option.code,
                node_count=result.cheapest.nodes,
                start_date=start_date,
                plan=result.cheapest,
            )
        if result.fastest_differs and result.fastest is not None:
            context["fastest_offers"] = _offers(
                site=site,
                option_code=result.fastest.option.code,
                node_count=result.fastest.nodes,
                start_date=start_date,
                plan=result.fastest,
            )
        context["offer_groups"] = [
            {"plan": plan, "offers": context[key], "fastest": key == "fastest_offers"}
            for key, plan in (("offers", result.cheapest), ("fastest_offers", result.fastest))
            if key in context
        ]
    return render(request, "portal/wizard.html", context)


def _offers(
    *,
    site: Any,
    option_code: str,
    node_count: int,
    start_date: Any,
    plan: sizing.Plan | None = None,
) -> list[dict]:
    """A priced draft and the current availability for each term; when the nodes are not
    all free, what the plan needs against what is free (``shortfall``)."""
    type_code, _plus, card = option_code.partition("+")
    node_type = selectors.node_type_by_code(type_code)
    card_model_id = int(card.removeprefix("gpu")) if card else None
    cards = 0
    if card_model_id:
        cards = billing_selectors.card_option_max_per_node(
            node_type_id=node_type.pk, gpu_model_id=card_model_id, site=site
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
        shortfall = ""
        if plan is not None and not found.can_place:
            per_node = plan.option.gpus_per_node
            shortfall = sizing.shortfall_text(
                gpus_needed=plan.gpus,
                gpu=plan.option.gpu_model,
                free_gpus=min(found.free_count, node_count) * per_node,
                full_from=(
                    found.earliest_start.astimezone(site.tzinfo).date().isoformat()
                    if found.earliest_start
                    else None
                ),
            )
        offers.append(
            {
                "term": term,
                "term_label": BillingTerm(term).label,
                "priced": priced,
                "lines": priced_lines_as_rows(snapshot, priced),
                "availability": found,
                "shortfall": shortfall,
                "leaves": len(found.placement.leaves) if found.placement else None,
                "configure_url": configure_url(
                    site=site.code,
                    node_type=node_type.code,
                    node_count=node_count,
                    term=term,
                    duration=duration,
                    start_date=start_date.isoformat(),
                    **({"card": card, "cards_per_node": cards} if card_model_id else {}),
                ),
            }
        )
    return offers
