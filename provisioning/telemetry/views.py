"""Prometheus' side of the portal (no language prefix, no session): the HTTP service
discovery and the simulated nodes' exporters, both behind the telemetry bearer token."""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from inventory.models import Node
from provisioning.telemetry import discovery, simulated
from provisioning.telemetry.prometheus import telemetry_token


def _authorised(request: HttpRequest) -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _sep, token = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        token.strip().encode(), telemetry_token().encode()
    )


def _refused() -> HttpResponse:
    response = HttpResponse("bearer token required\n", status=401, content_type="text/plain")
    response["WWW-Authenticate"] = 'Bearer realm="telemetry"'
    return response


@require_GET
def service_discovery(request: HttpRequest) -> HttpResponse:
    if not _authorised(request):
        return _refused()
    return JsonResponse(
        discovery.targets(
            sites=request.GET.getlist("site"),
            node_types=request.GET.getlist("node_type"),
            statuses=request.GET.getlist("status"),
        ),
        safe=False,
    )


@require_GET
def simulated_metrics(request: HttpRequest, hostname: str) -> HttpResponse:
    if not _authorised(request):
        return _refused()
    node = get_object_or_404(Node.objects.select_related("node_type__gpu_model"), hostname=hostname)
    text = simulated.node_exposition(node)
    if text is None:  # a silent node: the scrape fails, Prometheus records up == 0
        return HttpResponse("node does not answer\n", status=503, content_type="text/plain")
    return HttpResponse(text, content_type="text/plain; version=0.0.4; charset=utf-8")
