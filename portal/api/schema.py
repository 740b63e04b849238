"""The OpenAPI document and its pages (Swagger UI and Redoc from drf-spectacular-sidecar's
static files: nothing is fetched from a CDN)."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema


class PortalAutoSchema(AutoSchema):
    """Every operation answers problem details for its errors."""

    def get_tags(self) -> list[str]:
        family = getattr(self.view, "scope_family", None)
        return [family] if family else super().get_tags()
