"""Estimates (priced, nothing held) and firm quotes (nodes held until they expire):
create, read, accept (an order), reject, revisions. The same services as the configure
page and the quote page: ``billing.shop.selfservice`` and ``billing.orders.acceptance``."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import Organisation
from billing.models import QUOTE_SENT_STATUSES, Quote, QuoteLine
from billing.orders.acceptance import quote_accept, quote_reject
from billing.pricing.periods import rental_period
from billing.pricing.shop_data import shop_data
from billing.shop import selfservice
from core.errors import DomainError
from inventory.selectors import availability_search
from portal.api import serializers as s
from portal.api.base import ApiView, idempotent
from portal.api.views.common import IDEMPOTENCY, actor, ip, organisation
from portal.api.views.orders import order_detail_data


def _config(data: dict[str, Any]) -> tuple[selfservice.Configuration, Any]:
    """The configuration from the validated body, with the site's price-book snapshot."""
    shop = shop_data()
    site = next((x for x in shop.sites if x.code == data["site"]), None)
    node_type = next((x for x in shop.node_types if x.code == data["node_type"]), None)
    errors = {}
    if site is None:
        errors["site"] = _("Unknown site.")
    if node_type is None:
        errors["node_type"] = _("Unknown node type.")
    if errors:
        raise selfservice.ConfigurationInvalid(errors)
    selfservice.configuration_check(
        site=site,
        node_type=node_type,
        node_count=data["node_count"],
        cards_per_node=data.get("cards_per_node") or 0,
        term=data["term"],
        duration=data["duration"],
        start_date=data["start_date"],
    )
    config = selfservice.Configuration(
        site=site,
        node_type=node_type,
        node_count=data["node_count"],
        term=data["term"],
        duration=data["duration"],
        start_date=data["start_date"],
        card_gpu_model_id=data.get("card_gpu_model_id"),
        cards_per_node=data.get("cards_per_node") or 0,
        addons=tuple(sorted((c, q) for c, q in (data.get("addons") or {}).items() if q > 0)),
    )
    snapshot = shop.snapshot(site)
    if snapshot is None:
        raise DomainError(_("No price book is in force at this site."))
    return config, snapshot


def quotes_for(org: Organisation) -> QuerySet[Quote]:
    """The organisation's quotes a customer may see (sent and after), with their lines."""
    return (
        Quote.objects.filter(organisation=org, status__in=QUOTE_SENT_STATUSES)
        .select_related("site", "order")
        .prefetch_related(Prefetch("lines", queryset=QuoteLine.objects.order_by("position")))
    )


def _latest(org: Organisation, number: str) -> Quote:
    quote = quotes_for(org).filter(number=number).order_by("-version").first()
    if quote is None:
        raise Http404
    return quote


class QuotesView(ApiView):
    scope_family = "quotes"


class Estimates(QuotesView):
    @extend_schema(
        operation_id="estimates_create",
        request=s.ConfigurationSerializer,
        responses=s.EstimateSerializer,
        parameters=[IDEMPOTENCY],
        summary="Price a configuration; nothing is held / 估价（不占用节点）",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        body = s.ConfigurationSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        config, snapshot = _config(body.validated_data)
        priced = selfservice.configuration_price(snapshot=snapshot, config=config)
        start, end = _period(config)
        found = availability_search(
            site=config.site,
            node_type=config.node_type,
            count=config.node_count,
            start_at=start,
            end_at=end,
        )
        data = {
            "currency": priced.currency,
            "term": str(priced.term.value),
            "duration": priced.duration,
            "lines": priced.lines,  # PricedLineSerializer reads what it shows
            "list_total": priced.list_total,
            "discount_total": priced.discount_total,
            "net_total": priced.net_total,
            "vat_total": priced.vat_total,
            "gross_total": priced.gross_total,
            "available": found.can_place,
            "free_nodes": found.free_count,
            "earliest_start": found.earliest_start,
        }
        return Response(s.EstimateSerializer(data).data)


def _period(config: selfservice.Configuration) -> tuple[Any, Any]:
    return rental_period(
        site=config.site, start_date=config.start_date, term=config.term, duration=config.duration
    )


class QuoteList(QuotesView):
    @extend_schema(
        operation_id="quotes_list",
        responses=s.paged(s.QuoteSerializer),
        summary="The organisation's quotes, every version / 报价单",
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, quotes_for(organisation(request)), s.QuoteSerializer)

    @extend_schema(
        operation_id="quotes_create",
        request=s.ConfigurationSerializer,
        responses={201: s.QuoteSerializer},
        parameters=[IDEMPOTENCY],
        summary="A firm quote: priced, sent, holding named nodes until it expires / 正式报价",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        body = s.ConfigurationSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        config, _snapshot = _config(body.validated_data)
        quote = selfservice.quote_self_service(
            user=actor(request),
            organisation=organisation(request),
            site=config.site,
            node_type=config.node_type,
            node_count=config.node_count,
            card_gpu_model_id=config.card_gpu_model_id,
            cards_per_node=config.cards_per_node,
            term=config.term,
            duration=config.duration,
            start_date=config.start_date,
            addons=dict(config.addons),
        )
        quote = quotes_for(organisation(request)).get(pk=quote.pk)
        return Response(s.QuoteSerializer(quote).data, status=201)


class QuoteDetail(QuotesView):
    @extend_schema(
        operation_id="quotes_read",
        responses=s.QuoteSerializer,
        summary="A quote's latest version / 报价单（最新版本）",
    )
    def get(self, request: Request, number: str) -> Response:
        return Response(s.QuoteSerializer(_latest(organisation(request), number)).data)


class QuoteRevisions(QuotesView):
    @extend_schema(
        operation_id="quotes_revisions",
        responses=s.QuoteSerializer(many=True),
        summary="Every version of a quote, newest first / 报价单的所有版本",
    )
    def get(self, request: Request, number: str) -> Response:
        versions = list(
            quotes_for(organisation(request)).filter(number=number).order_by("-version")
        )
        if not versions:
            raise Http404
        return Response(s.QuoteSerializer(versions, many=True).data)


class QuoteAccept(QuotesView):
    @extend_schema(
        operation_id="quotes_accept",
        request=s.QuoteDecisionSerializer,
        responses={201: s.OrderDetailSerializer},
        parameters=[IDEMPOTENCY],
        summary="Accept the quote's latest version: an order holding its nodes / 接受报价",
    )
    @idempotent
    def post(self, request: Request, number: str) -> Response:
        body = s.QuoteDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        quote = _latest(organisation(request), number)
        order = quote_accept(
            quote=quote,
            user=actor(request),
            name=body.validated_data["name"],
            ip=ip(request),
            payment_method=body.validated_data["payment_method"],
        )
        return Response(order_detail_data(request, order.number), status=201)


class QuoteReject(QuotesView):
    @extend_schema(
        operation_id="quotes_reject",
        request=s.QuoteDecisionSerializer,
        responses=s.QuoteSerializer,
        parameters=[IDEMPOTENCY],
        summary="Reject the quote's latest version (its nodes are released) / 拒绝报价",
    )
    @idempotent
    def post(self, request: Request, number: str) -> Response:
        body = s.QuoteDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        quote = _latest(organisation(request), number)
        quote_reject(
            quote=quote,
            user=actor(request),
            name=body.validated_data["name"],
            ip=ip(request),
            reason=body.validated_data["reason"],
        )
        return Response(s.QuoteSerializer(quotes_for(organisation(request)).get(pk=quote.pk)).data)
