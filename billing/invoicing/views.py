"""The metering API: ``POST /api/usage/`` takes usage records as JSON or CSV.

Who may post: a metering system with the token in ``PORTAL_USAGE_API_TOKEN``
(``Authorization: Bearer …``), or a logged-in user with ``billing.record_usage`` (session,
CSRF checked): the same permission as the admin's import. Answers:
201 ``{"created": n, "unchanged": m}``; 400 ``{"errors": [{"row", "field", "message"}]}``
with nothing stored; 401 / 403 without the right credentials. Messages are in the
client's language (``Accept-Language``; the portal's default without one). A body that
is not JSON, nested too deeply, or larger than ``MAX_UPLOAD_BYTES`` is one error on
row 0, never a 500.

JSON body: ``{"records": [{"external_id", "order", "day", "quantity", "metric"?, "node"?}]}``;
the records become a dataset and are imported by the same resource as a CSV
(``billing.invoicing.resources``).
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation.trans_real import parse_accept_lang_header
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from billing.invoicing.resources import MAX_UPLOAD_BYTES
from billing.invoicing.usage import (
    UsageImportError,
    may_record_usage,
    usage_import_csv,
    usage_import_records,
)

MAX_BODY = MAX_UPLOAD_BYTES


def client_language(request: HttpRequest) -> str:
    """The first language of the client's ``Accept-Language`` that the portal ships, else
    the default. A machine's request has no language cookie or URL prefix to go by."""
    for code, _quality in parse_accept_lang_header(request.headers.get("Accept-Language", "")):
        if code == "*":
            break
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


def _bearer_ok(request: HttpRequest) -> bool:
    expected = settings.PORTAL_USAGE_API_TOKEN
    header = request.headers.get("Authorization", "")
    if not expected or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[7:].strip().encode(), expected.encode())


def _errors(errors: list[dict[str, Any]], status: int = 400) -> JsonResponse:
    return JsonResponse(
        {"errors": errors}, status=status, json_dumps_params={"ensure_ascii": False}
    )


@csrf_protect
def _staff_import(request: HttpRequest) -> HttpResponse:
    return _import(request, actor=request.user)


def _file_error(message: str) -> JsonResponse:
    return _errors([{"row": 0, "field": "file", "message": message}])


def _body_limit() -> int:
    """The API's cap, or Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` when that is lower."""
    django_limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return min(MAX_BODY, django_limit) if django_limit else MAX_BODY


def _import(request: HttpRequest, *, actor: Any) -> HttpResponse:
    limit = _body_limit()
    try:
        too_large = int(request.META.get("CONTENT_LENGTH") or 0) > limit
    except ValueError:
        too_large = False
    if too_large or len(request.body) > limit:
        return _file_error(
            _("The body is too large: at most %(max)s MB at once.")
            % {"max": f"{limit / 1024 / 1024:.1f}"}
        )
    try:
        text = request.body.decode("utf-8-sig" if request.content_type == "text/csv" else "utf-8")
    except UnicodeDecodeError:
        return _file_error(_("The body must be UTF-8."))
    try:
        if request.content_type == "text/csv":
            result = usage_import_csv(text=text, source="api", actor=actor)
        else:
            try:
                payload = json.loads(text)
            except RecursionError:
                return _file_error(_("The JSON is nested too deeply."))
            except ValueError:  # not JSON, or a number of more than 4,300 digits
                return _file_error(_("The body is not valid JSON."))
            records = payload.get("records") if isinstance(payload, dict) else None
            if not isinstance(records, list):
                return _errors(
                    [
                        {
                            "row": 0,
                            "field": "records",
                            "message": _('Send {"records": [...]} or a text/csv body.'),
                        }
                    ]
                )
            result = usage_import_records(records=records, source="api", actor=actor)
    except UsageImportError as exc:
        return _errors([e.as_dict() for e in exc.errors])
    return JsonResponse({"created": result.created, "unchanged": result.unchanged}, status=201)


@csrf_exempt
@require_POST
def usage_api(request: HttpRequest) -> HttpResponse:
    with translation.override(client_language(request)):
        return _usage_api(request)


def _usage_api(request: HttpRequest) -> HttpResponse:
    if _bearer_ok(request):
        return _import(request, actor=None)
    user = request.user
    if not user.is_authenticated:
        return _errors(
            [{"row": 0, "field": "auth", "message": _("Send the metering token.")}], status=401
        )
    if not may_record_usage(user):
        return _errors(
            [
                {
                    "row": 0,
                    "field": "auth",
                    "message": _("Posting usage needs the permission to record usage."),
                }
            ],
            status=403,
        )
    return _staff_import(request)
