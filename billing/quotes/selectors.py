"""Reads of quotes: the sales lists and a quote's detail."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from billing.models import (
    Quote,
)


def quote_list(
    *,
    status: str | None = None,
    created_by: int | None = None,
    organisation: int | None = None,
    search: str | None = None,
) -> QuerySet[Quote]:
    """Quotes for the sales list, newest first, with what the list shows."""
    qs = Quote.objects.select_related("organisation", "site", "created_by").order_by(
        "-created_at", "-pk"
    )
    if status:
        qs = qs.filter(status=status)
    if created_by:
        qs = qs.filter(created_by_id=created_by)
    if organisation:
        qs = qs.filter(organisation_id=organisation)
    if search:
        qs = qs.filter(Q(number__icontains=search) | Q(organisation__name__icontains=search))
    return qs


def quote_list_for_org(*, organisation_ids: list[int]) -> QuerySet[Quote]:
    """What a customer sees: the quotes of their organisations that were sent to them."""
    return (
        Quote.objects.filter(organisation_id__in=organisation_ids)
        .exclude(status__in=["draft", "pending_approval", "approved"])
        .select_related("organisation", "site")
        .order_by("-created_at", "-pk")
    )


def quote_detail(*, pk: int) -> Quote:
    return (
        Quote.objects.select_related("organisation", "site", "created_by", "price_book", "previous")
        .prefetch_related("lines", "items__node_type", "events__actor")
        .get(pk=pk)
    )
