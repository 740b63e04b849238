"""Contracts in the back office: read-only, with the staff countersignature as an action."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy, ngettext

from billing.contracts import services as contract_services
from billing.models import Contract, ContractAuditEntry, ContractEvent
from core.admin_base import LifecycleEventInline, ReadOnlyAdmin, ReadOnlyInline
from core.errors import DomainError, IllegalTransition


class ContractEventInline(LifecycleEventInline):
    model = ContractEvent


class ContractAuditInline(ReadOnlyInline):
    model = ContractAuditEntry
    fields = ("seq", "at", "kind", "actor", "detail", "hash")
    readonly_fields = fields
    show_change_link = False


@admin.register(Contract)
class ContractAdmin(ReadOnlyAdmin):
    list_display = (
        "number",
        "order",
        "organisation",
        "status",
        "signer_name",
        "signed_at",
        "countersigned_at",
    )
    list_filter = ("status", "site")
    search_fields = ("number", "order__number", "organisation__name")
    inlines = (ContractEventInline, ContractAuditInline)
    actions = ("countersign",)

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_countersign_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm(contract_services.COUNTERSIGN_PERMISSION))

    @admin.action(
        description=gettext_lazy("Countersign the selected contracts"),
        permissions=["countersign"],
    )
    def countersign(self, request: HttpRequest, queryset: QuerySet[Contract]) -> None:
        done = 0
        for contract in queryset:
            try:
                contract_services.contract_countersign(contract=contract, actor=request.user)
                done += 1
            except (DomainError, IllegalTransition) as exc:
                messages.error(request, f"{contract.number}: {exc.message}")
        if done:
            messages.success(
                request,
                ngettext(
                    "%(n)s contract countersigned; sealing follows.",
                    "%(n)s contracts countersigned; sealing follows.",
                    done,
                )
                % {"n": done},
            )
