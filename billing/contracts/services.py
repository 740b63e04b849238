"""Contracts: drafted from an accepted quote, signed by the customer with a one-time code,
countersigned by staff, sealed with the provider's PAdES signature.

The customer's signature (电子签名法 Art. 13, as agreed in the contract's signing clause):
an authorised member (owner or billing role) signs the exact PDF shown (its SHA-256), types
their full name and title, ticks the consent box and enters the one-time code emailed to
them. Time, IP, browser and the code's verification are recorded in the audit chain, each
entry hashing the previous one.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.models import MemberRole, Membership, Organisation, legal_entity_missing
from billing.contracts import documents as contract_documents
from billing.contracts import signatures
from billing.contracts.chain import GENESIS, entry_hash
from billing.contracts.gate import needs_contract, order_release_for_provisioning
from billing.documents.common import provider, seller_for
from billing.documents.numbers import next_number
from billing.models import (
    AuditKind,
    Contract,
    ContractAuditEntry,
    ContractDocument,
    ContractDocumentKind,
    ContractSignatory,
    ContractStatus,
    Order,
    OrderStatus,
    SigningCode,
)
from billing.pricing.periods import site_today
from core import jobs, lifecycle, outbox
from core.errors import DomainError
from core.texts import Text
from core.types import Actor
from core.validators import name_check

logger = logging.getLogger(__name__)

SIGNERS = (MemberRole.OWNER, MemberRole.BILLING)
READY_EMAIL_TASK = "billing.tasks.contract_ready_email"
SEALED_EMAIL_TASK = "billing.tasks.contract_sealed_email"
CODE_TTL = timedelta(minutes=10)
CODE_MAX_ATTEMPTS = 5
# A fresh code at most once a minute per signer, and at most this many per contract and
# hour (each is an email, and each fresh code is another five guesses).
CODE_RESEND_COOLDOWN = timedelta(seconds=60)
CODES_PER_CONTRACT_HOUR = 5


# --- The audit chain --------------------------------------------------------------------


def audit_append(
    *, contract: Contract, kind: str, actor: Actor = None, **detail: Any
) -> ContractAuditEntry:
    """Append one entry to the chain (the caller holds the contract's row lock)."""
    kind = str(kind)  # an ``AuditKind``: its key is what the hash covers
    last = contract.audit.order_by("-seq").first()
    seq = (last.seq + 1) if last else 1
    prev = last.hash if last else GENESIS
    at = timezone.now()
    actor_id = getattr(actor, "pk", None)
    return ContractAuditEntry.objects.create(
        contract=contract,
        seq=seq,
        at=at,
        kind=kind,
        actor_id=actor_id,
        detail=detail,
        prev_hash=prev,
        hash=entry_hash(
            prev_hash=prev, seq=seq, at=at.isoformat(), kind=kind, actor=actor_id, detail=detail
        ),
    )


def audit_first_break(contract: Contract) -> ContractAuditEntry | None:
    """The first entry whose hash does not match its content and the entry before (an
    entry changed, or one before it removed); ``None`` when the chain is intact."""
    prev = GENESIS
    for e in contract.audit.order_by("seq"):
        expected = entry_hash(
            prev_hash=prev,
            seq=e.seq,
            at=e.at.isoformat(),
            kind=e.kind,
            actor=e.actor_id,
            detail=e.detail,
        )
        if e.prev_hash != prev or e.hash != expected:
            return e
        prev = e.hash
    return None


def audit_verify(contract: Contract) -> bool:
    """Whether every entry's hash matches its content and the entry before."""
    return audit_first_break(contract) is None


# --- Drafting ---------------------------------------------------------------------------


class LegalEntityMissing(DomainError):
    """A contract cannot name the customer: its legal name, registration number or
    registered address is not on file (``Organisation.legal_entity_missing``)."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(legal_entity_message(missing))


def legal_entity_message(missing: list[str]) -> str:
    """What the customer reads when the contract waits for the organisation's details."""
    return _(
        "The contract must name your organisation's legal entity: add its %(missing)s in "
        "the organisation's profile first."
    ) % {"missing": _(", ").join(missing)}


def parties_missing(contract: Contract) -> list[str]:
    """What the contract's customer party lacks (a contract drafted before the legal
    entity was required)."""
    customer = contract.parties.get("customer", {})
    return legal_entity_missing(
        legal_name=str(customer.get("legal_name", "")),
        country=str(customer.get("country", "")),
        tax_id=str(customer.get("tax_id", "")),
        address=str(customer.get("address", "")),
    )


def _parties(order: Order) -> dict[str, Any]:
    org = order.organisation
    return {
        "customer": {
            "name": org.name,
            "legal_name": org.legal_name,
            "tax_id": org.tax_id,
            "address": org.billing_address,
            "country": org.country,
            "email": org.billing_email or order.quote.contact_email,
            "contact": order.quote.contact_name,
        }
    }


def contract_draft(
    *, order: Order, actor: Actor = None, amends: Contract | None = None
) -> Contract:
    """Draft the contract of an order from its accepted quote (or an amendment of a signed
    contract); its PDF is rendered on the documents queue."""
    if amends is not None and not amends.is_signed:
        raise DomainError(_("Only a signed contract can be amended."))
    existing = order.contracts.filter(amends=amends).exclude(status=ContractStatus.CANCELLED)
    if amends is None and existing.exists():
        return existing.first()
    missing = order.organisation.legal_entity_missing()
    if missing:
        raise LegalEntityMissing(missing)
    quote = order.quote
    contract = Contract.objects.create(
        number=next_number(kind="C", site=order.site, year=site_today(order.site).year),
        order=order,
        quote=quote,
        organisation=order.organisation,
        site=order.site,
        amends=amends,
        language=quote.language,
        parties=_parties(order),
        terms_version=settings.PORTAL_TERMS_VERSION,
    )
    reason = (
        Text("Drafted from quote %(n)s v%(v)s.", n=quote.number, v=quote.version)
        if amends is None
        else Text("Amendment of contract %(n)s.", n=amends.number)
    )
    lifecycle.record_creation([contract], actor=actor, reason=reason)
    audit_append(
        contract=contract,
        kind=AuditKind.DRAFTED,
        actor=actor,
        quote=f"{quote.number} v{quote.version}",
        order=order.number,
        amends=amends.number if amends else "",
    )
    contract_documents.DRAFT.ask(contract)
    return contract


def contract_draft_if_needed(*, order: Order, actor: Actor = None) -> Contract | None:
    """Called when an order is created: a contract for sales quotes and long terms. When
    the organisation's legal entity is not on file yet, the order keeps its hold and the
    contract waits (``contracts_draft_waiting`` drafts it once the details are saved)."""
    if not needs_contract(order.quote):
        return None
    try:
        return contract_draft(order=order, actor=actor)
    except LegalEntityMissing:
        lifecycle.record_note(
            [order],
            actor=actor,
            reason=Text(
                "The contract is drafted once the organisation's legal name, registration "
                "number and registered address are on file."
            ),
        )
        return None


#: Orders whose contract may still be drafted (before payment, or paid and not released).
DRAFTABLE_ORDER_STATUSES = (OrderStatus.AWAITING_PAYMENT, OrderStatus.PAID)


def contracts_draft_waiting(*, organisation: Organisation, actor: Actor = None) -> list[Contract]:
    """Draft the contracts that waited for the organisation's legal entity (its live
    orders that need one and have none); nothing while details are still missing. An
    unsigned contract drafted without the entity (before it was required) is cancelled
    and drafted again, so that the PDF to sign names it. Safe to call any number of
    times."""
    if organisation.legal_entity_missing():
        return []
    drafted = []
    stale = Contract.objects.filter(
        organisation=organisation,
        status=ContractStatus.DRAFTED,
        amends__isnull=True,
        order__status__in=DRAFTABLE_ORDER_STATUSES,
    )
    for contract in stale:
        if parties_missing(contract):
            lifecycle.transition(
                contract,
                to=ContractStatus.CANCELLED,
                actor=actor,
                reason=Text("Drafted again with the organisation's legal entity."),
            )
    orders = (
        Order.objects.filter(organisation=organisation, status__in=DRAFTABLE_ORDER_STATUSES)
        .exclude(contracts__status__in=[s for s in ContractStatus if s != ContractStatus.CANCELLED])
        .select_related("quote__created_by", "organisation", "site")
    )
    for order in orders:
        if needs_contract(order.quote):
            drafted.append(contract_draft(order=order, actor=actor))
    return drafted


def contract_document_rendered(*, contract: Contract, document: ContractDocument) -> None:
    """Record the draft PDF's hash in the chain once."""
    with transaction.atomic():
        contract = Contract.objects.select_for_update().get(pk=contract.pk)
        if contract.audit.filter(kind=AuditKind.RENDERED, detail__sha256=document.sha256).exists():
            return
        audit_append(
            contract=contract,
            kind=AuditKind.RENDERED,
            language=document.language,
            sha256=document.sha256,
        )
        if contract.status == ContractStatus.DRAFTED:
            jobs.enqueue(READY_EMAIL_TASK, contract.pk)


# --- The customer's signature -----------------------------------------------------------


def _check_signer(contract: Contract, user: Actor) -> None:
    if user is None or not user.is_authenticated:
        raise DomainError(_("Log in to sign."))
    missing = parties_missing(contract)
    if missing:
        raise LegalEntityMissing(missing)
    ok = Membership.objects.filter(
        user=user, organisation=contract.organisation, role__in=SIGNERS
    ).exists()
    if not ok:
        raise DomainError(_("Only an owner or a billing member of the customer may sign."))


def _code_hash(code_id: int, code: str) -> str:
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, f"contract-code:{code_id}:{code}".encode(), hashlib.sha256).hexdigest()


