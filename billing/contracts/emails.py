"""The contract's emails, in the contract's language (the customer's, from their quote),
through the outbox: "ready to sign" to the members who may sign, and "sealed contract
attached" with the sealed PDF and its audit record. Each claims its ``*_emailed_at``
first, so a retry or a second worker sends nothing; a failed send gives the claim back."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation

from accounts.models import MemberRole, Membership
from billing.contracts import documents as contract_documents
from billing.models import Contract, ContractStatus

SIGNER_ROLES = (MemberRole.OWNER, MemberRole.BILLING)


def signer_addresses(contract: Contract) -> list[str]:
    """The owners and billing members of the customer, and the quote's contact."""
    found = list(
        Membership.objects.filter(organisation=contract.organisation, role__in=SIGNER_ROLES)
        .select_related("user")
        .values_list("user__email", flat=True)
    )
    found.append(contract.quote.contact_email)
    return list(dict.fromkeys(a for a in found if a))


def _send(contract: Contract, *, field: str, template: str, attachments: list) -> str:
    to = signer_addresses(contract)
    if not to:
        return "skipped"
    with translation.override(contract.language):
        context = {
            "contract": contract,
            "link": settings.PORTAL_BASE_URL
            + reverse("dashboard_contract", args=[contract.order.number]),
            "verify_link": settings.PORTAL_BASE_URL + reverse("contract_verify"),
        }
        subject = render_to_string(f"email/{template}_subject.txt", context).strip()
        body = render_to_string(f"email/{template}.txt", context)
    message = EmailMessage(subject=subject, body=body, to=to)
    for name, data in attachments:
        message.attach(name, data, "application/pdf")
    claimed = Contract.objects.filter(pk=contract.pk, **{f"{field}__isnull": True}).update(
        **{field: timezone.now()}
    )
    if not claimed:
        return "skipped"
    try:
        message.send()
    except Exception:
        Contract.objects.filter(pk=contract.pk).update(**{field: None})
        raise
    return "sent"


def contract_ready_email_send(*, contract_id: int) -> str:
    """ "Your contract is ready to sign", once, while it is open for signature."""
    contract = Contract.objects.select_related("order", "quote", "organisation").get(pk=contract_id)
    if contract.status != ContractStatus.DRAFTED or contract.ready_emailed_at:
        return "skipped"
    return _send(contract, field="ready_emailed_at", template="contract_ready", attachments=[])


def contract_sealed_email_send(*, contract_id: int) -> str:
    """The sealed contract (and its audit record once made) attached, once."""
    contract = Contract.objects.select_related("order", "quote", "organisation").get(pk=contract_id)
    if not contract.final_sha256 or contract.sealed_emailed_at:
        return "skipped"
    sealed = contract_documents.SEALED.stored(contract)
    if sealed is None:
        return "skipped"
    audit = contract_documents.AUDIT.document(contract)
    files = []
    for doc, suffix in ((sealed, "signed"), (audit, "audit")):
        with doc.file.open("rb") as fh:
            files.append((f"{contract.number}-{suffix}.pdf", fh.read()))
    return _send(contract, field="sealed_emailed_at", template="contract_sealed", attachments=files)
