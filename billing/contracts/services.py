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
import json
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.models import MemberRole, Membership
from billing.contracts import documents as contract_documents
from billing.contracts.gate import needs_contract, order_release_for_provisioning
from billing.documents.numbers import next_number
from billing.models import (
    Contract,
    ContractAuditEntry,
    ContractDocument,
    ContractDocumentKind,
    ContractStatus,
    Order,
    SigningCode,
)
from billing.pricing.periods import site_today
from core import lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor
from core.validators import name_check

SIGNERS = (MemberRole.OWNER, MemberRole.BILLING)
CODE_TTL = timedelta(minutes=10)
CODE_MAX_ATTEMPTS = 5
GENESIS = "0" * 64


# --- The audit chain --------------------------------------------------------------------


def entry_hash(*, prev_hash: str, seq: int, at: str, kind: str, actor: Any, detail: dict) -> str:
    body = json.dumps(
        {"prev": prev_hash, "seq": seq, "at": at, "kind": kind, "actor": actor, "detail": detail},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(body.encode()).hexdigest()


def audit_append(
    *, contract: Contract, kind: str, actor: Actor = None, **detail: Any
) -> ContractAuditEntry:
    """Append one entry to the chain (the caller holds the contract's row lock)."""
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


def _parties(order: Order) -> dict[str, Any]:
    org = order.organisation
    return {
        "customer": {
            "name": org.name,
            "legal_name": org.legal_name or org.name,
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
        kind="drafted",
        actor=actor,
        quote=f"{quote.number} v{quote.version}",
        order=order.number,
        amends=amends.number if amends else "",
    )
    contract_documents.DRAFT.ask(contract)
    return contract


def contract_draft_if_needed(*, order: Order, actor: Actor = None) -> Contract | None:
    """Called when an order is created: a contract for sales quotes and long terms."""
    if not needs_contract(order.quote):
        return None
    return contract_draft(order=order, actor=actor)


def contract_document_rendered(*, contract: Contract, document: ContractDocument) -> None:
    """Record the draft PDF's hash in the chain once."""
    with transaction.atomic():
        contract = Contract.objects.select_for_update().get(pk=contract.pk)
        if contract.audit.filter(kind="rendered", detail__sha256=document.sha256).exists():
            return
        audit_append(
            contract=contract,
            kind="rendered",
            language=document.language,
            sha256=document.sha256,
        )


# --- The customer's signature -----------------------------------------------------------


def _check_signer(contract: Contract, user: Actor) -> None:
    if user is None or not user.is_authenticated:
        raise DomainError(_("Log in to sign."))
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
        audit_append(contract=contract, kind="code_sent", actor=user, email=user.email)
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
    the code is wrong); returns the used code's row, or why it failed. Single use."""
    now = timezone.now()
    row = (
        SigningCode.objects.select_for_update()
        .filter(contract=contract, user=user, used_at__isnull=True)
        .order_by("-created_at", "-pk")
        .first()
    )
    if row is None or row.expires_at <= now:
        return _("The code has expired or was used: ask for a new one.")
    if row.attempts >= CODE_MAX_ATTEMPTS:
        return _("Too many wrong codes: ask for a new one.")
    row.attempts += 1
    if not hmac.compare_digest(row.code_hash, _code_hash(row.pk, code.strip())):
        row.save(update_fields=["attempts"])
        return _("The code is not right.")
    row.used_at = now
    row.save(update_fields=["attempts", "used_at"])
    return row


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
    """The customer signs the exact PDF shown (``pdf_sha256``)."""
    _check_signer(contract, user)
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
    # The code check commits on its own: a wrong code counts even though signing fails.
    with transaction.atomic():
        locked = Contract.objects.select_for_update().get(pk=contract.pk)
        if locked.status != ContractStatus.DRAFTED:
            raise DomainError(_("This contract is no longer open for signature."))
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
    with transaction.atomic():
        locked = Contract.objects.select_for_update().get(pk=contract.pk)
        if locked.status != ContractStatus.DRAFTED:
            raise DomainError(_("This contract is no longer open for signature."))
        now = timezone.now()
        audit_append(
            contract=locked,
            kind="code_verified",
            actor=user,
            code=code_row.pk,
            email=code_row.email,
        )
        audit_append(
            contract=locked,
            kind="customer_signed",
            actor=user,
            name=full_name,
            title=title,
            email=user.email,
            ip=ip or "",
            user_agent=user_agent[:400],
            pdf_sha256=pdf_sha256,
            language=document.language,
            consent=True,
        )
        lifecycle.transition(
            locked,
            to=ContractStatus.CUSTOMER_SIGNED,
            actor=user,
            reason=Text("Signed by %(name)s (%(title)s).", name=full_name, title=title),
            updates={
                "signer": user,
                "signer_name": full_name,
                "signer_title": title,
                "signer_email": user.email,
                "signed_at": now,
                "signed_ip": ip,
                "signed_user_agent": user_agent[:400],
                "signed_sha256": pdf_sha256,
                "signed_code": code_row,
            },
            locked=True,
        )
        return locked


# --- The provider's countersignature and seal -------------------------------------------

#: Who may countersign (the admin's action and this service check it).
COUNTERSIGN_PERMISSION = "billing.countersign_contract"


def contract_countersign(*, contract: Contract, actor: Actor) -> Contract:
    """Staff countersign; the sealed PDF is made on the documents queue; a paid order is
    released for provisioning."""
    if actor is None or not actor.is_staff or not actor.has_perm(COUNTERSIGN_PERMISSION):
        raise DomainError(_("Only staff countersign contracts."))
    with transaction.atomic():
        locked = Contract.objects.select_for_update().get(pk=contract.pk)
        now = timezone.now()
        lifecycle.transition(
            locked,
            to=ContractStatus.COUNTERSIGNED,
            actor=actor,
            reason=Text("Countersigned."),
            updates={"countersigner": actor, "countersigned_at": now},
            locked=True,
        )
        audit_append(
            contract=locked,
            kind="countersigned",
            actor=actor,
            name=actor.get_full_name() or actor.get_username(),
            signed_sha256=locked.signed_sha256,
        )
        contract_documents.SEALED.ask(locked)
    order_release_for_provisioning(order=locked.order, actor=actor)
    return locked


def contract_sealed(*, contract: Contract, document: ContractDocument) -> None:
    """Record the sealed PDF's hash on the contract (once)."""
    with transaction.atomic():
        locked = Contract.objects.select_for_update().get(pk=contract.pk)
        if locked.final_sha256:
            return
        locked.final_sha256 = document.sha256
        locked.save(update_fields=["final_sha256"])
        lifecycle.record_note(
            [locked],
            reason=Text("Sealed with the provider's signature (SHA-256 %(h)s).", h=document.sha256),
        )


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
