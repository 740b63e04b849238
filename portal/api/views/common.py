"""Lookups every family shares: the key's organisation and user, 404 for anything else's."""

from __future__ import annotations

from typing import Any

from django.db.models import Model, QuerySet
from django.http import Http404
from django.utils import translation
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from accounts.models import ApiKey, Organisation
from accounts.throttle import client_ip

IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=True,
    description="A unique key per logical request (e.g. a UUID); a retry with the same "
    "key and body returns the first answer, the same key with another body is a 409. / "
    "每个请求一个唯一键（如 UUID）；相同键与相同请求体的重试返回首次结果。",
)

IDEMPOTENCY_OPTIONAL = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Optional here: with a key, a retry gets the first answer (a repeated "
    "DELETE its 204). / 可选：带上该键时，重试返回首次结果。",
)


def organisation(request: Request) -> Organisation:
    key = request.auth
    assert isinstance(key, ApiKey)
    return key.organisation


def actor(request: Request) -> Any:
    return request.user


def ip(request: Request) -> str | None:
    return client_ip(request)


def language() -> str:
    return translation.get_language() or "en"


def one_or_404(qs: QuerySet[Any], **lookup: Any) -> Any:
    found: Model | None = qs.filter(**lookup).first()
    if found is None:
        raise Http404
    return found
