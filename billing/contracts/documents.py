"""Contract PDFs: ``templates/pdf/contract.html`` through ``core.pdf``.

Two documents per contract and language (``ContractDocument.kind``):

- ``draft``: what the customer reads and signs; rendered once, kept, its SHA-256 is what
  the signature binds to (the sign form carries the hash of the file shown, and the
  service refuses a signature over any other).
- ``sealed``: after the countersignature, the same contract text with the audit page
  (both signatures, times, hashes, the chain of events) and the provider's PAdES seal
  (``billing.contracts.signatures``). Rendered once; never replaced.

The contract's text reads only the contract's own snapshot (``Contract.parties``), the
accepted quote (immutable) and its order, so re-rendering gives the same clauses.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from billing.contracts import chain, signatures
from billing.documents.common import bank_details, duration_label, provider, seller_for
from billing.models import (
    Contract,
    ContractAuditEntry,
    ContractDocument,
    ContractDocumentKind,
    DunningAction,
    DunningPolicy,
    ItemKind,
)
from billing.pricing import schedule as schedule_engine
from billing.pricing.late_fees import LATE_FEE_PER_DAY
from billing.pricing.sla import SLA_CREDIT_TABLE, SLA_TARGET
from billing.pricing.terms import billing_schedule, invoice_issue_days
from core.documents import DocumentKind, register
from core.pdf import css_content, normalise_language, page_counter_css

TEMPLATE = "pdf/contract.html"
AUDIT_TEMPLATE = "pdf/contract_audit.html"

# GPUs under export controls (US EAR 3A090/4A090 and their China variants): the contract
# carries the end-use attestation when any of these is rented.
RESTRICTED_GPU_MARKERS = ("H100", "H200", "H800", "H20", "A100", "A800", "B200", "GB200")

# The SLA's credit table (``billing.pricing.sla``, which also computes the credits): below each
# monthly availability, that share of the node's charge for the period is credited.
FAULT_RESPONSE_MINUTES = 30
REPLACEMENT_HOURS = 4
# The acceptance check: measured against the GPU model's reference figures.
ACCEPTANCE_SHARE = Decimal("90")  # percent of the reference figure, at least
# The terms' figures (clauses of ``templates/pdf/contract_terms/<version>/``).
ACCEPTANCE_PERIOD_DAYS = 3  # days after delivery to object (验收期), else deemed accepted
CONFIDENTIALITY_YEARS = 3  # after the term
INCIDENT_NOTICE_HOURS = 24  # a security incident is notified within
LIABILITY_CAP_MONTHS = 12  # charges of this many months before the event
FORCE_MAJEURE_TERMINATION_DAYS = 30
FAPIAO_WORKING_DAYS = 10  # after each payment is received
NOTICE_CHANGE_DAYS = 3  # to notify a changed service address
BREACH_CURE_DAYS = 15


def is_restricted(gpu_name: str) -> bool:
    return any(marker in gpu_name.upper() for marker in RESTRICTED_GPU_MARKERS)


def contract_lines(contract: Contract) -> list[schedule_engine.ChargeLine]:
    quote = contract.quote
    return [
        schedule_engine.ChargeLine(
            code=line.code,
            description=line.localized_description(),
            net=line.net,
            vat=line.vat,
            tax_rate=quote.vat_rate,
            period_unit=line.period_unit,
        )
        for line in quote.lines.all()
        if line.kind != "free"
    ]


def contract_schedule(contract: Contract) -> list[schedule_engine.Period]:
    """The periods, amounts and dates of §4.1: the same schedule the invoices follow."""
    return billing_schedule(
        quote=contract.quote,
        tz=contract.site.tzinfo,
        lines=contract_lines(contract),
        order=contract.order,
    )


def dunning_terms() -> dict[str, Any]:
    """What §10 states about reminders and suspension, from the active dunning policy (the
    data ``billing.dunning`` runs on): the reminder days relative to the due date
    (``-7``: seven days before) and the days after it before a suspension."""
    policy = DunningPolicy.objects.filter(active=True).prefetch_related("steps").first()
    if policy is None:
        return {"reminder_offsets": [], "grace_days": None}
    offsets = [
        f"{step.offset_days:+d}" if step.offset_days else "0"
        for step in policy.ordered_steps()
        if step.action == DunningAction.REMIND
    ]
    return {"reminder_offsets": offsets, "grace_days": policy.grace_days}


def _equipment(contract: Contract) -> list[dict[str, Any]]:
    quote = contract.quote
    groups = {g.get("node_type"): g for g in (quote.placement or {}).get("groups", [])}
    rows: dict[int, dict[str, Any]] = {}
    for item in quote.items.select_related("node_type__gpu_model", "card_gpu_model"):
        if item.kind != ItemKind.NODE or item.node_type is None:
            continue
        nt = item.node_type
        row = rows.setdefault(
            nt.pk,
            {
                "node_type": nt,
                "gpu": nt.gpu_model,
                "count": 0,
                "cards": [],
                "placement": groups.get(nt.code, {}),
            },
        )
        row["count"] += int(item.quantity)
        if item.card_gpu_model is not None and item.cards_per_node:
            row["cards"].append((item.cards_per_node, item.card_gpu_model))
    return list(rows.values())


def _gpus(equipment: list[dict[str, Any]]) -> list[Any]:
    seen: dict[int, Any] = {}
    for row in equipment:
        for gpu in [row["gpu"], *(g for _n, g in row["cards"])]:
            if gpu is not None:
                seen[gpu.pk] = gpu
    return list(seen.values())


def _governing(contract: Contract) -> dict[str, str]:
    """Law, arbitration institution, rules, seat and language, in the active language."""
    if contract.site.code == "HK":
        return {
            "law": _("the laws of the Hong Kong SAR"),
            "forum": _("the Hong Kong International Arbitration Centre (HKIAC)"),
            "rules": _("HKIAC Administered Arbitration Rules"),
            "seat": _("Hong Kong"),
            "language": _("English"),
        }
    return {
        "law": _("the laws of the People's Republic of China"),
        "forum": _("the Shenzhen Court of International Arbitration (SCIA)"),
        "rules": _("SCIA Arbitration Rules"),
        "seat": _("Shenzhen"),
        "language": _("Chinese"),
    }


def prevailing_language(contract: Contract) -> str:
    """The version that prevails: Chinese for a mainland seller, English in Hong Kong."""
    seller = seller_for(contract.site)
    mainland = seller.issues_fapiao if seller is not None else contract.site.code != "HK"
    return "zh-hans" if mainland else "en"


def terms_template(contract: Contract, language: str) -> str:
    """The clauses of the contract's terms version in ``language`` (the latest version's
    when a contract predates versioned texts)."""
    folder = Path(settings.BASE_DIR) / "templates" / "pdf" / "contract_terms"
    version = contract.terms_version
    if not (folder / version).is_dir():
        version = settings.PORTAL_TERMS_VERSION
    return f"pdf/contract_terms/{version}/{language}.html"


def audit_rows(contract: Contract) -> list[ContractAuditEntry]:
    return list(contract.audit.order_by("seq"))


def audit_context(contract: Contract, *, language: str) -> dict[str, Any]:
    """What the audit record prints: enough to recompute every hash of the chain."""
    contract = Contract.objects.select_related("site", "signer", "countersigner", "approver").get(
        pk=contract.pk
    )
    tz = contract.site.tzinfo
    entries = []
    for e in audit_rows(contract):
        body = chain_body(e)
        entries.append(
            {
                "entry": e,
                "utc": e.at.astimezone(UTC),
                "local": timezone.localtime(e.at, tz),
                "body": body,
            }
        )
    links = [{"seq": x["entry"].seq, "body": x["body"], "hash": x["entry"].hash} for x in entries]
    with translation.override(language):
        the_provider = provider(language, contract.site)
        docs = {d.kind: d for d in contract.documents.all()}
        return {
            "contract": contract,
            "provider": the_provider,
            "entries": entries,
            "documents": docs,
            "site_timezone": contract.site.timezone,
            "signed_at_utc": contract.signed_at.astimezone(UTC) if contract.signed_at else None,
            "signed_at": timezone.localtime(contract.signed_at, tz) if contract.signed_at else None,
            "countersigned_at_utc": (
                contract.countersigned_at.astimezone(UTC) if contract.countersigned_at else None
            ),
            "countersigned_at": (
                timezone.localtime(contract.countersigned_at, tz)
                if contract.countersigned_at
                else None
            ),
            "chain_json_b64": base64.b64encode(
                json.dumps(
                    {"contract": contract.number, "genesis": chain.GENESIS, "entries": links},
                    ensure_ascii=False,
                    indent=1,
                ).encode()
            ).decode(),
            "running_left_css": css_content(f"{the_provider.brand} · {_('Audit record')}"),
            "running_right_css": css_content(contract.number),
            "footer_left_css": css_content(f"{the_provider.name} · {the_provider.website}"),
        }


def chain_body(entry: ContractAuditEntry) -> str:
    """The exact text an entry's hash covers."""
    return chain.entry_body(
        prev_hash=entry.prev_hash,
        seq=entry.seq,
        at=entry.at.isoformat(),
        kind=entry.kind,
        actor=entry.actor_id,
        detail=entry.detail,
    )


