"""Contracts, their e-signatures and audit chain, standard-terms acceptances and the gate
to provisioning.

Re-exported by ``billing.models`` (Django sees these models as ``billing.*``).

- A ``Contract`` is drafted from an accepted quote for its order: drafted → signed by the
  customer → countersigned → active → ended (active ↔ suspended for dunning). A signed
  contract never changes; an amendment is a new contract whose ``amends`` is the old one.
- ``ContractAuditEntry`` is the chain of events: each entry's hash covers its content and
  the hash of the entry before, so a changed or removed entry breaks every later hash.
- ``SigningCode`` is the one-time code emailed to the signer: only its HMAC is stored; it
  is single use, expires, and counts failed attempts.
- ``TermsAcceptance``: a short self-service order accepts the versioned standard terms.
- ``ProvisioningRelease``: one row per order once it is paid *and* its contract signed
  (or terms accepted); its uniqueness makes the release idempotent.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation
from billing.models.orders import Order
from billing.models.quotes import Quote
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent, StoredDocument
from core.validators import no_emoji
from inventory.models import Site

__all__ = [
    "CONTRACT_SIGNED",
    "CONTRACT_TRANSITIONS",
    "AuditKind",
    "Contract",
    "ContractAuditEntry",
    "ContractDocument",
    "ContractDocumentKind",
    "ContractEvent",
    "ContractSignatory",
    "ContractStatus",
    "ProvisioningRelease",
    "SigningCode",
    "TermsAcceptance",
]


class ContractStatus(models.TextChoices):
    DRAFTED = "drafted", _("drafted")
    CUSTOMER_SIGNED = "customer_signed", _("signed by the customer")
    COUNTERSIGNED = "countersigned", _("countersigned")
    ACTIVE = "active", _("active")
    SUSPENDED = "suspended", _("suspended")
    ENDED = "ended", _("ended")
    CANCELLED = "cancelled", _("cancelled")


CONTRACT_TRANSITIONS: dict[str, frozenset[str]] = {
    ContractStatus.DRAFTED: frozenset({ContractStatus.CUSTOMER_SIGNED, ContractStatus.CANCELLED}),
    ContractStatus.CUSTOMER_SIGNED: frozenset(
        {ContractStatus.COUNTERSIGNED, ContractStatus.CANCELLED}
    ),
    ContractStatus.COUNTERSIGNED: frozenset({ContractStatus.ACTIVE, ContractStatus.ENDED}),
    ContractStatus.ACTIVE: frozenset({ContractStatus.SUSPENDED, ContractStatus.ENDED}),
    ContractStatus.SUSPENDED: frozenset({ContractStatus.ACTIVE, ContractStatus.ENDED}),
    ContractStatus.ENDED: frozenset(),
    ContractStatus.CANCELLED: frozenset(),
}
# Signed by both parties: the contract holds (the gate to provisioning opens).
CONTRACT_SIGNED = (
    ContractStatus.COUNTERSIGNED,
    ContractStatus.ACTIVE,
    ContractStatus.SUSPENDED,
    ContractStatus.ENDED,
)


class Contract(models.Model):
    number = models.CharField(_("number"), max_length=32, unique=True)
    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="contracts", verbose_name=_("order")
    )
    quote = models.ForeignKey(
        Quote, on_delete=models.PROTECT, related_name="contracts", verbose_name=_("quote")
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="contracts", verbose_name=_("customer")
    )
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="+", verbose_name=_("site")
    )
    amends = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="amendments",
        verbose_name=_("amends"),
    )
    language = models.CharField(_("language"), max_length=8, choices=settings.LANGUAGES)
    status = models.CharField(
        _("status"), max_length=20, choices=ContractStatus.choices, default=ContractStatus.DRAFTED
    )
    # The parties' details as they were when the contract was drafted (never re-read).
    parties = models.JSONField(_("parties"), default=dict)
    terms_version = models.CharField(_("terms version"), max_length=16)
    created_at = models.DateTimeField(_("drafted"), auto_now_add=True)
    # The customer's signature.
    signer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("signer"),
    )
    signer_name = models.CharField(
        _("signed by"), max_length=200, blank=True, validators=[no_emoji]
    )
    signer_title = models.CharField(_("title"), max_length=200, blank=True)
    signer_email = models.EmailField(_("signer's email"), blank=True)
    signed_at = models.DateTimeField(_("signed"), null=True, blank=True)
    signed_ip = models.GenericIPAddressField(_("from IP"), null=True, blank=True)
    signed_user_agent = models.CharField(_("browser"), max_length=400, blank=True)
    signed_sha256 = models.CharField(_("SHA-256 of the PDF signed"), max_length=64, blank=True)
    signed_code = models.ForeignKey(
        "billing.SigningCode",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("signing code used"),
    )
    # The provider's countersignature.
    countersigner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("countersigner"),
    )
    countersigned_at = models.DateTimeField(_("countersigned"), null=True, blank=True)
    # The provider's authorised signatory as printed on the seal, and the second
    # approver a contract above the approval threshold needs.
    countersigner_name = models.CharField(_("provider's signatory"), max_length=200, blank=True)
    countersigner_title = models.CharField(_("signatory's title"), max_length=200, blank=True)
    approver = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("second approver"),
    )
    # The file after the customer's signature (the draft plus their PAdES signature).
    customer_signed_sha256 = models.CharField(
        _("SHA-256 of the PDF with the customer's signature"), max_length=64, blank=True
    )
    final_sha256 = models.CharField(_("SHA-256 of the sealed PDF"), max_length=64, blank=True)
    # The emails "ready to sign" and "sealed contract attached", claimed once each.
    ready_emailed_at = models.DateTimeField(
        _("ready-to-sign email sent at"), null=True, blank=True, editable=False
    )
    sealed_emailed_at = models.DateTimeField(
        _("sealed-contract email sent at"), null=True, blank=True, editable=False
    )

    lifecycle = Lifecycle(
        choices=ContractStatus,
        transitions=CONTRACT_TRANSITIONS,
        event_model="billing.ContractEvent",
        subject_field="contract",
        describe=lambda c: gettext("Contract %(number)s") % {"number": c.number},
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("contract")
        verbose_name_plural = _("contracts")
        permissions = [("countersign_contract", _("Can countersign contracts for the provider"))]

    def __str__(self) -> str:
        return self.number

    @property
    def is_signed(self) -> bool:
        return self.status in CONTRACT_SIGNED


class ContractEvent(LifecycleEvent):
    contract = models.ForeignKey(
        Contract, on_delete=models.CASCADE, related_name="events", verbose_name=_("contract")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("contract event")
        verbose_name_plural = _("contract events")


class AuditKind(models.TextChoices):
    """The events of a contract's audit chain: the key is what the hash covers, the label
    what a page or PDF shows in the reader's language."""

    DRAFTED = "drafted", _("contract drafted")
    RENDERED = "rendered", _("PDF for signature made")
    CODE_SENT = "code_sent", _("one-time code sent")
    CODE_VERIFIED = "code_verified", _("one-time code verified")
    CUSTOMER_SIGNED = "customer_signed", _("signed by the customer")
    COUNTERSIGN_APPROVED = "countersign_approved", _("countersignature approved")
    COUNTERSIGNED = "countersigned", _("countersigned by the provider")
    SEALED = "sealed", _("sealed with the provider's seal")


