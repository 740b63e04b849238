"""A contract's verification through the API: the signed PDF's signatures as pyHanko
reads them and the audit chain, as the public verify page reports them; a changed file
is reported modified; another organisation's key gets a 404."""

from __future__ import annotations

import pytest
from django.utils import translation

from billing.models import ContractDocument
from tests.billing.conftest import local_tsa, signing  # noqa: F401 - fixtures
from tests.billing.test_contract_signatures import _appended_update, _contract, _sign

pytestmark = pytest.mark.django_db


def test_the_signed_contract_verifies_and_a_changed_file_does_not(
    demo,
    api,
    other_api,
    signing,  # noqa: F811
):
    contract = _contract(demo)
    url = f"/api/v1/contracts/{contract.number}/verification/"
    unsigned = api.get(url).json()
    assert unsigned["status"] == "unknown" and unsigned["document"] == "none"
    with translation.override("en"):  # the helper reads the English code email
        _sign(contract, demo["customer"])
    verified = api.get(url).json()
    assert verified["status"] == "valid", verified
    assert verified["document"] == "signed" and verified["audit_chain_intact"]
    assert verified["signatures"][0]["kind"] == "certification"
    assert verified["signatures"][0]["ours"] and verified["signatures"][0]["intact"]
    assert other_api.get(url).status_code == 404
    # An update appended after the signature: reported, not hidden.
    document = ContractDocument.objects.get(contract=contract, kind="signed")
    with document.file.open("rb") as fh:
        data = fh.read()
    with document.file.open("wb") as fh:
        fh.write(_appended_update(data))
    assert api.get(url).json()["status"] == "modified"