def contract_context(contract: Contract, *, language: str, sealed: bool = False) -> dict[str, Any]:
    contract = Contract.objects.select_related(
        "quote", "order", "site", "organisation", "amends", "signer", "countersigner"
    ).get(pk=contract.pk)
    quote = contract.quote
    order = contract.order
    tz = contract.site.tzinfo
    with translation.override(language):
        # The provider party is the site's seller entity (as on quotes and payment
        # documents): legal name, registration number, address and bank account.
        the_provider = provider(language, contract.site)
        equipment = _equipment(contract)
        gpus = _gpus(equipment)
        periods = contract_schedule(contract)
        customer = contract.parties.get("customer", {})
        prevailing = prevailing_language(contract)
        parts = []
        for lang in (prevailing, *(x for x in ("zh-hans", "en") if x != prevailing)):
            with translation.override(lang):
                parts.append(
                    {
                        "language": lang,
                        "template": terms_template(contract, lang),
                        "provider": provider(lang, contract.site),
                        "bank": bank_details(contract.site, lang),
                        "term_label": quote.get_term_display(),
                        "duration_label": duration_label(quote.term, quote.duration),
                        "governing": _governing(contract),
                    }
                )
        seller = seller_for(contract.site)
        return {
            "parts": parts,
            "prevailing": prevailing,
            "mainland": seller.issues_fapiao if seller is not None else True,
            "telecom_licence": seller.telecom_licence if seller is not None else "",
            "priced_lines": [line for line in quote.lines.all() if line.kind != "free"],
            "acceptance_days": ACCEPTANCE_PERIOD_DAYS,
            "confidentiality_years": CONFIDENTIALITY_YEARS,
            "incident_notice_hours": INCIDENT_NOTICE_HOURS,
            "liability_cap_months": LIABILITY_CAP_MONTHS,
            "force_majeure_days": FORCE_MAJEURE_TERMINATION_DAYS,
            "fapiao_working_days": FAPIAO_WORKING_DAYS,
            "notice_change_days": NOTICE_CHANGE_DAYS,
            "cure_days": BREACH_CURE_DAYS,
            "contract": contract,
            "quote": quote,
            "order": order,
            "site": contract.site,
            "provider": the_provider,
            "bank": bank_details(contract.site, language),
            "customer": customer,
            "issued": timezone.localtime(contract.created_at, tz),
            "start": timezone.localtime(order.start_at, tz),
            "end": timezone.localtime(order.end_at, tz),
            "term_label": quote.get_term_display(),
            "duration_label": duration_label(quote.term, quote.duration),
            "equipment": equipment,
            "gpus": gpus,
            "restricted": [g for g in gpus if is_restricted(g.name)],
            "acceptance_share": ACCEPTANCE_SHARE,
            "periods": periods,
            "schedule_total": sum((p.gross for p in periods), Decimal("0")),
            "addon_lines": [
                line for line in quote.lines.all() if line.kind not in ("node", "card")
            ],
            "currency": quote.currency,
            "vat_rate": quote.vat_rate,
            "sla_target": SLA_TARGET,
            "sla_table": SLA_CREDIT_TABLE,
            "fault_response_minutes": FAULT_RESPONSE_MINUTES,
            "replacement_hours": REPLACEMENT_HOURS,
            "late_fee": LATE_FEE_PER_DAY,
            "issue_days": invoice_issue_days(),
            "late_issue_pay_days": schedule_engine.LATE_ISSUE_PAY_DAYS,
            "extra_pay_days": schedule_engine.EXTRA_PAY_DAYS,
            **dunning_terms(),
            "renewal_days": settings.PORTAL_RENEWAL_DAYS,
            "governing": _governing(contract),
            "sealed": sealed,
            "audit": audit_rows(contract) if sealed else [],
            "signed_at": timezone.localtime(contract.signed_at, tz) if contract.signed_at else None,
            "countersigned_at": (
                timezone.localtime(contract.countersigned_at, tz)
                if contract.countersigned_at
                else None
            ),
            "site_timezone": contract.site.timezone,
            **_margins(contract, prevailing, customer),
        }


