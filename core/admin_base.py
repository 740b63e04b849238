"""Admin building blocks shared by the apps."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.errors import DomainError
from core.timezones import tz_label


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, never added, changed or deleted here (history, or written by services)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class DomainErrorMessagesMixin:
    """A service that refuses a save (``DomainError``) rolls it back; the admin shows the
    reason as a message on the same page instead of a server error."""

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)  # type: ignore[misc]
        except DomainError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(request.get_full_path())


class EventStatusFilter(admin.SimpleListFilter):
    """Filter lifecycle events by the status they moved to, by its translated label."""

    title = gettext_lazy("to")
    parameter_name = "to_status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(value, str(label)) for value, label in model_admin.model.status_choices()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(to_status=value) if value else queryset


def _follow(obj: Any, path: str) -> Any:
    for part in path.split("__"):
        obj = getattr(obj, part, None) if obj is not None else None
    return obj


def _site_time_column(name: str, label: Any, site_path: str) -> Any:
    def column(obj: Any) -> str:
        value = getattr(obj, name)
        site = _follow(obj, site_path)
        if value is None:
            return "—"
        if site is None:
            return f"{timezone.localtime(value):%Y-%m-%d %H:%M}"
        local = value.astimezone(site.tzinfo)
        return f"{local:%Y-%m-%d %H:%M} ({tz_label(site.timezone, value)})"

    column.short_description = label  # type: ignore[attr-defined]
    column.admin_order_field = name  # type: ignore[attr-defined]
    column.__name__ = f"{name}_site_time"
    return column


class SiteTimeZoneMixin:
    """Times of site-bound objects in their site's time zone, labelled with it.

    ``site_path`` reaches the site from the object (``"site"``, ``"node__site"``,
    ``"order__site"``); ``site_time_fields`` are the list's datetime columns. The change
    list shows each row's times in its own site's zone; the change page is rendered in
    the object's site zone and says which one.
    """

    site_path: str = "site"
    site_time_fields: tuple[str, ...] = ()

    def get_list_display(self, request: HttpRequest) -> Any:
        columns = super().get_list_display(request)  # type: ignore[misc]
        model = self.model  # type: ignore[attr-defined]
        return [
            _site_time_column(c, model._meta.get_field(c).verbose_name, self.site_path)
            if isinstance(c, str) and c in self.site_time_fields
            else c
            for c in columns
        ]

    def get_list_select_related(self, request: HttpRequest) -> Any:
        related = super().get_list_select_related(request)  # type: ignore[misc]
        if related is True or related is False:
            return related
        return (*related, self.site_path)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)  # type: ignore[attr-defined]
        site = _follow(obj, self.site_path) if obj is not None else None
        if site is None:
            return super().change_view(request, object_id, form_url, extra_context)  # type: ignore[misc]
        extra_context = {
            **(extra_context or {}),
            "subtitle": _("%(object)s · times in %(zone)s (%(site)s)")
            % {"object": obj, "zone": tz_label(site.timezone), "site": site.display_name},
        }
        with timezone.override(site.tzinfo):
            response = super().change_view(request, object_id, form_url, extra_context)  # type: ignore[misc]
            if hasattr(response, "render") and not getattr(response, "is_rendered", True):
                response.render()
        return response


class LifecycleEventInline(ReadOnlyInline):
    """A lifecycle's event rows (``core.models.LifecycleEvent``) on its subject's page:
    when, from, to, who and why. Subclasses name the ``model``."""

    fields = ("created_at", "from_label", "to_label", "actor", "why")
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = gettext_lazy("status history")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).select_related("actor")
