"""The dashboard's API pages: API keys (owners create, see once, revoke) and webhook
endpoints (owners register, rotate the secret, remove; the delivery log and replay)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from accounts import api_keys, webhooks
from accounts.decorators import customer_required
from accounts.models import ApiKey, WebhookDelivery, WebhookEndpoint
from core.errors import DomainError
from portal.dashboard.forms import ApiKeyForm, WebhookEndpointForm

DELIVERIES_SHOWN = 50


def _keys_page(
    request: HttpRequest, form: ApiKeyForm | None = None, secret: str = "", status: int = 200
) -> HttpResponse:
    can_manage = request.membership.role in api_keys.API_KEY_MANAGERS
    return render(
        request,
        "dashboard/api_keys.html",
        {
            "organisation": request.organisation,
            "keys": ApiKey.objects.filter(organisation=request.organisation).select_related(
                "created_by"
            ),
            "can_manage": can_manage,
            "form": form or (ApiKeyForm() if can_manage else None),
            "secret": secret,
            "now": timezone.now(),
        },
        status=status,
    )


@never_cache
@customer_required
@require_GET
def api_keys_page(request: HttpRequest) -> HttpResponse:
    return _keys_page(request)


@never_cache
@customer_required(roles=api_keys.API_KEY_MANAGERS)
@require_POST
def api_key_create(request: HttpRequest) -> HttpResponse:
    form = ApiKeyForm(request.POST)
    if form.is_valid():
        try:
            days = form.cleaned_data["expires_days"]
            new = api_keys.api_key_create(
                organisation=request.organisation,
                actor=request.user,
                name=form.cleaned_data["name"],
                scopes=form.scopes(),
                expires_at=timezone.now() + timedelta(days=days) if days else None,
                allowed_ips=api_keys.allowed_ips_parse(form.cleaned_data["allowed_ips"]),
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            # Shown on this answer only: the page is not cached and the key is not stored.
            return _keys_page(request, secret=new.secret)
    return _keys_page(request, form=form, status=400)


@customer_required(roles=api_keys.API_KEY_MANAGERS)
@require_POST
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    if not ApiKey.objects.filter(organisation=request.organisation, pk=key_id).exists():
        raise Http404
    key = api_keys.api_key_revoke(
        organisation=request.organisation, key_id=key_id, actor=request.user
    )
    messages.success(request, _("Key “%(name)s” revoked.") % {"name": key.name})
    return redirect("dashboard_api_keys")


def _hooks_page(
    request: HttpRequest,
    form: WebhookEndpointForm | None = None,
    secret: str = "",
    status: int = 200,
) -> HttpResponse:
    can_manage = request.membership.role in webhooks.WEBHOOK_MANAGERS
    return render(
        request,
        "dashboard/webhooks.html",
        {
            "organisation": request.organisation,
            "endpoints": WebhookEndpoint.objects.filter(organisation=request.organisation),
            "deliveries": WebhookDelivery.objects.filter(
                endpoint__organisation=request.organisation
            ).select_related("event", "endpoint")[:DELIVERIES_SHOWN],
            "can_manage": can_manage,
            "form": form or (WebhookEndpointForm() if can_manage else None),
            "secret": secret,
        },
        status=status,
    )


@never_cache
@customer_required
@require_GET
def webhooks_page(request: HttpRequest) -> HttpResponse:
    return _hooks_page(request)


@never_cache
@customer_required(roles=webhooks.WEBHOOK_MANAGERS)
@require_POST
def webhook_create(request: HttpRequest) -> HttpResponse:
    form = WebhookEndpointForm(request.POST)
    if form.is_valid():
        try:
            endpoint = webhooks.endpoint_create(
                organisation=request.organisation,
                url=form.cleaned_data["url"],
                event_types=form.cleaned_data["event_types"],
                description=form.cleaned_data["description"],
                actor=request.user,
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return _hooks_page(request, secret=endpoint.secret)
    return _hooks_page(request, form=form, status=400)


def _endpoint(request: HttpRequest, endpoint_id: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(
        organisation=request.organisation, pk=endpoint_id
    ).first()
    if endpoint is None:
        raise Http404
    return endpoint


@never_cache
@customer_required(roles=webhooks.WEBHOOK_MANAGERS)
@require_POST
def webhook_rotate(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = webhooks.endpoint_rotate_secret(
        endpoint=_endpoint(request, endpoint_id), actor=request.user
    )
    return _hooks_page(request, secret=endpoint.secret)


@customer_required(roles=webhooks.WEBHOOK_MANAGERS)
@require_POST
def webhook_delete(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    webhooks.endpoint_delete(endpoint=_endpoint(request, endpoint_id), actor=request.user)
    messages.success(request, _("Endpoint removed."))
    return redirect("dashboard_webhooks")


@customer_required(roles=webhooks.WEBHOOK_MANAGERS)
@require_POST
def webhook_replay(request: HttpRequest, delivery_id: int) -> HttpResponse:
    delivery = (
        WebhookDelivery.objects.filter(endpoint__organisation=request.organisation, pk=delivery_id)
        .select_related("endpoint__organisation", "event")
        .first()
    )
    if delivery is None:
        raise Http404
    webhooks.delivery_replay(delivery=delivery, actor=request.user)
    messages.success(
        request, _("Event %(id)s will be sent again.") % {"id": delivery.event.event_id}
    )
    return redirect("dashboard_webhooks")