def _margins(contract: Contract, prevailing: str, customer: dict[str, Any]) -> dict[str, Any]:
    """The running header, footer and page counter, in the contract's prevailing language
    (the language its first text is in), whatever language it is rendered in."""
    with translation.override(prevailing):
        the_provider = provider(prevailing, contract.site)
        title = _("Service contract")
        return {
            "running_left_css": css_content(f"{the_provider.brand} · {title}"),
            "running_right_css": css_content(
                f"{contract.number} · {customer.get('legal_name', '')}"
            ),
            "footer_left_css": css_content(f"{the_provider.name} · {the_provider.website}"),
            "page_counter_css": page_counter_css(),
        }


def render_contract_pdf(*, contract: Contract, language: str, sealed: bool = False) -> bytes:
    kind = SEALED if sealed else DRAFT
    return kind.render(contract, language=normalise_language(language))


RENDER_TASK = "billing.tasks.document_render_contract"
SEAL_TASK = "billing.tasks.document_seal_contract"
AUDIT_TASK = "billing.tasks.document_render_contract_audit"


class ContractDraftKind(DocumentKind[Contract, ContractDocument]):
    """The PDF the customer signs, in the contract's language unless told: rendered once
    and kept (its SHA-256 is what the signature binds to)."""

    name = "contract_draft"
    template = TEMPLATE
    render_task = RENDER_TASK
    model = ContractDocument
    owner_field = "contract"
    document_kind: ContractDocumentKind = ContractDocumentKind.DRAFT
    file_suffix = "draft"

    def context(self, owner: Contract, *, language: str) -> dict[str, Any]:
        return contract_context(
            owner, language=language, sealed=self.document_kind == ContractDocumentKind.SEALED
        )

    def filename(self, owner: Contract, *, language: str) -> str:
        return f"{owner.number}-{language}-{self.file_suffix}.pdf"

    def owner_lookup(self, owner: Contract) -> dict[str, Any]:
        return {"contract": owner, "kind": self.document_kind}

    def language(self, owner: Contract, language: str | None) -> str:
        return normalise_language(language or owner.language)

    def refreshed(self, owner: Contract) -> Contract:
        return Contract.objects.get(pk=owner.pk)  # signatures and hashes as stored now