def signing_code_issue(*, contract: Contract, user: Actor) -> tuple[SigningCode, str]:
    """A fresh one-time code for the signer (earlier open codes stop working); returns the
    row (only the code's keyed hash is stored) and the code itself, for the email."""
    _check_signer(contract, user)
    if contract.status != ContractStatus.DRAFTED:
        raise DomainError(_("This contract is no longer open for signature."))
    code = f"{secrets.randbelow(10**6):06d}"
    with transaction.atomic():
        contract = Contract.objects.select_for_update().get(pk=contract.pk)
        now = timezone.now()
        last = (
            SigningCode.objects.filter(contract=contract, user=user)
            .order_by("-created_at", "-pk")
            .first()
        )
        if last is not None and last.created_at > now - CODE_RESEND_COOLDOWN:
            wait = int((last.created_at + CODE_RESEND_COOLDOWN - now).total_seconds()) + 1
            raise DomainError(
                ngettext(
                    "A code was just sent: ask for another one in %(n)s second.",
                    "A code was just sent: ask for another one in %(n)s seconds.",
                    wait,
                )
                % {"n": wait}
            )
        recent = SigningCode.objects.filter(
            contract=contract, created_at__gt=now - timedelta(hours=1)
        ).count()
        if recent >= CODES_PER_CONTRACT_HOUR:
            raise DomainError(
                _(
                    "%(n)s codes were sent for this contract in the last hour: ask for "
                    "another one later, or write to us."
                )
                % {"n": recent}
            )
        SigningCode.objects.filter(contract=contract, used_at__isnull=True).update(
            expires_at=timezone.now()
        )
        row = SigningCode.objects.create(
            contract=contract,
            user=user,
            email=user.email,
            code_hash="",
            expires_at=timezone.now() + CODE_TTL,
        )
        row.code_hash = _code_hash(row.pk, code)
        row.save(update_fields=["code_hash"])
        audit_append(contract=contract, kind=AuditKind.CODE_SENT, actor=user, email=user.email)
    return row, code


