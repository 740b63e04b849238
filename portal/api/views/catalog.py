"""Catalog: sites, node types, price books in force, availability, the sizing calculator."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from billing.pricing import selectors as pricing_selectors
from core.errors import DomainError
from inventory import selectors, sizing
from inventory.models import NodeType, Site
from portal.api import serializers as s
from portal.api.base import ApiView
from portal.api.problems import Problem
from portal.api.views.common import one_or_404


class CatalogView(ApiView):
    scope_family = "catalog"


class SiteList(CatalogView):
    @extend_schema(
        operation_id="sites_list",
        responses=s.SiteSerializer(many=True),
        summary="Data centres / 数据中心",
    )
    def get(self, request: Request) -> Response:
        return Response(s.SiteSerializer(selectors.catalog_sites(), many=True).data)


class SiteDetail(CatalogView):
    @extend_schema(operation_id="sites_read", responses=s.SiteSerializer, summary="One data centre")
    def get(self, request: Request, code: str) -> Response:
        return Response(s.SiteSerializer(one_or_404(Site.objects.all(), code=code)).data)


class NodeTypeList(CatalogView):
    @extend_schema(
        operation_id="node_types_list",
        responses=s.NodeTypeSerializer(many=True),
        summary="Node types and their specifications / 节点类型",
    )
    def get(self, request: Request) -> Response:
        return Response(s.NodeTypeSerializer(selectors.catalog_node_types(), many=True).data)


class NodeTypeDetail(CatalogView):
    @extend_schema(operation_id="node_types_read", responses=s.NodeTypeSerializer)
    def get(self, request: Request, code: str) -> Response:
        nt = one_or_404(NodeType.objects.select_related("gpu_model"), code=code)
        return Response(s.NodeTypeSerializer(nt).data)


class PriceBookList(CatalogView):
    @extend_schema(
        operation_id="price_books_list",
        responses=s.PriceBookSerializer(many=True),
        summary="The price book in force at each site / 现行价目表",
    )
    def get(self, request: Request) -> Response:
        books = []
        for site in selectors.catalog_sites():
            try:
                books.append(pricing_selectors.price_book_in_force(site=site))
            except DomainError:
                continue  # a site without a price book yet
        return Response(s.PriceBookSerializer(books, many=True).data)


class Availability(CatalogView):
    @extend_schema(
        operation_id="availability_read",
        parameters=[s.AvailabilityQuery],
        responses=s.AvailabilitySerializer,
        summary="Free nodes of a type over a window, and the earliest full start / 可用性",
    )
    def get(self, request: Request) -> Response:
        query = s.AvailabilityQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        q: dict[str, Any] = query.validated_data
        site = one_or_404(Site.objects.all(), code=q["site"])
        nt = one_or_404(NodeType.objects.all(), code=q["node_type"])
        found = selectors.availability_search(
            site=site, node_type=nt, count=q["count"], start_at=q["start"], end_at=q["end"]
        )
        return Response(
            s.AvailabilitySerializer(
                {
                    "site": site.code,
                    "node_type": nt.code,
                    "requested": found.requested,
                    "free": found.free_count,
                    "can_place": found.can_place,
                    "start": found.start_at,
                    "end": found.end_at,
                    "earliest_start": found.earliest_start,
                    "leaves": {leaf: len(nodes) for leaf, nodes in found.free_by_leaf.items()},
                }
            ).data
        )


class Sizing(CatalogView):
    @extend_schema(
        operation_id="sizing_read",
        parameters=[s.SizingQuery],
        responses={200: dict},
        summary="The sizing calculator: GPUs, nodes and layout for a model / 规模测算",
    )
    def get(self, request: Request) -> Response:
        query = s.SizingQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        q: dict[str, Any] = dict(query.validated_data)
        code = q.pop("site", None)
        sites = selectors.catalog_sites()
        site: Site | None = (
            next((x for x in sites if x.code == code), None)
            if code
            else (sites[0] if sites else None)
        )
        if code and site is None:
            message = _("Unknown site.")
            raise Problem(
                400,
                "validation_failed",
                message,
                errors=[{"field": "site", "message": message, "code": "invalid"}],
            )
        try:
            options = pricing_selectors.sizing_options(site=site) if site else []
        except DomainError:
            options = []
        try:
            inp = sizing.validate(sizing.SizingInput(**q))
            result = sizing.size(inp, options)
        except sizing.SizingError as exc:
            raise Problem(
                400,
                "validation_failed",
                exc.message,
                errors=[{"field": exc.field, "message": exc.message, "code": "invalid"}],
            ) from None
        return Response(sizing.result_json(result))
