"""Issue 24 (signatures on the bytes the customer saw) and issue 25 points 6 and 9:
the customer's PAdES certification signature with a per-signer certificate, the seller's
incremental countersignature by an authorised signatory, timestamps from a TSA on
127.0.0.1, what pyHanko and poppler's ``pdfsig`` report, the audit record's chain, the
signing-code limits, the public verify page's limits, and the contract emails."""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.core import mail
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone, translation

from billing.contracts import documents as contract_documents
from billing.contracts import emails as contract_emails
from billing.contracts import services as cs
from billing.contracts import signatures
from billing.models import Contract, ContractStatus, SigningCode
from billing.orders import acceptance
from billing.quotes import services as qs
from core.errors import DomainError
from core.models import OutboxMessage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _signing(signing):
    return signing


def _contract(demo, *, nodes=2, site="sz"):
    quote = qs.quote_create(
        site=demo[site],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=3,
        start_date=demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(nodes), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    return Contract.objects.get(order=order)


def _sign(contract, user, *, title="CTO"):
    cs.signing_code_send(contract=contract, user=user)
    code = re.search(r" is (\d{6})\.", mail.outbox[-1].body)[1]
    draft = contract_documents.draft_document(contract=contract)
    cs.contract_sign(
        contract=contract,
        user=user,
        full_name="Li Wei",
        title=title,
        consent=True,
        code=code,
        pdf_sha256=draft.sha256,
        ip="203.0.113.9",
        user_agent="pytest",
    )
    contract.refresh_from_db()
    return draft


def _seal(contract):
    sealed = contract_documents.sealed_document(contract=contract)
    cs.contract_sealed(contract=contract, document=sealed.document)
    contract.refresh_from_db()
    return sealed.document


def _read(document):
    with document.file.open("rb") as fh:
        return fh.read()


def _pdfsig(data, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(data)
    return subprocess.run(["pdfsig", str(path)], capture_output=True, text=True).stdout


def _appended_update(data: bytes) -> bytes:
    """An incremental update that changes the document (a new /Lang in the catalogue),
    as a forger appending to a signed file would."""
    root = re.findall(rb"/Root (\d+) 0 R", data)[-1]
    startxref = int(re.findall(rb"startxref\s+(\d+)", data)[-1])
    size = max(int(x) for x in re.findall(rb"/Size (\d+)", data))
    obj = re.search(rb"\n" + root + rb" 0 obj\s*(<<.*?>>)\s*endobj", data, re.S)
    body = obj.group(1)[:-2] + b" /Lang (fr) >>"
    offset = len(data) + 1
    update = b"\n" + root + b" 0 obj\n" + body + b"\nendobj\n"
    xref_at = offset + len(update) - 1
    update += (
        b"xref\n0 1\n0000000000 65535 f \n" + root + b" 1\n" + f"{offset:010d} 00000 n \n".encode()
    )
    update += (
        b"trailer\n<< /Size "
        + str(size).encode()
        + b" /Root "
        + root
        + b" 0 R /Prev "
        + str(startxref).encode()
        + b" >>\nstartxref\n"
        + str(xref_at).encode()
        + b"\n%%EOF\n"
    )
    return data + update


def test_the_customer_signs_the_bytes_shown_and_the_seal_is_appended_to_that_file(
    demo, signatory, tmp_path, local_tsa
):
    contract = _contract(demo)
    draft = _sign(contract, demo["customer"])
    shown = _read(draft)
    assert contract.status == ContractStatus.CUSTOMER_SIGNED
    signed = contract_documents.SIGNED.stored(contract)
    signed_bytes = _read(signed)
    # The customer's signature is on the very bytes they were shown.
    assert signed_bytes[: len(shown)] == shown
    assert contract.customer_signed_sha256 == signed.sha256
    assert contract.signed_sha256 == draft.sha256
    before = local_tsa.requests
    outcome = cs.contract_countersign(contract=contract, actor=signatory)
    assert outcome.countersigned
    sealed = _seal(contract)
    assert local_tsa.requests > before  # the seal's timestamps came from the TSA URL
    final = _read(sealed)
    # The countersignature is an incremental update of the same file: its first revisions
    # are byte for byte the PDF shown and the PDF the customer signed.
    assert final[: len(shown)] == shown
    assert final[: len(signed_bytes)] == signed_bytes
    assert contract.final_sha256 == sealed.sha256

    verdict = signatures.verify_pdf(final)
    assert verdict.status == "valid", verdict.detail
    kinds = [r.kind for r in verdict.signatures]
    assert kinds[0] == "certification" and "approval" in kinds and "timestamp" in kinds
    customer, seal = (
        verdict.signatures[0],
        next(r for r in verdict.signatures if r.kind == "approval"),
    )
    assert "Li Wei" in customer.signer and "CTO" in customer.signer
    assert contract.parties["customer"]["legal_name"] in customer.signer
    assert "contract seal" in seal.signer
    assert "Shenzhen Zhisuan" in seal.signer  # the site's seller entity, not a shared demo
    for r in (customer, seal):
        assert r.intact and r.valid and r.trusted and r.ours
        assert r.timestamp_trusted and r.timestamp_at is not None
    assert customer.docmdp_ok

    # poppler's pdfsig sees both signatures valid and the file wholly signed.
    out = _pdfsig(final, tmp_path, "sealed.pdf")
    assert "Signature Field Name: CustomerSignature" in out
    assert "Signature Field Name: ProviderSeal" in out
    assert out.count("Signature Validation: Signature is Valid.") == 2
    assert "Signer Certificate Common Name: Li Wei" in out
    assert out.strip().split("Signature #")[-1].count("- Total document signed") == 1

    # An appended update: pyHanko says modified (DocMDP broken); pdfsig no longer finds
    # any signature covering the whole file.
    tampered = _appended_update(final)
    bad = signatures.verify_pdf(tampered)
    assert bad.status == "modified", bad
    assert any(r.docmdp_ok is False or r.modification_level == "OTHER" for r in bad.signatures)
    out = _pdfsig(tampered, tmp_path, "tampered.pdf")
    assert "Signature Field Name: ProviderSeal" in out
    assert "- Total document signed" not in out
    assert "- Not total document signed" in out


def test_the_audit_record_prints_what_recomputes_its_chain(demo, signatory, tmp_path):
    contract = _contract(demo)
    _sign(contract, demo["customer"])
    cs.contract_countersign(contract=contract, actor=signatory)
    _seal(contract)
    audit = contract_documents.AUDIT.document(contract)
    data = _read(audit)
    assert signatures.verify_pdf(data).status == "valid"
    path = tmp_path / "audit.pdf"
    path.write_bytes(data)
    text = subprocess.run(
        ["pdftotext", "-raw", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    flat = re.sub(r"\s+", "", text)
    for entry in contract.audit.order_by("seq"):
        assert entry.hash in flat
        # The exact text hashed: id of the actor and the microsecond time included.
        assert re.sub(r"\s+", "", contract_documents.chain_body(entry)) in flat
    assert ("Time (UTC)" in text and "Site time" in text) or (
        "时间（UTC）" in text and "站点时间" in text
    )
    # Each event is named in the record's language (its key stays in the hashed text).
    with translation.override(contract.language):
        labels = {e.kind: re.sub(r"\s+", "", e.kind_label) for e in contract.audit.all()}
    assert labels["customer_signed"] != "customer_signed"
    assert all(label in flat for label in labels.values()), labels
    out = io.StringIO()
    call_command("contract_verify_chain", "--audit-pdf", str(path), stdout=out)
    assert f"{contract.number}: ok ({contract.audit.count()} entries" in out.getvalue()
    # A changed entry in the attached chain is found.
    files = signatures.embedded_files(data)
    assert files and b'"kind":"customer_signed"' in files[0].replace(b'\\"', b'"')


def test_a_seal_that_failed_for_good_is_asked_again_by_the_sweep_once(
    demo, signatory, settings, local_tsa
):
    from billing.tasks import documents as document_tasks

    contract = _contract(demo)
    _sign(contract, demo["customer"])
    cs.contract_countersign(contract=contract, actor=signatory)
    # The timestamping authority is down: sealing fails (the task gives up after its
    # retries); the relay had handed its message to the broker.
    settings.PORTAL_SIGNING_TSA_URL = "http://127.0.0.1:9/tsa"
    settings.PORTAL_SIGNING_TSA_TIMEOUT_S = 1
    with pytest.raises(signatures.SigningFailed):
        document_tasks.document_seal_contract.run(contract.pk, contract.language)
    OutboxMessage.objects.update(status="published")
    contract.refresh_from_db()
    assert not contract.final_sha256
    # Within the wait nothing is asked (the task may still be retrying) ...
    assert cs.contracts_seal_sweep() == cs.SealSweep(seals=0, audits=0, emails=0)
    # ... after it the seal is asked once, however often the sweep runs.
    later = timezone.now() + cs.SEAL_SWEEP_AFTER + timedelta(minutes=1)
    assert cs.contracts_seal_sweep(now=later).seals == 1
    assert cs.contracts_seal_sweep(now=later).seals == 0
    asked = OutboxMessage.objects.get(status="pending")
    assert asked.steps == [[contract_documents.SEAL_TASK, [contract.pk, contract.language]]]
    # The TSA is back: the asked task seals; the sweep then asks the audit record and the
    # email the failure left out (their messages lost too), once.
    settings.PORTAL_SIGNING_TSA_URL = local_tsa.url
    document_tasks.document_seal_contract.run(contract.pk, contract.language)
    contract.refresh_from_db()
    assert contract.final_sha256
    OutboxMessage.objects.update(status="published")
    assert cs.contracts_seal_sweep(now=later) == cs.SealSweep(seals=0, audits=1, emails=1)
    assert cs.contracts_seal_sweep(now=later) == cs.SealSweep(seals=0, audits=0, emails=0)
    asked = {m.steps[0][0] for m in OutboxMessage.objects.filter(status="pending")}
    assert asked == {contract_documents.AUDIT_TASK, cs.SEALED_EMAIL_TASK}


def test_countersigning_needs_the_permission_a_signatory_and_above_the_limit_two(
    demo, signatory, settings
):
    contract = _contract(demo)
    _sign(contract, demo["customer"])
    users = type(demo["sales"]).objects
    finance = users.get(username="finance")
    with pytest.raises(DomainError, match="not authorised"):
        cs.contract_countersign(contract=contract, actor=finance)
    # The permission alone is not enough: a signatory record names who signs.
    ops = users.get(username="ops")
    ops.user_permissions.add(Permission.objects.get(codename="countersign_contract"))
    ops = type(ops).objects.get(pk=ops.pk)
    with pytest.raises(DomainError, match="no signatory authority"):
        cs.contract_countersign(contract=contract, actor=ops)
    # Above the threshold: the signatory approves, a second user confirms.
    settings.PORTAL_COUNTERSIGN_SECOND_APPROVAL_ABOVE = {"CNY": 1000}
    first = cs.contract_countersign(contract=contract, actor=signatory)
    assert not first.countersigned
    contract.refresh_from_db()
    assert contract.status == ContractStatus.CUSTOMER_SIGNED
    with pytest.raises(DomainError, match="second approver"):
        cs.contract_countersign(contract=contract, actor=signatory)
    done = cs.contract_countersign(contract=contract, actor=ops)
    assert done.countersigned
    contract.refresh_from_db()
    assert contract.status == ContractStatus.COUNTERSIGNED
    assert contract.countersigner == signatory and contract.approver == ops
    # The signatory's name and title as the contract's language prints them.
    assert (contract.countersigner_name, contract.countersigner_title) in {
        ("Wang Fang", "Chief Financial Officer"),
        ("王芳", "首席财务官"),
    }
    sealed = _read(_seal(contract))
    verdict = signatures.verify_pdf(sealed)
    assert verdict.status == "valid"
    assert any(r.kind == "approval" and r.intact for r in verdict.signatures)


def test_signing_codes_have_a_cool_down_and_a_cap_per_contract_and_hour(demo):
    contract = _contract(demo)
    customer = demo["customer"]
    cs.signing_code_send(contract=contract, user=customer)
    with pytest.raises(DomainError, match=r"in \d+ seconds"):
        cs.signing_code_send(contract=contract, user=customer)
    sent = sum(1 for m in mail.outbox if "signing code" in m.subject)
    for _ in range(cs.CODES_PER_CONTRACT_HOUR - 1):
        SigningCode.objects.update(created_at=timezone.now() - timedelta(minutes=2))
        cs.signing_code_send(contract=contract, user=customer)
    SigningCode.objects.update(created_at=timezone.now() - timedelta(minutes=2))
    with pytest.raises(DomainError, match="last hour"):
        cs.signing_code_send(contract=contract, user=customer)
    assert sum(1 for m in mail.outbox if "signing code" in m.subject) == (
        sent + cs.CODES_PER_CONTRACT_HOUR - 1
    )
    # An hour later codes can be asked for again.
    SigningCode.objects.update(created_at=timezone.now() - timedelta(minutes=61))
    cs.signing_code_send(contract=contract, user=customer)


def test_a_wrong_code_keeps_the_typed_name_and_title(demo, client):
    contract = _contract(demo)
    draft = contract_documents.draft_document(contract=contract)
    client.force_login(demo["customer"])
    client.post(reverse("dashboard_contract_code", args=[contract.order.number]))
    page = client.post(
        reverse("dashboard_contract_sign", args=[contract.order.number]),
        {
            "full_name": "Li Wei",
            "title": "Chief Technology Officer",
            "consent": "on",
            "code": "000000" if "000000" not in mail.outbox[-1].body else "111111",
            "pdf_sha256": draft.sha256,
        },
    )
    assert page.status_code == 400
    html = page.content.decode()
    assert "The code is not right." in html
    assert 'value="Li Wei"' in html and 'value="Chief Technology Officer"' in html


def test_the_verify_page_caps_the_size_limits_each_client_and_labels_times(
    demo, signatory, client, settings
):
    contract = _contract(demo)
    _sign(contract, demo["customer"])
    cs.contract_countersign(contract=contract, actor=signatory)
    data = _read(_seal(contract))
    url = reverse("contract_verify")
    page = client.post(url, {"file": SimpleUploadedFile("c.pdf", data, "application/pdf")})
    html = page.content.decode()
    assert page.status_code == 200 and contract.number in html
    assert "Time (UTC)" in html and "Site time" in html and "UTC+08:00" in html
    signed_at = contract.signed_at.astimezone(timezone.get_fixed_timezone(0))
    assert signed_at.strftime("%Y-%m-%d %H:") in html  # the UTC column
    # Too large: refused before the upload is parsed.
    settings.CONTRACT_VERIFY_MAX_BYTES = 100 * 1024
    big = b"%PDF-1.7\n" + b"0" * (300 * 1024)
    page = client.post(url, {"file": SimpleUploadedFile("big.pdf", big, "application/pdf")})
    assert page.status_code == 413 and "larger than" in page.content.decode()
    # Per client and hour.
    settings.CONTRACT_VERIFY_MAX_BYTES = 10 * 1024 * 1024
    settings.CONTRACT_VERIFY_PER_HOUR = 2
    kwargs = {"REMOTE_ADDR": "198.51.100.77"}
    for ip in ("198.51.100.77", "198.51.100.78"):  # counts of an earlier run in this hour
        cache.delete(f"contract-verify:{hashlib.sha256(ip.encode()).hexdigest()[:32]}")
    codes = [
        client.post(
            url, {"file": SimpleUploadedFile("x.pdf", b"%PDF-1.4", "application/pdf")}, **kwargs
        ).status_code
        for _ in range(3)
    ]
    assert codes == [200, 200, 429]
    other = client.post(
        url,
        {"file": SimpleUploadedFile("x.pdf", b"%PDF-1.4", "application/pdf")},
        REMOTE_ADDR="198.51.100.78",
    )
    assert other.status_code == 200


def test_contract_emails_ready_to_sign_and_sealed_attached_in_the_customers_language(
    demo, signatory
):
    contract = _contract(demo)
    draft = contract_documents.draft_document(contract=contract)
    cs.contract_document_rendered(contract=contract, document=draft)
    steps = [name for m in OutboxMessage.objects.all() for name, _args in m.steps]
    assert cs.READY_EMAIL_TASK in steps
    mail.outbox.clear()
    assert contract_emails.contract_ready_email_send(contract_id=contract.pk) == "sent"
    assert contract_emails.contract_ready_email_send(contract_id=contract.pk) == "skipped"
    ready = mail.outbox[-1]
    assert contract.number in ready.subject
    assert demo["customer"].email in ready.to
    if contract.language.startswith("zh"):
        assert "签署" in ready.subject
    _sign(contract, demo["customer"])
    cs.contract_countersign(contract=contract, actor=signatory)
    _seal(contract)
    steps = [name for m in OutboxMessage.objects.all() for name, _args in m.steps]
    assert cs.SEALED_EMAIL_TASK in steps
    mail.outbox.clear()
    assert contract_emails.contract_sealed_email_send(contract_id=contract.pk) == "sent"
    sealed = mail.outbox[-1]
    names = [a[0] for a in sealed.attachments]
    assert names == [f"{contract.number}-signed.pdf", f"{contract.number}-audit.pdf"]
    assert sealed.attachments[0][1][:4] == b"%PDF"
    assert contract_emails.contract_sealed_email_send(contract_id=contract.pk) == "skipped"


def test_each_seller_entity_seals_with_its_own_certificate(demo):
    from billing.models import SellerEntity

    sz = SellerEntity.objects.get(site=demo["sz"])
    hk = SellerEntity.objects.get(site=demo["hk"])
    pdf = contract_documents.render_contract_pdf(contract=_contract(demo, nodes=1), language="en")
    a = signatures.verify_pdf(signatures.seal_pdf(pdf, seller=sz)).signatures[0]
    b = signatures.verify_pdf(signatures.seal_pdf(pdf, seller=hk)).signatures[0]
    assert sz.legal_name in a.signer and hk.legal_name in b.signer
    assert a.issuer != b.issuer
    with pytest.raises(CommandError):
        call_command("contract_verify_chain", "--audit-pdf", "/dev/null", stdout=io.StringIO())
