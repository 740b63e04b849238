"""Contracts: drafted from an accepted quote, signed with a one-time code, countersigned,
sealed with pyHanko and verified; the gate to provisioning."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from billing.contracts import documents as contract_documents
from billing.contracts import gate, signatures
from billing.contracts import services as cs
from billing.demo import contracts as demo_contracts
from billing.models import (
    Contract,
    ContractStatus,
    OrderStatus,
    ProvisioningRelease,
    SigningCode,
)
from billing.orders import acceptance
from billing.orders import services as orders
from billing.quotes import services as qs
from core.errors import DomainError
from core.models import OutboxMessage

pytestmark = pytest.mark.django_db

PROVISIONING = "provisioning.tasks.provisioning_start"


@pytest.fixture(autouse=True)
def _signing(signing, signatory):
    return signing


def make_order(demo, *, term="month", duration=3, actor=None, start=None):
    actor = actor or demo["sales"]
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term=term,
        duration=duration,
        start_date=start or demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(2), node_type_id=demo["h100"].pk)],
        actor=actor,
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=actor)
    return acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )


def provisioning_enqueued(order) -> int:
    return sum(
        1
        for m in OutboxMessage.objects.all()
        for name, args in m.steps
        if name == PROVISIONING and args == [order.pk]
    )


def sign(contract, user, *, code=None, sha=None, title="CTO"):
    if code is None:
        cs.signing_code_send(contract=contract, user=user)
        code = re.search(r" is (\d{6})\.", mail.outbox[-1].body)[1]
    draft = contract_documents.draft_document(contract=contract)
    return cs.contract_sign(
        contract=contract,
        user=user,
        full_name="Li Wei",
        title=title,
        consent=True,
        code=code,
        pdf_sha256=sha or draft.sha256,
        ip="203.0.113.9",
        user_agent="pytest",
    )


def signatory_of(demo):
    manager = demo["manager"]
    return type(manager).objects.get(pk=manager.pk)


def signed_contract(demo):
    order = make_order(demo)
    contract = Contract.objects.get(order=order)
    sign(contract, demo["customer"])
    cs.contract_countersign(contract=contract, actor=signatory_of(demo))
    sealed = contract_documents.sealed_document(contract=contract)
    cs.contract_sealed(contract=contract, document=sealed.document)
    contract.refresh_from_db()
    return contract, sealed.document


def test_a_sales_quote_order_gets_a_contract_and_a_short_self_service_one_does_not(demo):
    order = make_order(demo)
    contract = Contract.objects.get(order=order)
    assert contract.status == ContractStatus.DRAFTED
    assert contract.number.startswith("C-SZ-")
    assert contract.parties["customer"]["legal_name"]
    assert gate.needs_contract(order.quote)
    short = make_order(demo, term="month", duration=1, actor=demo["customer"])
    assert not gate.needs_contract(short.quote)
    assert not Contract.objects.filter(order=short).exists()


def test_the_contract_pdf_has_every_clause_in_both_languages(demo):
    order = make_order(demo)
    contract = Contract.objects.get(order=order)
    from core.pdf import render_html

    context = contract_documents.contract_context(contract, language=contract.language)
    assert context["restricted"], "H100 is export-controlled"
    text = render_html(contract_documents.TEMPLATE, context, language=contract.language)
    # One document, both versions; Shenzhen: the Chinese one first and prevailing.
    assert text.index("中文文本") < text.index("English version")
    assert "两种文本如有不一致，以中文文本为准" in text
    assert "the Chinese version prevails" in text
    for words in (
        # Confidentiality with the three laws' duties and incident notice.
        ["保密", "《网络安全法》《数据安全法》《个人信息保护法》", "24 小时内通知"],
        ["Cybersecurity Law", "Data Security Law", "Personal Information Protection Law"],
        # Liability cap, indirect loss, sole remedy, exclusions, force majeure.
        ["累计责任", "间接损失", "唯一且排他的救济", "除外情形", "第五百九十条"],
        ["total liability", "indirect or consequential loss", "sole and exclusive remedy"],
        ["Article 590 of the Civil Code"],
        # Acceptance period, deemed acceptance.
        ["验收期", "视为验收合格", "deemed accepted"],
        # Fapiao type and timing; tax classification per item.
        ["增值税专用发票", "信息技术服务", "基础电信服务", "information technology services"],
        # Cancellation, entire agreement, precedence, amendment, notices, formation.
        ["免费取消", "cancel the order free of charge", "完整协议", "entire agreement"],
        ["优先于", "prevails over", "变更", "送达地址", "成立并生效", "takes effect"],
        # Signatories, IDC licence, arbitration seat, rules and language.
        ["授权签署人", "Authorised signatories", "增值电信业务经营许可证", "B1-20260000"],
        ["深圳国际仲裁院", "仲裁地为深圳", "仲裁语言为中文", "SCIA Arbitration Rules"],
        ["the seat of arbitration is Shenzhen", "the language of the arbitration is Chinese"],
        ["Article 13", "export control", "出口管制", "Annex A", "附件 A", "99.9%"],
    ):
        for word in words:
            assert word in text, word
    for hostname in order.quote.placement["groups"][0]["hostnames"]:
        assert text.count(hostname) >= 2  # in both versions


def test_signed_sealed_contract_verifies_and_a_changed_byte_does_not(demo, client):
    contract, document = signed_contract(demo)
    assert contract.status == ContractStatus.COUNTERSIGNED
    assert contract.final_sha256 == document.sha256
    assert cs.audit_verify(contract)
    data = document.file.open("rb").read()
    verdict = signatures.verify_pdf(data)
    assert verdict.status == "valid", verdict
    # One byte changed inside the signed range: the producer string.
    i = data.index(b"WeasyPrint")
    tampered = data[:i] + b"X" + data[i + 1 :]
    assert len(tampered) == len(data)
    assert signatures.verify_pdf(tampered).status == "modified"
    assert signatures.verify_pdf(b"%PDF-1.7 not really").status == "unknown"
    # The public page says the same.
    url = reverse("contract_verify")
    page = client.post(url, {"file": SimpleUploadedFile("c.pdf", data, "application/pdf")})
    assert page.status_code == 200
    assert "signed through this portal, unchanged" in page.content.decode()
    assert contract.number in page.content.decode()
    page = client.post(url, {"file": SimpleUploadedFile("c.pdf", tampered, "application/pdf")})
    assert "modified" in page.content.decode()
    # The audit chain breaks when an entry changes.
    entry = contract.audit.get(kind="customer_signed")
    entry.detail = {**entry.detail, "name": "Someone Else"}
    entry.save()
    assert not cs.audit_verify(contract)


def test_the_one_time_code_is_single_use_expires_and_counts_attempts(demo):
    order = make_order(demo)
    contract = Contract.objects.get(order=order)
    customer = demo["customer"]
    cs.signing_code_send(contract=contract, user=customer)
    code = re.search(r" is (\d{6})\.", mail.outbox[-1].body)[1]
    row = SigningCode.objects.get(contract=contract)
    assert code not in row.code_hash and len(row.code_hash) == 64  # hashed at rest
    wrong = "000000" if code != "000000" else "111111"
    with pytest.raises(DomainError, match="not right"):
        sign(contract, customer, code=wrong)
    row.refresh_from_db()
    assert row.attempts == 1
    # Expired.
    SigningCode.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(DomainError, match="expired"):
        sign(contract, customer, code=code)
    # Another signer than an owner/billing member is refused.
    with pytest.raises(DomainError):
        cs.signing_code_send(contract=contract, user=demo["sales"])
    # A fresh code (after the resend cool-down) works once.
    SigningCode.objects.update(created_at=timezone.now() - timedelta(minutes=2))
    sign(contract, customer)
    contract.refresh_from_db()
    assert contract.status == ContractStatus.CUSTOMER_SIGNED
    used = SigningCode.objects.filter(contract=contract, used_at__isnull=False).get()
    assert contract.signed_code_id == used.pk
    with pytest.raises(DomainError):
        sign(contract, customer, code="123456")


def test_signing_a_pdf_other_than_the_one_shown_is_refused(demo):
    contract = Contract.objects.get(order=make_order(demo))
    with pytest.raises(DomainError, match="not the current contract"):
        sign(contract, demo["customer"], sha="0" * 64)


def test_provisioning_waits_for_payment_and_the_countersignature(demo):
    order = make_order(demo)
    contract = Contract.objects.get(order=order)
    orders.order_mark_paid(order=order, comment="test")
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID
    assert provisioning_enqueued(order) == 0
    assert [str(m) for m in gate.gate_state(order).missing] == ["the signed contract"]
    sign(contract, demo["customer"])
    assert provisioning_enqueued(order) == 0
    cs.contract_countersign(contract=contract, actor=signatory_of(demo))
    assert provisioning_enqueued(order) == 1
    # Idempotent.
    assert gate.order_release_for_provisioning(order=order) is False
    assert provisioning_enqueued(order) == 1
    assert ProvisioningRelease.objects.filter(order=order).count() == 1


def test_short_self_service_order_accepts_terms_then_pays(demo):
    order = make_order(demo, term="month", duration=1, actor=demo["customer"])
    assert [str(m) for m in gate.gate_state(order).missing] == [
        "the standard terms",
        "the payment",
    ]
    gate.terms_accept(order=order, user=demo["customer"], name="Li Wei", ip="203.0.113.9")
    assert provisioning_enqueued(order) == 0
    orders.order_mark_paid(order=order)
    assert provisioning_enqueued(order) == 1
    acceptance = order.terms_acceptance
    assert acceptance.version and acceptance.user == demo["customer"]
    # A long order cannot skip the contract with the checkbox.
    with pytest.raises(DomainError):
        gate.terms_accept(order=make_order(demo), user=demo["customer"], name="Li", ip=None)


def test_a_signed_contract_is_amended_not_changed(demo):
    contract, _document = signed_contract(demo)
    amendment = cs.contract_draft(order=contract.order, actor=demo["sales"], amends=contract)
    assert amendment.amends == contract and amendment.pk != contract.pk
    with pytest.raises(DomainError):
        cs.contract_draft(order=contract.order, actor=demo["sales"], amends=amendment)


def test_render_contract_command_writes_the_sealed_pdf(demo, tmp_path):
    contract, document = signed_contract(demo)
    out = tmp_path / "c.pdf"
    call_command("render_contract", contract.number, "--out", str(out))
    assert out.read_bytes() == document.file.open("rb").read()
    assert signatures.verify_pdf(out.read_bytes()).status == "valid"


def test_seed_demo_prints_a_signed_contract(db, media, settings, capsys):
    import io

    settings.PORTAL_SEED_DEMO_CONTRACT = True
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    number = re.search(r"signed demo contract: (\S+)", out.getvalue())[1]
    contract = Contract.objects.get(number=number)
    assert contract.final_sha256
    again = io.StringIO()
    call_command("seed_demo", stdout=again)
    assert f"signed demo contract: {number}" in again.getvalue()
    assert Contract.objects.filter(quote__notes=demo_contracts.DEMO_NOTE).count() == 1


def test_the_customer_signs_in_the_portal(demo, client):
    order = make_order(demo)
    contract = Contract.objects.get(order=order)
    draft = contract_documents.draft_document(contract=contract)
    client.force_login(demo["customer"])
    page = client.get(reverse("dashboard_order", args=[order.number]))
    assert "the signed contract" in page.content.decode()
    page = client.get(reverse("dashboard_contract", args=[order.number]))
    assert draft.sha256 in page.content.decode()
    framed = client.get(reverse("dashboard_contract_pdf", args=[order.number]))
    assert framed.status_code == 200
    # The page shows the PDF in a frame of its own origin; DENY left the frame empty.
    assert framed["X-Frame-Options"] == "SAMEORIGIN"
    client.post(reverse("dashboard_contract_code", args=[order.number]))
    code = re.search(r" is (\d{6})\.", mail.outbox[-1].body)[1]
    response = client.post(
        reverse("dashboard_contract_sign", args=[order.number]),
        {
            "full_name": "Li Wei",
            "title": "CTO",
            "consent": "on",
            "code": code,
            "pdf_sha256": draft.sha256,
        },
        HTTP_USER_AGENT="Browser/1.0",
    )
    assert response.status_code == 302
    contract.refresh_from_db()
    assert contract.status == ContractStatus.CUSTOMER_SIGNED
    assert contract.signed_user_agent == "Browser/1.0"
    assert contract.signed_ip == "127.0.0.1"
    assert contract.signed_sha256 == draft.sha256


def test_the_chain_command_says_ok_and_names_the_first_broken_link(demo):
    order = make_order(demo)
    contract = Contract.objects.get(order=order)
    other = Contract.objects.get(order=make_order(demo))
    for c in (contract, other):
        cs.audit_append(contract=c, kind="note", actor=demo["sales"], text="first")
        cs.audit_append(contract=c, kind="note", text="second")
        cs.audit_append(contract=c, kind="note", text="third")
    out = StringIO()
    call_command("contract_verify_chain", stdout=out)
    assert f"{contract.number}: ok" in out.getvalue()
    assert f"{Contract.objects.count()} contract chains intact." in out.getvalue()
    # A tampered row: the command names it (the first broken link) and exits 1.
    second = contract.audit.get(detail__text="second")
    second.detail = {"text": "changed"}
    second.save()
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("contract_verify_chain", stdout=out)
    assert raised.value.returncode == 1
    assert f"{contract.number}: BROKEN at entry {second.seq} (note" in out.getvalue()
    assert f"{other.number}: ok" in out.getvalue()
    assert cs.audit_first_break(contract) == second
    # Only the contracts named; an unknown number is an error.
    out = StringIO()
    call_command("contract_verify_chain", other.number, stdout=out)
    assert contract.number not in out.getvalue()
    with pytest.raises(CommandError, match="No contract C-XX"):
        call_command("contract_verify_chain", "C-XX-1", stdout=StringIO())
