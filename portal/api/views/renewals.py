"""An order's renewal and its first refusal: the renewal quote that holds the order's own
nodes for this customer alone until it expires (``billing.shop.renewals``), accepted or
declined through the same services as any quote."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from billing.models import Order, QuoteStatus, Renewal
from billing.orders.acceptance import quote_accept, quote_reject
from core.errors import DomainError
from portal.api import serializers as s
from portal.api.base import ApiView, idempotent
from portal.api.views.common import IDEMPOTENCY, actor, ip
from portal.api.views.orders import order_detail_data, order_for_request
from portal.dashboard import selectors as dashboard

RENEWAL_STATUS: dict[str, str] = {
    QuoteStatus.SENT: "offered",
    QuoteStatus.ACCEPTED: "accepted",
    QuoteStatus.REJECTED: "declined",
    QuoteStatus.EXPIRED: "expired",
}


def renewal_data(order: Order, renewal: Renewal | None) -> dict[str, Any]:
    quote = renewal.quote if renewal is not None else None
    new_order = getattr(quote, "order", None) if quote is not None else None
    if renewal is None:
        status = "not_offered"
    elif quote is None:
        status = "unavailable"
    else:
        status = RENEWAL_STATUS.get(quote.status, "offered")
    return {
        "order": order.number,
        "status": status,
        "offered_from": order.end_at - timedelta(days=settings.PORTAL_RENEWAL_DAYS),
        "quote": quote.number if quote else None,
        "quote_status": quote.status if quote else None,
        "first_refusal_until": quote.expires_at
        if quote is not None and quote.status == QuoteStatus.SENT
        else None,
        "same_nodes": bool(renewal and renewal.same_nodes),
        "kept": list(renewal.kept) if renewal else [],
        "replaced": list(renewal.replaced) if renewal else [],
        "offered": list(renewal.offered) if renewal else [],
        "unavailable": renewal.unavailable if renewal else "",
        "auto_accepted": bool(renewal and renewal.auto_accepted),
        "new_order": new_order.number if new_order is not None else None,
        "gross_total": quote.gross_total if quote else None,
        "currency": quote.currency if quote else None,
        "start_at": new_order.start_at if new_order is not None else None,
        "end_at": new_order.end_at if new_order is not None else None,
    }


class RenewalView(ApiView):
    scope_family = "orders"


def _offer(order: Order) -> Renewal:
    renewal = dashboard.order_renewal(order)
    if renewal is None or renewal.quote is None:
        raise DomainError(_("Order %(n)s has no renewal offer.") % {"n": order.number})
    return renewal


class OrderRenewal(RenewalView):
    @extend_schema(
        operation_id="orders_renewal",
        responses=s.RenewalSerializer,
        summary="The renewal offer and its first refusal on the same nodes / 续约与优先续租权",
    )
    def get(self, request: Request, number: str) -> Response:
        order = order_for_request(request, number)
        return Response(
            s.RenewalSerializer(renewal_data(order, dashboard.order_renewal(order))).data
        )


class OrderRenewalAccept(RenewalView):
    scope_family = "quotes"

    @extend_schema(
        operation_id="orders_renewal_accept",
        request=s.QuoteDecisionSerializer,
        responses={201: s.OrderDetailSerializer},
        parameters=[IDEMPOTENCY],
        summary="Accept the renewal: a new order on the held nodes / 接受续约",
    )
    @idempotent
    def post(self, request: Request, number: str) -> Response:
        body = s.QuoteDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        order = order_for_request(request, number)
        renewal = _offer(order)
        new = quote_accept(
            quote=renewal.quote,
            user=actor(request),
            name=body.validated_data["name"],
            ip=ip(request),
            payment_method=body.validated_data["payment_method"],
        )
        return Response(order_detail_data(request, new.number), status=201)


class OrderRenewalDecline(RenewalView):
    scope_family = "quotes"

    @extend_schema(
        operation_id="orders_renewal_decline",
        request=s.QuoteDecisionSerializer,
        responses=s.RenewalSerializer,
        parameters=[IDEMPOTENCY],
        summary="Decline the renewal: the held nodes are released / 放弃续约",
    )
    @idempotent
    def post(self, request: Request, number: str) -> Response:
        body = s.QuoteDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        order = order_for_request(request, number)
        renewal = _offer(order)
        quote_reject(
            quote=renewal.quote,
            user=actor(request),
            name=body.validated_data["name"],
            ip=ip(request),
            reason=body.validated_data["reason"],
        )
        return Response(
            s.RenewalSerializer(renewal_data(order, dashboard.order_renewal(order))).data
        )
