"""The metering API: ``POST /api/usage/`` takes usage records as JSON or CSV.

Who may post: a metering system with the token in ``PORTAL_USAGE_API_TOKEN``
(``Authorization: Bearer …``), or a logged-in staff user (session, CSRF checked). Answers:
201 ``{"created": n, "unchanged": m}``; 400 ``{"errors": [{"row", "field", "message"}]}``
with nothing stored; 401 / 403 without the right credentials.

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
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from billing.invoicing.usage import UsageImportError, usage_import_csv, usage_import_records

MAX_BODY = 5 * 1024 * 1024


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


def _import(request: HttpRequest, *, actor: Any) -> HttpResponse:
    if len(request.body) > MAX_BODY:
        return _errors([{"row": 0, "field": "file", "message": _("The body is too large.")}])
    content_type = request.content_type or ""
    try:
        if content_type == "text/csv":
            result = usage_import_csv(
                text=request.body.decode("utf-8-sig"), source="api", actor=actor
            )
        else:
            payload = json.loads(request.body.decode("utf-8"))
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
    except UnicodeDecodeError:
        return _errors([{"row": 0, "field": "file", "message": _("The body must be UTF-8.")}])
    except json.JSONDecodeError:
        return _errors([{"row": 0, "field": "file", "message": _("The body is not valid JSON.")}])
    except UsageImportError as exc:
        return _errors([e.as_dict() for e in exc.errors])
    return JsonResponse({"created": result.created, "unchanged": result.unchanged}, status=201)


@csrf_exempt
@require_POST
def usage_api(request: HttpRequest) -> HttpResponse:
    if _bearer_ok(request):
        return _import(request, actor=None)
    user = request.user
    if not user.is_authenticated:
        return _errors(
            [{"row": 0, "field": "auth", "message": _("Send the metering token.")}], status=401
        )
    if not user.is_staff:
        return _errors(
            [{"row": 0, "field": "auth", "message": _("Only staff may post usage.")}], status=403
        )
    return _staff_import(request)
