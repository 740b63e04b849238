"""``Authorization: Bearer gpk_…``: the key's organisation and user, and its scopes."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from accounts import api_keys
from accounts.models import ApiKey
from accounts.throttle import client_ip


class KeyRefused(exceptions.AuthenticationFailed):
    """A refused key, with the stable code of why."""

    def __init__(self, detail: str, code: str) -> None:
        super().__init__(detail, code=code)
        self.problem_code = code


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _sep, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise KeyRefused(
                _("Send the API key as: Authorization: Bearer <key>."), "invalid_api_key"
            )
        try:
            key = api_keys.api_key_authenticate(secret=secret.strip(), ip=client_ip(request))
        except api_keys.ApiKeyRefused as exc:
            raise KeyRefused(exc.message, exc.code) from None
        return key.created_by, key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class HasScope(BasePermission):
    """The key's scope for the view's ``scope_family``: read for safe methods, write else."""

    message = "insufficient_scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            raise exceptions.NotAuthenticated()
        family = getattr(view, "scope_family", None)
        if family is None:
            return True
        return api_keys.scope_allows(key, family, write=request.method not in SAFE_METHODS)
