"""The OpenAPI document and its pages (Swagger UI and Redoc from drf-spectacular-sidecar's
static files: nothing is fetched from a CDN)."""

from __future__ import annotations

from typing import Any

from django.utils import translation
from drf_spectacular.openapi import AutoSchema

from accounts.webhooks import EVENT_TYPES
from portal.api.examples import EXAMPLES


class PortalAutoSchema(AutoSchema):
    """Every operation answers problem details for its errors."""

    def get_tags(self) -> list[str]:
        family = getattr(self.view, "scope_family", None)
        return [family] if family else super().get_tags()


def _first_success(responses: dict[str, Any], status: str | None) -> tuple[str, dict[str, Any]]:
    if status is not None:
        return status, responses.get(status, {})
    code = next((c for c in responses if c.startswith("2")), "200")
    return code, responses.get(code, {})


# What a receiver runs to check ``Portal-Signature`` (the README shows the same code; a
# test runs both against real signatures).
RECEIVER_EXAMPLE = """\
import hashlib, hmac, time


def verify(secret: str, header: str, body: bytes, tolerance: int = 300) -> bool:
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    t = next((v for k, v in parts if k == "t"), "")
    if not t.isdigit() or abs(time.time() - int(t)) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return any(k == "v1" and hmac.compare_digest(expected, v) for k, v in parts)
"""


def _in(language: str, text: object) -> str:
    with translation.override(language):
        return str(text)


def attach_examples(result: dict[str, Any], generator: Any, request: Any, public: bool) -> Any:
    """drf-spectacular postprocessing hook: every operation's example from
    ``portal.api.examples`` (its request body and its answer), and the webhook event types
    (``accounts.webhooks.EVENT_TYPES``, the one registry) in the description."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            example = EXAMPLES.get(operation.get("operationId", ""))
            if example is None:
                continue
            summary = example.get("summary", "Example")
            if "request" in example:
                for media in operation.get("requestBody", {}).get("content", {}).values():
                    media.setdefault("examples", {})["example"] = {
                        "summary": summary,
                        "value": example["request"],
                    }
            code, response = _first_success(operation.get("responses", {}), example.get("status"))
            if "response" in example:
                for name, media in response.get("content", {}).items():
                    if name.endswith("json"):
                        media.setdefault("examples", {})["example"] = {
                            "summary": summary,
                            "value": example["response"],
                        }
            elif code == "204":
                response.setdefault("description", "No content")
    info = result.setdefault("info", {})
    rows = "\n".join(
        f"| `{code}` | {_in('en', label)} | {_in('zh-hans', label)} |"
        for code, label in EVENT_TYPES.items()
    )
    info["description"] = (
        info.get("description", "")
        + "\n\n## Webhook event types / Webhook 事件类型\n\n"
        + "Subscribe an endpoint to any of these (`POST /api/v1/webhook-endpoints/`); "
        + "`GET /api/v1/webhook-event-types/` lists them too. / 端点可订阅以下事件。\n\n"
        + "| type / 类型 | when | 何时 |\n| --- | --- | --- |\n"
        + rows
        + "\n\n## Verifying a delivery / 验证投递签名\n\n"
        + "Each delivery is a POST with `Portal-Signature: t=<unix>,v1=<hex>`: HMAC-SHA256 of "
        + '`"<t>." + body` with the endpoint\'s secret (a second `v1` during a rotation). '
        + "Check it on the raw body, then deduplicate by the body's `id`. / "
        + "用端点密钥对 `<t>.` 加原始请求体计算 HMAC-SHA256 并比对，再按 `id` 去重。\n\n"
        + "```python\n"
        + RECEIVER_EXAMPLE
        + "```\n"
    )
    return result
