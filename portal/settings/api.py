"""The customer API (``/api/v1/``, ``portal.api``) and outgoing webhooks (``accounts.webhooks``)."""

from portal.settings.base import env

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["portal.api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["portal.api.auth.HasScope"],
    "DEFAULT_THROTTLE_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "portal.api.schema.PortalAutoSchema",
    "DEFAULT_PAGINATION_CLASS": "portal.api.pagination.Cursor",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "portal.api.problems.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "COERCE_DECIMAL_TO_STRING": True,
    "DATETIME_FORMAT": "iso-8601",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU portal API",
    "DESCRIPTION": (
        "Everything a customer does on the portal, for machines. / "
        "门户的全部客户功能，供程序调用。\n\n"
        "Authenticate with `Authorization: Bearer gpk_…` (an API key from the dashboard). "
        "Every POST takes an `Idempotency-Key`. Errors are RFC 9457 problem details "
        "(`application/problem+json`) in the request's `Accept-Language` (en, zh-Hans)."
    ),
    "VERSION": "1.0.0",
    # 3.1 for its ``webhooks``: every outgoing event's body, with an example.
    "OAS_VERSION": "3.1.0",
    "WEBHOOKS": "portal.api.webhook_payloads.WEBHOOKS",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.attach_examples",
    ],
    "APPEND_COMPONENTS": {
        "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "bearerFormat": "gpk_…"}}
    },
    "SECURITY": [{"apiKey": []}],
    "AUTHENTICATION_WHITELIST": [],
    "ENUM_NAME_OVERRIDES": {
        "QuoteStatusEnum": "billing.models.QuoteStatus",
        "OrderStatusEnum": "billing.models.OrderStatus",
        "InvoiceStatusEnum": "billing.models.InvoiceStatus",
        "ContractStatusEnum": "billing.models.ContractStatus",
        "WebhookDeliveryStatusEnum": "accounts.models.WebhookDeliveryStatus",
    },
}

# Requests per key per window (IETF RateLimit headers; 429 with Retry-After past it).
PORTAL_API_RATE_LIMIT = env.int("PORTAL_API_RATE_LIMIT", default=600)
PORTAL_API_RATE_WINDOW = env.int("PORTAL_API_RATE_WINDOW", default=60)
# How long an Idempotency-Key's first answer is replayed (hours).
PORTAL_API_IDEMPOTENCY_HOURS = env.int("PORTAL_API_IDEMPOTENCY_HOURS", default=24)

# Outgoing webhooks: per-request timeout, retries after the first try, first backoff (s,
# doubling each retry, at most an hour).
PORTAL_WEBHOOK_TIMEOUT = env.float("PORTAL_WEBHOOK_TIMEOUT", default=10.0)
PORTAL_WEBHOOK_MAX_RETRIES = env.int("PORTAL_WEBHOOK_MAX_RETRIES", default=8)
PORTAL_WEBHOOK_RETRY_BASE = env.float("PORTAL_WEBHOOK_RETRY_BASE", default=30.0)