class ContractAuditEntry(models.Model):
    """One link of the contract's audit chain (``hash`` covers ``prev_hash``)."""

    contract = models.ForeignKey(
        Contract, on_delete=models.CASCADE, related_name="audit", verbose_name=_("contract")
    )
    seq = models.PositiveIntegerField(verbose_name=_("sequence number"))
    at = models.DateTimeField(verbose_name=_("time"))
    kind = models.CharField(max_length=32, verbose_name=_("kind"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("actor"),
    )
    detail = models.JSONField(default=dict, verbose_name=_("detail"))
    prev_hash = models.CharField(max_length=64, verbose_name=_("previous hash"))
    hash = models.CharField(max_length=64, verbose_name=_("hash"))

    class Meta:
        verbose_name = _("contract audit entry")
        verbose_name_plural = _("contract audit entries")
        ordering = ["contract", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["contract", "seq"], name="contractaudit_unique_seq")
        ]

    def __str__(self) -> str:
        return f"{self.contract_id}#{self.seq} {self.kind}"

    @property
    def kind_label(self) -> str:
        """The event in the active language (the stored key when it is not a known one)."""
        return str(AuditKind(self.kind).label) if self.kind in AuditKind.values else self.kind


class ContractDocumentKind(models.TextChoices):
    DRAFT = "draft", _("for signature")
    SIGNED = "signed", _("signed by the customer")
    SEALED = "sealed", _("signed and sealed")
    AUDIT = "audit", _("audit record")


