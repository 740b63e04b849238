"""The organisation's SSH keys and webhook endpoints, deliveries and their replay."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from accounts import services as account_services
from accounts import webhooks
from accounts.models import SshPublicKey, WebhookDelivery, WebhookEndpoint
from portal.api import serializers as s
from portal.api import webhook_payloads
from portal.api.base import ApiView, idempotent, idempotent_when_keyed
from portal.api.views.common import (
    IDEMPOTENCY,
    IDEMPOTENCY_OPTIONAL,
    actor,
    one_or_404,
    organisation,
)


class SshKeysView(ApiView):
    scope_family = "ssh_keys"


class SshKeyList(SshKeysView):
    @extend_schema(
        operation_id="ssh_keys_list",
        responses=s.paged(s.SshKeySerializer),
        summary="The organisation's SSH public keys / SSH 公钥",
    )
    def get(self, request: Request) -> Response:
        qs = SshPublicKey.objects.filter(organisation=organisation(request))
        return self.paginate(request, qs, s.SshKeySerializer)

    @extend_schema(
        operation_id="ssh_keys_create",
        request=s.SshKeySerializer,
        responses={201: s.SshKeySerializer},
        parameters=[IDEMPOTENCY],
        summary="Add a key (owners' keys only) / 添加公钥",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        body = s.SshKeySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        key = account_services.ssh_key_add(
            organisation=organisation(request),
            name=body.validated_data.get("name", ""),
            public_key=body.validated_data["public_key"],
            actor=actor(request),
        )
        return Response(s.SshKeySerializer(key).data, status=201)


class SshKeyDetail(SshKeysView):
    @extend_schema(operation_id="ssh_keys_read", responses=s.SshKeySerializer)
    def get(self, request: Request, key_id: int) -> Response:
        key = one_or_404(SshPublicKey.objects.filter(organisation=organisation(request)), pk=key_id)
        return Response(s.SshKeySerializer(key).data)

    @extend_schema(
        operation_id="ssh_keys_delete",
        responses={204: None},
        parameters=[IDEMPOTENCY_OPTIONAL],
        summary="Remove a key (nodes already delivered keep it)",
    )
    @idempotent_when_keyed
    def delete(self, request: Request, key_id: int) -> Response:
        org = organisation(request)
        one_or_404(SshPublicKey.objects.filter(organisation=org), pk=key_id)
        account_services.ssh_key_remove(organisation=org, key_id=key_id, actor=actor(request))
        return Response(status=204)


class WebhooksView(ApiView):
    scope_family = "webhooks"


def _endpoints(request: Request):  # noqa: ANN202
    return WebhookEndpoint.objects.filter(organisation=organisation(request))


class EndpointList(WebhooksView):
    @extend_schema(
        operation_id="webhook_endpoints_list",
        responses=s.paged(s.WebhookEndpointSerializer),
        summary="Webhook endpoints / Webhook 端点",
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, _endpoints(request), s.WebhookEndpointSerializer)

    @extend_schema(
        operation_id="webhook_endpoints_create",
        request=s.WebhookEndpointSerializer,
        responses={201: s.WebhookEndpointSecretSerializer},
        parameters=[IDEMPOTENCY],
        summary="Register an endpoint; the signing secret is in this answer only / 注册端点",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        body = s.WebhookEndpointSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint = webhooks.endpoint_create(
            organisation=organisation(request),
            url=body.validated_data["url"],
            event_types=body.validated_data["event_types"],
            description=body.validated_data.get("description", ""),
            actor=actor(request),
        )
        return Response(s.WebhookEndpointSecretSerializer(endpoint).data, status=201)


class EndpointDetail(WebhooksView):
    @extend_schema(operation_id="webhook_endpoints_read", responses=s.WebhookEndpointSerializer)
    def get(self, request: Request, endpoint_id: int) -> Response:
        return Response(
            s.WebhookEndpointSerializer(one_or_404(_endpoints(request), pk=endpoint_id)).data
        )

    @extend_schema(
        operation_id="webhook_endpoints_delete",
        responses={204: None},
        parameters=[IDEMPOTENCY_OPTIONAL],
    )
    @idempotent_when_keyed
    def delete(self, request: Request, endpoint_id: int) -> Response:
        endpoint = one_or_404(_endpoints(request), pk=endpoint_id)
        webhooks.endpoint_delete(endpoint=endpoint, actor=actor(request))
        return Response(status=204)


class EndpointRotate(WebhooksView):
    @extend_schema(
        operation_id="webhook_endpoints_rotate",
        request=s.RotateSerializer,
        responses=s.WebhookEndpointSecretSerializer,
        parameters=[IDEMPOTENCY],
        summary="A new secret; the old one also signs until the overlap ends / 轮换密钥",
    )
    @idempotent
    def post(self, request: Request, endpoint_id: int) -> Response:
        body = s.RotateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint = one_or_404(_endpoints(request), pk=endpoint_id)
        endpoint = webhooks.endpoint_rotate_secret(
            endpoint=endpoint,
            actor=actor(request),
            overlap_hours=body.validated_data["overlap_hours"],
        )
        return Response(s.WebhookEndpointSecretSerializer(endpoint).data)


def _deliveries(request: Request):  # noqa: ANN202
    return (
        WebhookDelivery.objects.filter(endpoint__organisation=organisation(request))
        .select_related("event", "endpoint")
        .prefetch_related("attempt_log")
    )


class DeliveryList(WebhooksView):
    @extend_schema(
        operation_id="webhook_deliveries_list",
        responses=s.paged(s.WebhookDeliverySerializer),
        summary="The delivery log: status, attempts, response times / 投递记录",
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, _deliveries(request), s.WebhookDeliverySerializer)


class DeliveryReplay(WebhooksView):
    @extend_schema(
        operation_id="webhook_deliveries_replay",
        request=None,
        responses={201: s.WebhookDeliverySerializer},
        parameters=[IDEMPOTENCY],
        summary="Send the delivery's event again (same event id) / 重新投递",
    )
    @idempotent
    def post(self, request: Request, delivery_id: int) -> Response:
        delivery = _deliveries(request).filter(pk=delivery_id).first()
        if delivery is None:
            raise Http404
        again = webhooks.delivery_replay(delivery=delivery, actor=actor(request))
        return Response(
            s.WebhookDeliverySerializer(_deliveries(request).get(pk=again.pk)).data, status=201
        )


class EventTypeList(WebhooksView):
    @extend_schema(
        operation_id="webhook_event_types_list",
        responses=s.EventTypeSerializer(many=True),
        summary="The event types an endpoint can subscribe to / 可订阅的事件类型",
    )
    def get(self, request: Request) -> Response:
        return Response(
            s.EventTypeSerializer(
                [
                    {
                        "type": k,
                        "description": str(v),
                        "payload_schema": webhook_payloads.schema_ref(k),
                    }
                    for k, v in webhooks.EVENT_TYPES.items()
                ],
                many=True,
            ).data
        )
