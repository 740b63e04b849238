"""Django admin for customer organisations and who belongs to them."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from accounts.models import CustomerProfile, Invitation, Membership, Organisation


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
    list_display = (
        "name",
        "legal_name",
        "tax_id",
        "country",
        "billing_email",
        "auto_renew",
        "created_at",
    )
    list_filter = ("country", "auto_renew")
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


@admin.register(CustomerProfile)
class CustomerProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "email_verified_at", "created_at")
    list_select_related = ("user",)
    search_fields = ("user__username", "user__email")
    readonly_fields = ("created_at",)


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("email", "organisation", "role", "invited_by", "expires_at", "accepted_at")
    list_select_related = ("organisation", "invited_by")
    list_filter = ("role",)
    search_fields = ("email", "organisation__name")
    readonly_fields = ("token", "created_at", "accepted_at", "accepted_by")
    exclude = ("token",)