class ContractSignedKind(ContractDraftKind):
    """The draft plus the customer's PAdES signature: made when the customer signs
    (``services.contract_sign``), stored here, never rendered."""

    name = "contract_signed"
    document_kind = ContractDocumentKind.SIGNED
    file_suffix = "customer-signed"

    def render(self, owner: Contract, *, language: str) -> bytes:
        raise RuntimeError("the customer's signed PDF is made by contract_sign, not rendered")


def _read(document: ContractDocument) -> bytes:
    with document.file.open("rb") as fh:
        return fh.read()


class ContractSealedKind(ContractDraftKind):
    """After the countersignature: the customer's signed file with the seller's seal
    appended as an incremental update (``billing.contracts.signatures``), naming the
    authorised signatory. Its first revisions are the exact bytes the customer was shown
    and signed. Made once; never replaced."""

    name = "contract_sealed"
    render_task = SEAL_TASK
    document_kind = ContractDocumentKind.SEALED
    file_suffix = "signed"

    def render(self, owner: Contract, *, language: str) -> bytes:
        signed = SIGNED.stored(owner, language=language)
        if signed is None or signed.sha256 != owner.customer_signed_sha256:
            raise RuntimeError(f"{owner.number}: no PDF signed by the customer to countersign")
        data = _read(signed)
        the_provider = provider("en", owner.site)
        signatory = f"{owner.countersigner_name}, {owner.countersigner_title}"
        return signatures.seal_pdf(
            data,
            reason=f"{owner.number} countersigned for {the_provider.name} by {signatory}",
            location=owner.site.code,
            seller=seller_for(owner.site),
            signatory=signatory,
        )


class ContractAuditKind(ContractDraftKind):
    """The audit record of a sealed contract: both signatures, the files' hashes and
    every entry of the hash chain with the exact text that was hashed (and the chain as
    an embedded JSON file), sealed by the seller."""

    name = "contract_audit"
    template = AUDIT_TEMPLATE
    render_task = AUDIT_TASK
    document_kind = ContractDocumentKind.AUDIT
    file_suffix = "audit"

    def context(self, owner: Contract, *, language: str) -> dict[str, Any]:
        return audit_context(owner, language=language)

    def render(self, owner: Contract, *, language: str) -> bytes:
        return signatures.seal_pdf(
            super().render(owner, language=language),
            reason=f"Audit record of {owner.number}",
            location=owner.site.code,
            seller=seller_for(owner.site),
        )


DRAFT = register(ContractDraftKind())
SIGNED = ContractSignedKind()  # stored by the signature, never rendered by a task
SEALED = register(ContractSealedKind())
AUDIT = register(ContractAuditKind())


def draft_document(*, contract: Contract, language: str | None = None) -> ContractDocument:
    """The PDF the customer signs: rendered once and kept."""
    return DRAFT.document(contract, language=language)


@dataclass(frozen=True)
class Sealed:
    document: ContractDocument
    created: bool


def sealed_document(*, contract: Contract, language: str | None = None) -> Sealed:
    """The countersigned contract with its audit page and the provider's PAdES seal."""
    stored = SEALED.stored(contract, language=language)
    if stored is not None:
        return Sealed(stored, False)
    return Sealed(SEALED.document(contract, language=language), True)