def signing_code_send(*, contract: Contract, user: Actor) -> SigningCode:
    """Email a fresh one-time code to the signer."""
    row, code = signing_code_issue(contract=contract, user=user)
    send_mail(
        _("Your signing code for contract %(n)s") % {"n": contract.number},
        ngettext(
            "Your one-time code to sign contract %(n)s is %(code)s. It expires in "
            "%(minutes)s minute and works once. If you did not ask for it, ignore this email.",
            "Your one-time code to sign contract %(n)s is %(code)s. It expires in "
            "%(minutes)s minutes and works once. If you did not ask for it, ignore this email.",
            int(CODE_TTL.total_seconds() // 60),
        )
        % {"n": contract.number, "code": code, "minutes": int(CODE_TTL.total_seconds() // 60)},
        None,
        [row.email],
    )
    return row


def _verify_code(contract: Contract, user: Actor, code: str) -> SigningCode | str:
    """Check the latest open code of this signer and count the attempt (saved even when
    the code is wrong); returns the code's row, or why it failed. The signature marks it
    used (single use) in the same transaction as the signature itself."""
    now = timezone.now()
    row = (
        SigningCode.objects.select_for_update()
        .filter(contract=contract, user=user, used_at__isnull=True)
        .order_by("-created_at", "-pk")
        .first()
    )
    if row is None and not SigningCode.objects.filter(contract=contract, user=user).exists():
        return _(
            "No code has been sent to you for this contract yet: press “Email me a one-time "
            "code”, then type the 6 digits from the email."
        )
    if row is None or row.expires_at <= now:
        return _("The code has expired or was used: ask for a new one.")
    if row.attempts >= CODE_MAX_ATTEMPTS:
        return _("Too many wrong codes: ask for a new one.")
    row.attempts += 1
    row.save(update_fields=["attempts"])
    if not hmac.compare_digest(row.code_hash, _code_hash(row.pk, code.strip())):
        return _("The code is not right.")
    return row


@dataclass(frozen=True)
class _SignerInput:
    """What the signer typed, checked: name, title and the request's IP (or None)."""

    full_name: str
    title: str
    ip: str | None


def _signer_input(*, full_name: str, title: str, consent: bool, ip: str | None) -> _SignerInput:
    """Step 1: the typed name and title, the consent box and the IP, checked."""
    full_name, title = full_name.strip(), title.strip()
    if not full_name or not title:
        raise DomainError(_("Type your full name and your title."))
    if len(full_name) > 200 or len(title) > 200:
        raise DomainError(_("Name and title can be at most 200 characters each."))
    full_name = name_check(full_name, max_length=200, label=_("Your name"))
    if not consent:
        raise DomainError(_("Tick the box to agree to sign electronically."))
    try:
        ip = str(ipaddress.ip_address(ip)) if ip else None
    except ValueError:
        ip = None
    return _SignerInput(full_name=full_name, title=title, ip=ip)


def _lock_open(contract: Contract) -> Contract:
    locked = Contract.objects.select_for_update().get(pk=contract.pk)
    if locked.status != ContractStatus.DRAFTED:
        raise DomainError(_("This contract is no longer open for signature."))
    return locked


def _shown_document_and_code(
    *, contract: Contract, user: Actor, code: str, pdf_sha256: str
) -> tuple[ContractDocument, SigningCode]:
    """Step 2: the PDF the signer was shown (by its SHA-256) and their one-time code. The
    code check commits on its own: a wrong code counts even though signing fails."""
    with transaction.atomic():
        locked = _lock_open(contract)
        document = ContractDocument.objects.filter(
            contract=locked, kind=ContractDocumentKind.DRAFT, sha256=pdf_sha256
        ).first()
        if document is None:
            raise DomainError(
                _("The document you read is not the current contract: reload the page.")
            )
        code_row = _verify_code(locked, user, code)
    if isinstance(code_row, str):
        raise DomainError(code_row)
    return document, code_row


def _use_code(code_row: SigningCode, *, now: Any) -> SigningCode:
    """Mark the code used (single use), under its row lock."""
    code_row = SigningCode.objects.select_for_update().get(pk=code_row.pk)
    if code_row.used_at is not None:
        raise DomainError(_("The code has expired or was used: ask for a new one."))
    code_row.used_at = now
    code_row.save(update_fields=["used_at"])
    return code_row


def _customer_signature(
    *,
    contract: Contract,
    document: ContractDocument,
    user: Actor,
    signer: _SignerInput,
    code_row: SigningCode,
    now: Any,
) -> ContractDocument:
    """Step 3: the customer's PAdES signature on the very bytes they were shown, with a
    certificate the seller's signing CA issues now for this signature; stored."""
    with document.file.open("rb") as fh:
        shown = fh.read()
    evidence = signatures.SignerEvidence(
        name=signer.full_name,
        title=signer.title,
        email=user.email,
        organisation=str(contract.parties.get("customer", {}).get("legal_name", "")),
        user_id=user.pk,
        code_id=code_row.pk,
        ip=signer.ip or "",
        at=now,
        contract_number=contract.number,
    )
    try:
        signed_pdf = signatures.customer_sign(
            shown, seller=seller_for(contract.site), evidence=evidence
        )
    except signatures.SigningFailed as exc:
        logger.warning("contract %s: customer signature failed: %s", contract.number, exc)
        raise DomainError(
            _(
                "Your signature could not be applied just now (the timestamping "
                "service did not answer). Nothing was signed and your code still "
                "works: try again in a minute."
            )
        ) from exc
    return contract_documents.SIGNED.store(contract, language=document.language, data=signed_pdf)


def _record_customer_signature(
    *,
    contract: Contract,
    user: Actor,
    signer: _SignerInput,
    code_row: SigningCode,
    shown: ContractDocument,
    signed: ContractDocument,
    user_agent: str,
    now: Any,
) -> None:
    """Step 4: the audit chain's entries and the contract's move to customer-signed."""
    audit_append(
        contract=contract,
        kind=AuditKind.CODE_VERIFIED,
        actor=user,
        code=code_row.pk,
        email=code_row.email,
    )
    audit_append(
        contract=contract,
        kind=AuditKind.CUSTOMER_SIGNED,
        actor=user,
        name=signer.full_name,
        title=signer.title,
        email=user.email,
        ip=signer.ip or "",
        user_agent=user_agent[:400],
        pdf_sha256=shown.sha256,
        signed_pdf_sha256=signed.sha256,
        language=shown.language,
        consent=True,
    )
    lifecycle.transition(
        contract,
        to=ContractStatus.CUSTOMER_SIGNED,
        actor=user,
        reason=Text("Signed by %(name)s (%(title)s).", name=signer.full_name, title=signer.title),
        updates={
            "signer": user,
            "signer_name": signer.full_name,
            "signer_title": signer.title,
            "signer_email": user.email,
            "signed_at": now,
            "signed_ip": signer.ip,
            "signed_user_agent": user_agent[:400],
            "signed_sha256": shown.sha256,
            "signed_code": code_row,
            "customer_signed_sha256": signed.sha256,
        },
        locked=True,
    )


def contract_sign(
    *,
    contract: Contract,
    user: Actor,
    full_name: str,
    title: str,
    consent: bool,
    code: str,
    pdf_sha256: str,
    ip: str | None,
    user_agent: str,
) -> Contract:
    """The customer signs the exact PDF shown (``pdf_sha256``): the input is checked, the
    one-time code verified, the PAdES signature applied to the shown bytes and stored, and
    the audit chain and the contract's status recorded (each a step below)."""
    _check_signer(contract, user)
    signer = _signer_input(full_name=full_name, title=title, consent=consent, ip=ip)
    document, code_row = _shown_document_and_code(
        contract=contract, user=user, code=code, pdf_sha256=pdf_sha256
    )
    with transaction.atomic():
        locked = _lock_open(contract)
        now = timezone.now()
        code_row = _use_code(code_row, now=now)
        signed = _customer_signature(
            contract=locked, document=document, user=user, signer=signer, code_row=code_row, now=now
        )
        _record_customer_signature(
            contract=locked,
            user=user,
            signer=signer,
            code_row=code_row,
            shown=document,
            signed=signed,
            user_agent=user_agent,
            now=now,
        )
        return locked


# --- The provider's countersignature and seal -------------------------------------------

#: Who may countersign (the admin's action and this service check it).
COUNTERSIGN_PERMISSION = "billing.countersign_contract"


def contract_total(contract: Contract) -> Decimal:
    """What the contract is worth: the accepted quote's total with VAT."""
    return Decimal(contract.quote.gross_total)


def approval_threshold(currency: str) -> Decimal | None:
    """Above this total a second approver must confirm the countersignature (None: no
    threshold for the currency)."""
    value = settings.PORTAL_COUNTERSIGN_SECOND_APPROVAL_ABOVE.get(currency)
    return Decimal(str(value)) if value is not None else None


def needs_second_approval(contract: Contract) -> bool:
    threshold = approval_threshold(contract.quote.currency)
    return threshold is not None and contract_total(contract) > threshold


def signatory_for(*, user: Actor, contract: Contract) -> ContractSignatory | None:
    """The user's active signatory authority for the contract's seller, if any."""
    if user is None:
        return None
    seller = seller_for(contract.site)
    return (
        ContractSignatory.objects.filter(user=user, active=True)
        .filter(Q(seller__isnull=True) | Q(seller=seller))
        .first()
    )


@dataclass(frozen=True)
class CountersignOutcome:
    contract: Contract
    countersigned: bool  # False: approved, waiting for a second approver


def contract_countersign(*, contract: Contract, actor: Actor) -> CountersignOutcome:
    """The provider countersigns: an authorised signatory (``countersign_contract`` and a
    ``ContractSignatory`` for the seller) signs; above the approval threshold a second,
    different user with the permission must confirm before the seal is applied. The
    sealed PDF (the customer's signed file plus the seal) is made on the documents queue;
    a paid order is released for provisioning."""
    if actor is None or not actor.is_staff or not actor.has_perm(COUNTERSIGN_PERMISSION):
        raise DomainError(_("You are not authorised to countersign contracts."))
    with transaction.atomic():
        locked = (
            Contract.objects.select_for_update().select_related("quote", "site").get(pk=contract.pk)
        )
        if locked.status != ContractStatus.CUSTOMER_SIGNED:
            raise DomainError(_("Only a contract the customer has signed can be countersigned."))
        approvals = list(locked.audit.filter(kind=AuditKind.COUNTERSIGN_APPROVED).order_by("seq"))
        first = approvals[0] if approvals else None
        if first is None:
            authority = signatory_for(user=actor, contract=locked)
            if authority is None:
                raise DomainError(
                    _(
                        "You have no signatory authority for %(seller)s: an administrator "
                        "adds you under Authorised signatories."
                    )
                    % {"seller": provider("en", locked.site).name}
                )
            if needs_second_approval(locked):
                audit_append(
                    contract=locked,
                    kind=AuditKind.COUNTERSIGN_APPROVED,
                    actor=actor,
                    name=authority.name,
                    title=authority.title,
                    total=str(contract_total(locked)),
                    threshold=str(approval_threshold(locked.quote.currency)),
                )
                lifecycle.record_note(
                    [locked],
                    actor=actor,
                    reason=Text(
                        "Approved for countersignature by %(name)s; "
                        "a second approver must confirm.",
                        name=authority.name,
                    ),
                )
                return CountersignOutcome(locked, False)
            signatory_user, approver = actor, None
        else:
            if first.actor_id == getattr(actor, "pk", None):
                raise DomainError(
                    _("A second approver, not the signatory, must confirm this countersignature.")
                )
            authority = signatory_for(user=first.actor, contract=locked)
            if authority is None:
                raise DomainError(_("The signatory who approved no longer has authority."))
            signatory_user, approver = first.actor, actor
        now = timezone.now()
        name, title = authority.localized(locked.language)
        lifecycle.transition(
            locked,
            to=ContractStatus.COUNTERSIGNED,
            actor=actor,
            reason=Text("Countersigned by %(name)s (%(title)s).", name=name, title=title),
            updates={
                "countersigner": signatory_user,
                "countersigner_name": name,
                "countersigner_title": title,
                "approver": approver,
                "countersigned_at": now,
            },
            locked=True,
        )
        audit_append(
            contract=locked,
            kind=AuditKind.COUNTERSIGNED,
            actor=signatory_user,
            name=name,
            title=title,
            approver=approver.pk if approver else "",
            signed_sha256=locked.signed_sha256,
            customer_signed_sha256=locked.customer_signed_sha256,
        )
        contract_documents.SEALED.ask(locked)
    order_release_for_provisioning(order=locked.order, actor=actor)
    return CountersignOutcome(locked, True)


def contract_sealed(*, contract: Contract, document: ContractDocument) -> None:
    """Record the sealed PDF's hash on the contract and in the chain (once), ask for the
    audit record and email the sealed PDF to the customer."""
    with transaction.atomic():
        locked = Contract.objects.select_for_update().get(pk=contract.pk)
        if locked.final_sha256:
            return
        locked.final_sha256 = document.sha256
        locked.save(update_fields=["final_sha256"])
        audit_append(contract=locked, kind=AuditKind.SEALED, sha256=document.sha256)
        lifecycle.record_note(
            [locked],
            reason=Text("Sealed with the provider's signature (SHA-256 %(h)s).", h=document.sha256),
        )
        contract_documents.AUDIT.ask(locked)
        jobs.enqueue(SEALED_EMAIL_TASK, locked.pk)


#: A countersigned contract still unsealed this long after the countersignature (or
#: sealed without its audit record or email) is handed to the documents queue again.
SEAL_SWEEP_AFTER = timedelta(minutes=10)
SEALED_STATUSES = (
    ContractStatus.COUNTERSIGNED,
    ContractStatus.ACTIVE,
    ContractStatus.SUSPENDED,
    ContractStatus.ENDED,
)


@dataclass(frozen=True)
class SealSweep:
    seals: int  # sealing asked again (no sealed PDF recorded)
    audits: int  # the audit record asked again
    emails: int  # the "sealed contract" email asked again


def _ask_once(task: str, *args: Any) -> bool:
    if outbox.pending_like([(task, args)]):
        return False  # already waiting for the broker
    jobs.enqueue(task, *args)
    return True


def contracts_seal_sweep(*, now: Any = None, older_than: timedelta = SEAL_SWEEP_AFTER) -> SealSweep:
    """Beat: retry the seals that failed for good (the timestamping authority or the
    signing material was down past the task's retries, or a worker died mid-task), then
    the audit records and sealed-contract emails such a failure left out. Idempotent: the
    document tasks never make a document twice and the email is claimed once, and work
    already waiting in the outbox is not asked again."""
    now = now or timezone.now()
    cutoff = now - older_than
    countersigned = Contract.objects.filter(
        status__in=SEALED_STATUSES, countersigned_at__lte=cutoff
    ).prefetch_related("documents")
    seals = audits = emails = 0
    for contract in countersigned:
        language = contract_documents.SEALED.language(contract, None)
        if not contract.final_sha256:
            seals += _ask_once(contract_documents.SEAL_TASK, contract.pk, language)
            continue
        kinds = {d.kind for d in contract.documents.all() if d.language == language}
        if ContractDocumentKind.AUDIT not in kinds:
            audits += _ask_once(contract_documents.AUDIT_TASK, contract.pk, language)
        if contract.sealed_emailed_at is None:
            emails += _ask_once(SEALED_EMAIL_TASK, contract.pk)
    if seals or audits or emails:
        logger.warning(
            "contract seal sweep: %s seals, %s audit records, %s emails asked again",
            seals,
            audits,
            emails,
        )
    return SealSweep(seals=seals, audits=audits, emails=emails)


def contracts_activate_and_end(*, now: Any = None) -> int:
    """Countersigned contracts become active when the rental starts and end with it
    (beat; idempotent)."""
    now = now or timezone.now()
    moved = 0
    for c in Contract.objects.filter(
        status=ContractStatus.COUNTERSIGNED, order__start_at__lte=now
    ).select_related("order"):
        target = ContractStatus.ENDED if c.order.end_at <= now else ContractStatus.ACTIVE
        with transaction.atomic():
            locked = Contract.objects.select_for_update().get(pk=c.pk)
            if locked.status == ContractStatus.COUNTERSIGNED:
                lifecycle.transition(
                    locked, to=target, reason=Text("The rental period began."), locked=True
                )
                moved += 1
    for c in Contract.objects.filter(
        status__in=(ContractStatus.ACTIVE, ContractStatus.SUSPENDED), order__end_at__lte=now
    ):
        with transaction.atomic():
            locked = Contract.objects.select_for_update().get(pk=c.pk)
            if locked.status in (ContractStatus.ACTIVE, ContractStatus.SUSPENDED):
                lifecycle.transition(
                    locked, to=ContractStatus.ENDED, reason=Text("The rental ended."), locked=True
                )
                moved += 1
    return moved
