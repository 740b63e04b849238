"""Django admin for customer organisations and who belongs to them."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from portal.models import Membership, Organisation


class MembershipInline(admin.TabularInline):
    model = Membership
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)
    autocomplete_fields = ("user",)
    extra = 0
    verbose_name_plural = gettext_lazy("members")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Membership]:
        return super().get_queryset(request).select_related("user")


@admin.register(Organisation)
class OrganisationAdmin(admin.ModelAdmin):
    list_display = ("name", "legal_name", "tax_id", "country", "billing_email", "created_at")
    list_filter = ("country",)
    search_fields = ("name", "legal_name", "tax_id")
    inlines = (MembershipInline,)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("organisation", "user", "role", "created_at")
    list_select_related = ("organisation", "user")
    list_filter = ("role",)
    search_fields = ("organisation__name", "user__username", "user__email")
    autocomplete_fields = ("organisation", "user")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Membership]:
        # ``str(membership)`` names the user and the organisation.
        return super().get_queryset(request).select_related("organisation", "user")
