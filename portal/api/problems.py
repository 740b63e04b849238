"""Errors as RFC 9457 problem details (``application/problem+json``).

Every error has a stable machine ``code`` (also the end of ``type``), a ``title`` and a
``detail`` in the request's language (``Accept-Language``: en or zh-Hans), ``status``,
``instance`` (the path) and, for invalid input, ``errors``: one ``{field, message, code}``
per problem.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.utils.translation import gettext as _
from rest_framework import exceptions, status
from rest_framework.response import Response

from billing.shop.selfservice import CapacityTaken, ConfigurationInvalid
from core.errors import DomainError, IllegalTransition, NotEnoughCapacity

PROBLEM_TYPE = "application/problem+json"
TYPE_BASE = "/api/v1/docs/#problem-"


class Problem(exceptions.APIException):
    """An error a view raises with its own status, code and message."""

    def __init__(
        self,
        status_code: int,
        code: str,
        detail: str,
        *,
        errors: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, code=code)
        self.status_code = status_code
        self.problem_code = code
        self.errors = errors or []
        self.headers = headers or {}
        self.extra = extra or {}


def titles() -> dict[str, str]:
    return {
        "validation_failed": _("The request is not valid."),
        "malformed_request": _("The request body could not be read."),
        "not_authenticated": _("Authentication is needed."),
        "invalid_api_key": _("The API key is not valid."),
        "api_key_revoked": _("The API key has been revoked."),
        "api_key_expired": _("The API key has expired."),
        "ip_not_allowed": _("The API key may not be used from this address."),
        "api_key_orphaned": _("The API key's creator can no longer act for the organisation."),
        "insufficient_scope": _("The API key's scopes do not allow this."),
        "not_found": _("Not found."),
        "method_not_allowed": _("Method not allowed."),
        "not_acceptable": _("The requested format is not available."),
        "unsupported_media_type": _("Send JSON (Content-Type: application/json)."),
        "rate_limited": _("Too many requests."),
        "idempotency_key_missing": _("An Idempotency-Key header is needed."),
        "idempotency_key_reused": _("The Idempotency-Key was used for another request."),
        "illegal_transition": _("The object cannot make this change now."),
        "not_enough_capacity": _("Not enough nodes are free."),
        "rule_refused": _("The request breaks a business rule."),
        "document_pending": _("The document is being prepared."),
        "not_delivered": _("The order has not been delivered yet."),
        "monitoring_unavailable": _("Monitoring is unavailable."),
        "server_error": _("Something went wrong on our side."),
    }


def _field_errors(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for name, value in detail.items():
            field = f"{prefix}.{name}" if prefix else str(name)
            if name == "non_field_errors":
                field = prefix or ""
            out.extend(_field_errors(value, field))
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            if isinstance(value, dict | list):
                out.extend(_field_errors(value, f"{prefix}[{index}]"))
            else:
                out.extend(_field_errors(value, prefix))
    else:
        code = getattr(detail, "code", "invalid") or "invalid"
        out.append({"field": prefix, "message": str(detail), "code": str(code)})
    return out


def problem_response(
    *,
    status_code: int,
    code: str,
    detail: str,
    instance: str = "",
    errors: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Response:
    body: dict[str, Any] = {
        "type": TYPE_BASE + code,
        "title": titles().get(code, detail),
        "status": status_code,
        "detail": detail,
        "code": code,
        "instance": instance,
    }
    if errors:
        body["errors"] = errors
    body.update(extra or {})
    response = Response(body, status=status_code, headers=headers, content_type=PROBLEM_TYPE)
    return response


def _classify(exc: Exception) -> tuple[int, str, str, list[dict[str, str]], dict[str, Any]]:
    """(status, code, detail, field errors, extra members) for an exception."""
    if isinstance(exc, Problem):
        return exc.status_code, exc.problem_code, str(exc.detail), exc.errors, exc.extra
    if isinstance(exc, ConfigurationInvalid):
        errors = [{"field": f, "message": str(m), "code": "invalid"} for f, m in exc.errors.items()]
        return 400, "validation_failed", _("The request is not valid."), errors, {}
    if isinstance(exc, CapacityTaken):
        extra = {
            "alternatives": [
                {k: str(v) for k, v in vars(a).items() if not k.startswith("_")}
                for a in exc.alternatives
            ]
        }
        return 409, "not_enough_capacity", exc.message, [], extra
    if isinstance(exc, NotEnoughCapacity):
        return 409, "not_enough_capacity", exc.message, [], {}
    if isinstance(exc, IllegalTransition):
        return 409, "illegal_transition", exc.message, [], {}
    if isinstance(exc, DomainError):
        return 422, getattr(exc, "code", "rule_refused"), exc.message, [], {}
    if isinstance(exc, Http404 | exceptions.NotFound):
        return 404, "not_found", _("Not found."), [], {}
    if isinstance(exc, DjangoPermissionDenied):
        return 403, "insufficient_scope", titles()["insufficient_scope"], [], {}
    if isinstance(exc, exceptions.ValidationError):
        return (
            400,
            "validation_failed",
            _("The request is not valid."),
            _field_errors(exc.detail),
            {},
        )
    if isinstance(exc, exceptions.ParseError):
        return 400, "malformed_request", titles()["malformed_request"], [], {}
    if isinstance(exc, exceptions.AuthenticationFailed):
        code = getattr(exc, "problem_code", "invalid_api_key")
        detail = str(exc.detail) if hasattr(exc, "problem_code") else titles()[code]
        return 401, code, detail, [], {}
    if isinstance(exc, exceptions.NotAuthenticated):
        return 401, "not_authenticated", _("Send an API key: Authorization: Bearer <key>."), [], {}
    if isinstance(exc, exceptions.PermissionDenied):
        return 403, "insufficient_scope", titles()["insufficient_scope"], [], {}
    if isinstance(exc, exceptions.MethodNotAllowed):
        return 405, "method_not_allowed", titles()["method_not_allowed"], [], {}
    if isinstance(exc, exceptions.NotAcceptable):
        return 406, "not_acceptable", titles()["not_acceptable"], [], {}
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return 415, "unsupported_media_type", titles()["unsupported_media_type"], [], {}
    if isinstance(exc, exceptions.Throttled):
        wait = int(exc.wait or 1)
        return (
            429,
            "rate_limited",
            _("Too many requests: try again in %(s)s seconds.") % {"s": wait},
            [],
            {},
        )
    if isinstance(exc, exceptions.APIException):
        return exc.status_code, str(exc.default_code), str(exc.detail), [], {}
    raise exc


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's exception handler: every error it sees becomes a problem document."""
    request = context.get("request")
    try:
        status_code, code, detail, errors, extra = _classify(exc)
    except Exception:  # not ours to describe: DRF lets it become a 500
        return None
    headers: dict[str, str] = {}
    if isinstance(exc, Problem):
        headers.update(exc.headers)
    if isinstance(exc, exceptions.Throttled):
        headers["Retry-After"] = str(int(exc.wait or 1))
    if status_code == status.HTTP_401_UNAUTHORIZED:
        headers["WWW-Authenticate"] = 'Bearer realm="api"'
    if isinstance(exc, exceptions.MethodNotAllowed) and context.get("view") is not None:
        headers["Allow"] = ", ".join(context["view"].allowed_methods)
    return problem_response(
        status_code=status_code,
        code=code,
        detail=detail,
        instance=request.path if request is not None else "",
        errors=errors,
        headers=headers,
        extra=extra,
    )
