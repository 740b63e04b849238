"""Day two of a delivered cluster: the replacement policy, health events (incidents with
their evidence, what followed and the replacement run to poll), the approval of a
replacement that waits for the customer, and the monitoring series and GPUs the panel
shows (``provisioning.health``, ``provisioning.telemetry.panel``)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import Organisation
from portal.api import serializers as s
from portal.api.base import ApiView, idempotent, idempotent_when_keyed
from portal.api.problems import Problem
from portal.api.views.common import (
    IDEMPOTENCY,
    IDEMPOTENCY_OPTIONAL,
    actor,
    one_or_404,
    organisation,
)
from portal.api.views.orders import order_for_request
from provisioning.health import selectors as health_selectors
from provisioning.health import services as health_services
from provisioning.health.rules import RULES_BY_CODE
from provisioning.models import HealthIncident
from provisioning.telemetry import panel
from provisioning.telemetry.prometheus import PrometheusUnavailable

MONITORING_RETRY_S = 30


class HealthView(ApiView):
    scope_family = "orders"


class ReplacementPolicy(HealthView):
    @extend_schema(
        operation_id="orders_replacement_policy_read",
        responses=s.ReplacementPolicySerializer,
        summary="How a failed node is replaced: automatic or ask first / 故障节点替换策略",
    )
    def get(self, request: Request, number: str) -> Response:
        policy = health_services.policy_for(order_for_request(request, number))
        return Response(s.ReplacementPolicySerializer(policy).data)

    @extend_schema(
        operation_id="orders_replacement_policy_set",
        request=s.ReplacementPolicySerializer,
        responses=s.ReplacementPolicySerializer,
        parameters=[IDEMPOTENCY_OPTIONAL],
        summary="Choose the replacement policy (PUT is idempotent) / 设置替换策略",
    )
    @idempotent_when_keyed
    def put(self, request: Request, number: str) -> Response:
        order = order_for_request(request, number)
        body = s.ReplacementPolicySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        policy = health_services.policy_set(
            order=order,
            mode=body.validated_data["mode"],
            ask_minutes=body.validated_data["ask_minutes"],
            actor=actor(request),
        )
        return Response(s.ReplacementPolicySerializer(policy).data)


def incidents_for(org: Organisation) -> QuerySet[HealthIncident]:
    return (
        HealthIncident.objects.filter(order__organisation=org)
        .select_related("node", "order", "swap__spare_node")
        .prefetch_related("events")
    )


def incident_data(incident: HealthIncident) -> dict[str, Any]:
    swap = incident.swap
    rule = RULES_BY_CODE.get(incident.rule)
    return {
        "id": incident.pk,
        "order": incident.order.number if incident.order else None,
        "node": incident.node.hostname,
        "rule": incident.rule,
        "title": health_selectors.rule_title(incident.rule),
        "source": rule.source if rule is not None else "",
        "action": incident.action,
        "status": incident.status,
        "status_label": incident.get_status_display(),
        "evidence": health_services.incident_evidence(incident),
        "metric": incident.metric,
        "value": incident.value,
        "gpu": incident.gpu,
        "observed_at": incident.observed_at,
        "detected_at": incident.detected_at,
        "decide_by": incident.decide_by,
        "spare": swap.spare_node.hostname if swap and swap.spare_node else None,
        "operation": f"prov-{incident.replacement_run_id}" if incident.replacement_run_id else None,
        "handed_over_at": incident.handed_over_at,
        "events": [
            {
                "at": e.created_at,
                "from_status": e.from_status,
                "to_status": e.to_status,
                "to_label": e.to_label(),
                "comment": e.why(),
            }
            for e in sorted(incident.events.all(), key=lambda e: (e.created_at, e.pk))
        ],
    }


class _IncidentPage(s.HealthEventSerializer):
    def to_representation(self, instance: Any) -> Any:
        return super().to_representation(incident_data(instance))


ORDER_FILTER = OpenApiParameter("order", str, description="Only this order's events.")


class HealthEventList(HealthView):
    @extend_schema(
        operation_id="health_events_list",
        parameters=[ORDER_FILTER],
        responses=s.paged(s.HealthEventSerializer),
        summary="Health events of the organisation's nodes, newest first / 健康事件",
    )
    def get(self, request: Request) -> Response:
        qs = incidents_for(organisation(request))
        if request.query_params.get("order"):
            qs = qs.filter(order__number=request.query_params["order"][:32])
        return self.paginate(request, qs, _IncidentPage)


class HealthEventDetail(HealthView):
    @extend_schema(
        operation_id="health_events_read",
        responses=s.HealthEventSerializer,
        summary="One health event with its evidence and what followed / 健康事件详情",
    )
    def get(self, request: Request, event_id: int) -> Response:
        incident = one_or_404(incidents_for(organisation(request)), pk=event_id)
        return Response(s.HealthEventSerializer(incident_data(incident)).data)


class HealthEventApprove(HealthView):
    @extend_schema(
        operation_id="health_events_approve",
        request=None,
        responses=s.HealthEventSerializer,
        parameters=[IDEMPOTENCY],
        summary="Approve a replacement that waits for you (ask first) / 批准替换",
    )
    @idempotent
    def post(self, request: Request, event_id: int) -> Response:
        org = organisation(request)
        incident = one_or_404(incidents_for(org), pk=event_id)
        health_services.incident_approve(incident=incident, actor=actor(request))
        return Response(
            s.HealthEventSerializer(incident_data(incidents_for(org).get(pk=incident.pk))).data
        )


def _unavailable() -> Problem:
    return Problem(
        503,
        "monitoring_unavailable",
        _("Monitoring is unavailable."),
        headers={"Retry-After": str(MONITORING_RETRY_S)},
    )


class OrderMonitoring(HealthView):
    @extend_schema(
        operation_id="orders_monitoring",
        parameters=[s.MonitoringQuery],
        responses=s.MonitoringSerializer,
        summary="A metric's series for the order's nodes, each within its tenure / 监控数据",
    )
    def get(self, request: Request, number: str) -> Response:
        order = order_for_request(request, number)
        query = s.MonitoringQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        metric, range_key = query.validated_data["metric"], query.validated_data["range"]
        end = time.time()
        try:
            panel_metric, rows = panel.series(order, metric=metric, range_key=range_key, now=end)
        except PrometheusUnavailable:
            raise _unavailable() from None

        def at(t: float) -> datetime:
            return datetime.fromtimestamp(t, tz=UTC)

        data = {
            "order": order.number,
            "metric": panel_metric.key,
            "title": str(panel_metric.title),
            "unit": panel_metric.unit,
            "range": range_key,
            "start": at(end - panel.RANGES[range_key][1]),
            "end": at(end),
            "series": [
                {
                    "node": row.node,
                    "gpu": row.gpu,
                    "points": [{"time": at(t), "value": round(v, 4)} for t, v in row.points],
                }
                for row in rows
            ],
        }
        return Response(s.MonitoringSerializer(data).data)


class OrderGpus(HealthView):
    @extend_schema(
        operation_id="orders_gpus",
        responses=s.GpuSerializer(many=True),
        summary="The GPUs the order's nodes report: index, UUID, serial, model / GPU 清单",
    )
    def get(self, request: Request, number: str) -> Response:
        order = order_for_request(request, number)
        try:
            gpus = panel.gpu_inventory(order)
        except PrometheusUnavailable:
            raise _unavailable() from None
        return Response(s.GpuSerializer(gpus, many=True).data)
