"""The demo's signed contract (``seed_demo``): a quarterly A100 rental for the demo
customer, signed with a one-time code by its owner, countersigned by the sales manager and
sealed with the demo key. Idempotent: found again by its quote's note."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db.models import Q

from accounts.models import Organisation
from billing import demo as billing_demo
from billing.contracts import documents as contract_documents
from billing.contracts import services as contract_services
from billing.contracts import signatures
from billing.demo import DEMO_CUSTOMER_NAME, DEMO_ORGANISATION_TAX_IDS
from billing.models import CONTRACT_SIGNED, Contract, ContractStatus
from billing.orders import acceptance
from billing.pricing.periods import site_today
from billing.quotes import services as quote_services
from inventory.models import NodeType, Site

# What sales wrote on the demo quote, to a Chinese customer; seed_demo finds its contract by
# it (and by the note of earlier demo databases, so re-seeding one adds no second contract).
DEMO_NOTE = "两台 A100 节点，为期两个季度，按与客户经理商定的方案。"
_EARLIER_DEMO_NOTES = ("Demo: the signed contract of seed_demo.",)


def demo_signed_contract() -> Contract:
    existing = (
        Contract.objects.filter(quote__notes__in=(DEMO_NOTE, *_EARLIER_DEMO_NOTES))
        .filter(Q(status__in=CONTRACT_SIGNED) | Q(status=ContractStatus.CUSTOMER_SIGNED))
        .first()
    )
    if existing is not None and existing.final_sha256:
        return existing
    billing_demo.seed_sellers()
    billing_demo.seed_signatories()
    signatures.demo_certificate_ensure()
    users = get_user_model().objects
    sales, manager, customer = (users.get(username=n) for n in ("sales", "manager", "customer"))
    site = Site.objects.get(code="SZ")
    if existing is None:
        quote = quote_services.quote_create(
            site=site,
            organisation=Organisation.objects.get(tax_id=DEMO_ORGANISATION_TAX_IDS[0]),
            contact_name=DEMO_CUSTOMER_NAME,
            contact_email=customer.email,
            term="quarter",
            duration=2,
            start_date=site_today(site) + timedelta(days=14),
            items=[
                quote_services.ItemSpec(
                    kind="node",
                    quantity=Decimal(2),
                    node_type_id=NodeType.objects.get(code="a100-40g-4x").pk,
                )
            ],
            actor=sales,
            notes=DEMO_NOTE,
        )
        quote = quote_services.quote_send(quote=quote, actor=sales)
        order = acceptance.quote_accept(
            quote=quote, user=customer, name=DEMO_CUSTOMER_NAME, ip="203.0.113.9"
        )
        existing = Contract.objects.get(order=order)
    contract = existing
    if contract.status == ContractStatus.DRAFTED:
        draft = contract_documents.draft_document(contract=contract)
        contract_services.contract_document_rendered(contract=contract, document=draft)
        _row, code = contract_services.signing_code_issue(contract=contract, user=customer)
        contract_services.contract_sign(
            contract=contract,
            user=customer,
            full_name=DEMO_CUSTOMER_NAME,
            title="CTO",
            consent=True,
            code=code,
            pdf_sha256=draft.sha256,
            ip="203.0.113.9",
            user_agent="seed_demo",
        )
        contract.refresh_from_db()
    if contract.status == ContractStatus.CUSTOMER_SIGNED:
        contract_services.contract_countersign(contract=contract, actor=users.get(pk=manager.pk))
    sealed = contract_documents.sealed_document(contract=contract)
    contract_services.contract_sealed(contract=contract, document=sealed.document)
    contract.refresh_from_db()
    return contract
