"""Lookups every family shares: the key's organisation and user, 404 for anything else's."""

from __future__ import annotations

from typing import Any

from django.db.models import Model, QuerySet
from django.http import Http404
from django.utils import translation
from rest_framework.request import Request

from accounts.models import ApiKey, Organisation
from accounts.throttle import client_ip


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