class ContractSignatory(models.Model):
    """A staff user authorised to countersign for a seller entity (all sellers when
    empty): the name and title printed on the seal. The user also needs the
    ``billing.countersign_contract`` permission."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="contract_signatory",
        verbose_name=_("user"),
    )
    seller = models.ForeignKey(
        "billing.SellerEntity",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="signatories",
        verbose_name=_("seller entity"),
    )
    name = models.CharField(_("full name"), max_length=200)
    name_zh = models.CharField(_("full name (Chinese)"), max_length=200, blank=True)
    title = models.CharField(_("title"), max_length=200)
    title_zh = models.CharField(_("title (Chinese)"), max_length=200, blank=True)
    active = models.BooleanField(_("active"), default=True)

    class Meta:
        verbose_name = _("authorised signatory")
        verbose_name_plural = _("authorised signatories")

    def __str__(self) -> str:
        return f"{self.name}, {self.title}"

    def localized(self, language: str) -> tuple[str, str]:
        """(name, title) as printed in a document of ``language``."""
        zh = language.lower().startswith("zh")
        return (
            (self.name_zh if zh else "") or self.name,
            (self.title_zh if zh else "") or self.title,
        )


class ContractDocument(StoredDocument):
    """A contract's PDF: the draft the customer signs, then the sealed final one."""

    contract = models.ForeignKey(
        Contract, on_delete=models.CASCADE, related_name="documents", verbose_name=_("contract")
    )
    kind = models.CharField(
        max_length=8, choices=ContractDocumentKind.choices, verbose_name=_("kind")
    )
    file = models.FileField(upload_to="contracts/%Y/", verbose_name=_("file"))

    class Meta:
        verbose_name = _("contract document")
        verbose_name_plural = _("contract documents")
        constraints = [
            models.UniqueConstraint(
                fields=["contract", "kind", "language"], name="contractdoc_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.contract} {self.kind} [{self.language}] {self.sha256[:12]}"


class SigningCode(models.Model):
    """A one-time code emailed to the signer; only its keyed hash is stored."""

    contract = models.ForeignKey(
        Contract, on_delete=models.CASCADE, related_name="codes", verbose_name=_("contract")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("user")
    )
    email = models.EmailField(verbose_name=_("email"))
    code_hash = models.CharField(max_length=64, verbose_name=_("code hash"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    attempts = models.PositiveSmallIntegerField(default=0, verbose_name=_("attempts"))
    used_at = models.DateTimeField(null=True, blank=True, verbose_name=_("used at"))

    class Meta:
        verbose_name = _("signing code")
        verbose_name_plural = _("signing codes")
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.contract_id} → {self.email}"


class TermsAcceptance(models.Model):
    """A short self-service order's acceptance of the versioned standard terms."""

    order = models.OneToOneField(
        Order, on_delete=models.CASCADE, related_name="terms_acceptance", verbose_name=_("order")
    )
    version = models.CharField(_("terms version"), max_length=16)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("user")
    )
    name = models.CharField(_("name"), max_length=200)
    accepted_at = models.DateTimeField(_("accepted"))
    ip = models.GenericIPAddressField(null=True, blank=True, verbose_name=_("IP address"))

    class Meta:
        verbose_name = _("terms acceptance")
        verbose_name_plural = _("terms acceptances")

    def __str__(self) -> str:
        return f"{self.order_id} terms {self.version}"


class ProvisioningRelease(models.Model):
    """The order was paid and its contract signed (or terms accepted) at ``released_at``;
    its provisioning run starts at ``provision_at``: the rental's start minus the site's
    lead time, or at once when that is already past (empty on rows released before the
    field existed: at once). Until then its nodes may still be another customer's."""

    order = models.OneToOneField(
        Order,
        on_delete=models.CASCADE,
        related_name="provisioning_release",
        verbose_name=_("order"),
    )
    released_at = models.DateTimeField(verbose_name=_("released at"))
    provision_at = models.DateTimeField(_("provisioning begins"), null=True, blank=True)
    basis = models.CharField(max_length=200, verbose_name=_("basis"))

    class Meta:
        verbose_name = _("provisioning release")
        verbose_name_plural = _("provisioning releases")

    def __str__(self) -> str:
        return f"{self.order_id} released {self.released_at:%Y-%m-%d %H:%M}"
