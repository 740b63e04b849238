"""Issue 13: the contract's provider party is the site's seller entity (legal name,
registration number, address and bank account), read from the rendered PDF (pdftotext)
for a Shenzhen and the Hong Kong site, in both languages."""

from __future__ import annotations

import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings

from billing.contracts import documents as contract_documents
from billing.models import Contract, SellerEntity
from billing.orders import acceptance
from billing.quotes import services as qs

pytestmark = pytest.mark.django_db


def _contract(demo, site_key: str) -> Contract:
    quote = qs.quote_create(
        site=demo[site_key],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=3,
        start_date=demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    return Contract.objects.get(order=order)


def _text(contract: Contract, language: str, tmp_path: Path) -> str:
    path = tmp_path / f"contract-{language}.pdf"
    path.write_bytes(contract_documents.render_contract_pdf(contract=contract, language=language))
    out = subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    return re.sub(r"\s+", "", out)


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("site_key", ["sz", "hk"])
def test_the_contract_names_the_sites_seller_entity(demo, tmp_path, site_key):
    contract = _contract(demo, site_key)
    seller = SellerEntity.objects.get(site=demo[site_key])
    other = SellerEntity.objects.exclude(pk=seller.pk).get()
    en = _text(contract, "en", tmp_path)
    assert _flat(seller.legal_name) in en
    assert seller.registration_number in en
    assert _flat(seller.address) in en
    assert _flat(seller.bank_name) in en and _flat(seller.account_number) in en
    # Neither the settings' provider nor the other site's entity is a party.
    assert _flat(settings.PORTAL_PROVIDER_NAME) not in en
    assert _flat(other.legal_name) not in en and other.registration_number not in en
    zh = _text(contract, "zh-hans", tmp_path)
    assert _flat(seller.legal_name_zh) in zh
    assert _flat(seller.address_zh) in zh and _flat(seller.bank_name_zh) in zh
    assert seller.registration_number in zh
