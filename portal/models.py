"""Customer organisations and their members."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Organisation(models.Model):
    """A customer company: what quotes, orders, contracts and invoices belong to."""

    name = models.CharField(_("name"), max_length=200)
    legal_name = models.CharField(_("legal name"), max_length=200, blank=True)
    tax_id = models.CharField(
        _("tax ID"), max_length=64, blank=True, help_text=_("For the fapiao (统一社会信用代码).")
    )
    billing_address = models.TextField(_("billing address"), blank=True)
    country = models.CharField(_("country"), max_length=2, default="CN")
    billing_email = models.EmailField(_("billing email"), blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("organisation")
        verbose_name_plural = _("organisations")

    def __str__(self) -> str:
        return self.name


class MemberRole(models.TextChoices):
    OWNER = "owner", _("owner")
    MEMBER = "member", _("member")
    BILLING = "billing", _("billing")


class Membership(models.Model):
    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(
        _("role"), max_length=16, choices=MemberRole.choices, default=MemberRole.MEMBER
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(fields=["organisation", "user"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organisation} ({self.role})"
