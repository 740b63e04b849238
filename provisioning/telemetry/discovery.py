"""Prometheus' targets, built from the inventory (Prometheus' HTTP service discovery
format: a list of ``{"targets": [...], "labels": {...}}``).

Every node that is not retired is scraped (passive checks always, idle or rented). Each
target carries the labels the health rules and the panel select on: ``node`` (the
hostname: the only label a customer's query is built from), ``site``, ``node_type``,
``rack``, ``leaf`` and ``exporter``. A real node has two targets (dcgm-exporter and
node_exporter on its address); a simulated node one, the portal's own simulated exporter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.urls import reverse

from inventory.models import HardwareDriverKind, Node, NodeStatus


def simulated_target() -> str:
    if settings.PORTAL_TELEMETRY_SIMULATED_TARGET:
        return str(settings.PORTAL_TELEMETRY_SIMULATED_TARGET)
    return urlsplit(settings.PORTAL_BASE_URL).netloc


def targets(
    *, sites: Sequence[str] = (), node_types: Sequence[str] = (), statuses: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Every node not retired; ``sites``, ``node_types`` and ``statuses`` narrow it (one
    Prometheus per site, say: ``/telemetry/targets?site=SZ``)."""
    out: list[dict[str, Any]] = []
    nodes = (
        Node.objects.exclude(status=NodeStatus.RETIRED)
        .select_related("site", "node_type", "rack", "leaf_switch")
        .order_by("hostname")
    )
    if sites:
        nodes = nodes.filter(site__code__in=sites)
    if node_types:
        nodes = nodes.filter(node_type__code__in=node_types)
    if statuses:
        nodes = nodes.filter(status__in=statuses)
    portal = simulated_target()
    for node in nodes:
        labels = {
            "node": node.hostname,
            "site": node.site.code,
            "node_type": node.node_type.code,
            "rack": node.rack.name,
            "leaf": node.leaf_switch.name,
        }
        kind = node.driver or settings.PORTAL_HARDWARE_DRIVER
        if kind == HardwareDriverKind.REDFISH:
            if not node.ip_address:
                continue  # not reachable yet: nothing to scrape
            out.append(
                {
                    "targets": [f"{node.ip_address}:{settings.PORTAL_TELEMETRY_DCGM_PORT}"],
                    "labels": {**labels, "exporter": "dcgm"},
                }
            )
            out.append(
                {
                    "targets": [
                        f"{node.ip_address}:{settings.PORTAL_TELEMETRY_NODE_EXPORTER_PORT}"
                    ],
                    "labels": {**labels, "exporter": "node"},
                }
            )
        else:
            path = reverse("telemetry_simulated_metrics", args=[node.hostname])
            out.append(
                {
                    "targets": [portal],
                    "labels": {**labels, "exporter": "simulated", "__metrics_path__": path},
                }
            )
    return out
