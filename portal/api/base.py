"""What every API view shares: rate limits with their headers, the audit of writes, and
``Idempotency-Key`` on POST.

Rate limits: a fixed window per key (per client address before authentication),
``PORTAL_API_RATE_LIMIT`` requests per ``PORTAL_API_RATE_WINDOW`` seconds, counted in the
cache (``core.ratelimit``). Every answer carries ``RateLimit-Policy: "default";q=600;w=60``
and ``RateLimit: "default";r=<remaining>;t=<seconds to reset>`` (IETF draft
httpapi-ratelimit-headers); past the limit: 429 with ``Retry-After``.

Idempotency: a POST must send ``Idempotency-Key`` (a PUT or DELETE may). The first
request with a key claims it (a row, unique per organisation and key) in the transaction
that does the work, so a concurrent retry waits on that row and then answers the stored
result; a rolled-back first attempt leaves no claim. The same key with another body (or
path) is a 409.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import api_keys
from accounts.models import ApiKey, IdempotencyRecord
from accounts.throttle import client_ip
from core import ratelimit
from portal.api.pagination import Cursor
from portal.api.problems import PROBLEM_TYPE, Problem

IDEMPOTENCY_HEADER = "Idempotency-Key"


def _rate_state(request: Request) -> tuple[int, int, int, bool]:
    """(limit, remaining, seconds to reset, over the limit) after counting this request."""
    limit = int(settings.PORTAL_API_RATE_LIMIT)
    window = int(settings.PORTAL_API_RATE_WINDOW)
    now = time.time()
    slot = int(now // window)
    key = request.auth if isinstance(request.auth, ApiKey) else None
    if key is not None:
        who = f"k{key.pk}"
    else:
        who = "ip" + hashlib.sha256(client_ip(request).encode()).hexdigest()[:24]
    hits = ratelimit.hit(f"api-rate:{who}:{slot}", window=window + 1)
    reset = max(int((slot + 1) * window - now), 1)
    return limit, max(limit - hits, 0), reset, hits > limit


class ApiView(APIView):
    """The base of every ``/api/v1/`` view."""

    scope_family: str | None = None

    def check_throttles(self, request: Request) -> None:
        limit, remaining, reset, over = _rate_state(request)
        window = int(settings.PORTAL_API_RATE_WINDOW)
        request._rate_headers = {
            "RateLimit-Policy": f'"default";q={limit};w={window}',
            "RateLimit": f'"default";r={remaining};t={reset}',
        }
        if over:
            raise exceptions.Throttled(wait=reset)

    def paginate(self, request: Request, queryset: Any, serializer: type) -> Response:
        """One cursor page of ``queryset`` (newest first) as ``{next, previous, results}``."""
        paginator = Cursor()
        page = paginator.paginate_queryset(queryset, request, self)
        return paginator.get_paginated_response(serializer(page, many=True).data)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Count before the permission check too, so refused keys are limited as well.
        self.format_kwarg = self.get_format_suffix(**kwargs)
        neg = self.perform_content_negotiation(request)
        request.accepted_renderer, request.accepted_media_type = neg
        version, scheme = self.determine_version(request, *args, **kwargs)
        request.version, request.versioning_scheme = version, scheme
        try:
            self.perform_authentication(request)
        finally:
            if not hasattr(request, "_rate_headers"):
                self.check_throttles(request)
        self.check_permissions(request)

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in getattr(request, "_rate_headers", {}).items():
            response[name] = value
        key = getattr(request, "_auth", None)
        if (
            isinstance(key, ApiKey)
            and request.method not in ("GET", "HEAD", "OPTIONS")
            and response.status_code != 429
        ):
            api_keys.api_audit_record(
                key=key,
                method=request.method or "",
                path=request.path,
                status_code=response.status_code,
                idempotency_key=request.headers.get(IDEMPOTENCY_HEADER, ""),
                ip=client_ip(request),
            )
        return response


def _request_digest(request: Request) -> str:
    body = json.dumps(
        {"method": request.method, "path": request.path, "body": request.data},
        sort_keys=True,
        cls=DjangoJSONEncoder,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def _jsonable(data: Any) -> Any:
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def _replay(record: IdempotencyRecord) -> Response:
    content_type = PROBLEM_TYPE if record.status_code >= 400 else None
    response = Response(record.response, status=record.status_code, content_type=content_type)
    response["Idempotent-Replayed"] = "true"
    return response


def idempotent(handler: Callable[..., Response]) -> Callable[..., Response]:
    """Wrap a view's ``post``: require ``Idempotency-Key``; replay the first answer."""
    return _idempotent(handler, required=True)


def idempotent_when_keyed(handler: Callable[..., Response]) -> Callable[..., Response]:
    """Wrap a ``put`` or ``delete`` (idempotent by their nature): with an
    ``Idempotency-Key`` the first answer is replayed as for a POST (a retried DELETE gets
    its 204, not a 404); without one the request simply runs."""
    return _idempotent(handler, required=False)


def _idempotent(handler: Callable[..., Response], *, required: bool) -> Callable[..., Response]:
    @wraps(handler)
    def wrapper(view: ApiView, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(IDEMPOTENCY_HEADER, "").strip()
        if not key and not required:
            return handler(view, request, *args, **kwargs)
        if not key or len(key) > 200:
            raise Problem(
                400,
                "idempotency_key_missing",
                _(
                    "Send an Idempotency-Key header (1 to 200 characters, e.g. a UUID) "
                    "with every POST."
                ),
            )
        api_key = request.auth
        assert isinstance(api_key, ApiKey)
        digest = _request_digest(request)
        horizon = timezone.now() - timedelta(hours=settings.PORTAL_API_IDEMPOTENCY_HOURS)
        with transaction.atomic():
            try:
                with transaction.atomic():
                    IdempotencyRecord.objects.filter(
                        organisation_id=api_key.organisation_id, key=key, created_at__lt=horizon
                    ).delete()
                    record = IdempotencyRecord.objects.create(
                        organisation_id=api_key.organisation_id, key=key, request_hash=digest
                    )
            except IntegrityError:
                record = IdempotencyRecord.objects.get(
                    organisation_id=api_key.organisation_id, key=key
                )
                if record.request_hash != digest:
                    raise Problem(
                        409,
                        "idempotency_key_reused",
                        _(
                            "This Idempotency-Key was used with another request; use a new "
                            "key for a new request."
                        ),
                    ) from None
                return _replay(record)
            try:
                response = handler(view, request, *args, **kwargs)
            except Exception as exc:
                response = view.handle_exception(exc)
            if response.status_code >= 500:
                transaction.set_rollback(True)
                return response
            record.status_code = response.status_code
            record.response = _jsonable(response.data)
            record.save(update_fields=["status_code", "response"])
            return response

    return wrapper
