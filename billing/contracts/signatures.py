"""PAdES signatures on contract PDFs, and their verification: the only module that
imports ``pyhanko``.

What is signed, in order, all as incremental updates of one file (the first revision is
byte for byte the PDF the customer was shown):

1. ``customer_sign(data, seller=..., evidence=...)``: the customer's signature, a
   **certification** signature (DocMDP, P=2: later signatures and form filling are
   allowed, any other change breaks it) with a **per-signer certificate** that the
   seller's signing CA issues at that moment for this signature alone (after DocuSign's
   per-signer event certificates). The certificate names the signer, their title, their
   organisation and email, and carries the evidence (portal user, one-time code, IP,
   time) in its policy notice; its key exists only in memory while signing.
2. ``seal_pdf(data, reason=..., location=..., seller=..., signatory=...)``: the seller's
   seal (an approval signature with the seller entity's seal certificate), as the
   countersignature, naming the authorised signatory.

Each signature carries an RFC 3161 timestamp from ``PORTAL_SIGNING_TSA_URL`` when one is
set, plus the validation data (certificates and the CA's CRL in the DSS) and a document
timestamp (PAdES B-LTA).

Key material, one identity per seller entity (``PORTAL_SIGNING_DIR/<site code>/``) and
one for documents without a seller (``default/``): ``ca.p12`` + ``ca.pem`` (the signing
CA), ``seal.p12`` (the seal certificate, issued by that CA). ``identity_ensure`` creates
demo ones (``manage.py signing_demo_key``, ``seed_demo``); a real deployment puts a
licensed CA's material there (or plugs in another provider, ``PORTAL_SIGNING_PROVIDER``).

``verify_pdf(data)`` answers with pyHanko's validator, per signature and overall:
``valid`` (every signature ours, intact, and nothing but signatures and validation data
added after the first), ``modified`` or ``unknown``.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from asn1crypto import keys as asn1_keys
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.conf import settings
from django.utils.module_loading import import_string
from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
from pyhanko.pdf_utils.reader import PdfFileReader
from pyhanko.sign import fields, signers, timestamps
from pyhanko.sign.general import load_cert_from_pemder
from pyhanko.sign.signers import pdf_signer
from pyhanko.sign.timestamps.dummy_client import DummyTimeStamper
from pyhanko.sign.validation import validate_pdf_signature, validate_pdf_timestamp
from pyhanko_certvalidator import ValidationContext
from pyhanko_certvalidator.registry import SimpleCertificateStore

from billing.models import SellerEntity

logger = logging.getLogger(__name__)

CUSTOMER_FIELD = "CustomerSignature"
FIELD_NAME = "ProviderSeal"
DEFAULT_IDENTITY = "default"
# A per-signer certificate is valid from a minute before signing for this long: its key
# is thrown away after the one signature; the timestamp proves when it was used.
SIGNER_CERT_VALIDITY = timedelta(days=3650)


class SigningKeyMissing(RuntimeError):
    """No signing material for an identity (``PORTAL_SIGNING_DIR/<identity>/``)."""


class SigningFailed(RuntimeError):
    """The signature could not be made (the timestamping authority did not answer, ...)."""


# --- Identities: a signing CA and a seal certificate per seller entity -------------------


def identity_key(seller: Any = None) -> str:
    """The folder name of a seller entity's signing material (its site's code)."""
    if seller is None:
        return DEFAULT_IDENTITY
    return str(seller.site.code).lower()


def _identity_dir(key: str) -> Path:
    return Path(settings.PORTAL_SIGNING_DIR) / key


def _passphrase() -> bytes:
    return settings.PORTAL_SIGNING_P12_PASSPHRASE.encode()


def _name(*, organisation: str, common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "CN"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca,
        content_commitment=not ca,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o600)
    tmp.replace(path)


def _issue(
    *,
    subject: x509.Name,
    public_key: Any,
    issuer: x509.Name,
    issuer_key: Any,
    ca: bool,
    days: int = 3650,
    eku: list[x509.ObjectIdentifier] | None = None,
    extra: Iterable[tuple[x509.ExtensionType, bool]] = (),
) -> x509.Certificate:
    now = datetime.now(tz=UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(_key_usage(ca=ca), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )
    if not ca or issuer != subject:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
    if eku:
        builder = builder.add_extension(x509.ExtendedKeyUsage(eku), critical=True)
    for ext, critical in extra:
        builder = builder.add_extension(ext, critical=critical)
    return builder.sign(issuer_key, hashes.SHA256())


def _legal_name(seller: Any) -> str:
    if seller is None:
        return str(settings.PORTAL_PROVIDER_NAME)
    return str(seller.legal_name)


_ensure_lock = threading.Lock()


def identity_ensure(seller: Any = None) -> bool:
    """Create the demo signing CA and seal certificate of ``seller`` (None: the default
    identity) once; an existing identity, a production one included, is never replaced.
    Returns whether one was created."""
    folder = _identity_dir(identity_key(seller))
    with _ensure_lock:
        if (folder / "seal.p12").exists() and (folder / "ca.p12").exists():
            return False
        organisation = _legal_name(seller)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = _name(organisation=organisation, common_name=f"{organisation} signing CA (demo)")
        ca_cert = _issue(
            subject=ca_name,
            public_key=ca_key.public_key(),
            issuer=ca_name,
            issuer_key=ca_key,
            ca=True,
            days=7300,
        )
        seal_key = ec.generate_private_key(ec.SECP256R1())
        seal_cert = _issue(
            subject=_name(organisation=organisation, common_name=f"{organisation} contract seal"),
            public_key=seal_key.public_key(),
            issuer=ca_name,
            issuer_key=ca_key,
            ca=False,
        )
        # pyHanko's in-process timestamper signs with RSA only.
        tsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        tsa_cert = _issue(
            subject=_name(organisation=organisation, common_name=f"{organisation} demo TSA"),
            public_key=tsa_key.public_key(),
            issuer=ca_name,
            issuer_key=ca_key,
            ca=False,
            eku=[ExtendedKeyUsageOID.TIME_STAMPING],
        )
        enc = serialization.BestAvailableEncryption(_passphrase())
        _write_private(
            folder / "ca.p12",
            pkcs12.serialize_key_and_certificates(b"ca", ca_key, ca_cert, None, enc),
        )
        _write_private(
            folder / "tsa.p12",
            pkcs12.serialize_key_and_certificates(b"tsa", tsa_key, tsa_cert, [ca_cert], enc),
        )
        (folder / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        _write_private(
            folder / "seal.p12",
            pkcs12.serialize_key_and_certificates(b"seal", seal_key, seal_cert, [ca_cert], enc),
        )
        logger.info("Created demo signing material for %s at %s", organisation, folder)
        return True


def demo_certificate_ensure() -> bool:
    """Demo signing material for the default identity and every seller entity, once."""
    created = identity_ensure(None)
    for seller in SellerEntity.objects.select_related("site"):
        created = identity_ensure(seller) or created
    return created


def _load_p12(path: Path) -> tuple[Any, x509.Certificate, list[x509.Certificate]]:
    if not path.exists():
        raise SigningKeyMissing(
            f"No signing material at {path}: put the seller's CA and seal there "
            "(PORTAL_SIGNING_DIR), or run `manage.py signing_demo_key` for the demo."
        )
    key, cert, extra = pkcs12.load_key_and_certificates(path.read_bytes(), _passphrase())
    if key is None or cert is None:
        raise SigningKeyMissing(f"{path} holds no key and certificate.")
    return key, cert, list(extra or [])


def _asn1_cert(cert: x509.Certificate) -> asn1_x509.Certificate:
    return asn1_x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))


def _asn1_key(key: Any) -> asn1_keys.PrivateKeyInfo:
    return asn1_keys.PrivateKeyInfo.load(
        key.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _identity_material(seller: Any) -> tuple[Any, x509.Certificate, Path]:
    folder = _identity_dir(identity_key(seller))
    if settings.PORTAL_SIGNING_CREATE_DEMO_KEYS:
        identity_ensure(seller)
    ca_key, ca_cert, _extra = _load_p12(folder / "ca.p12")
    return ca_key, ca_cert, folder


def _crl(ca_key: Any, ca_cert: x509.Certificate) -> x509.CertificateRevocationList:
    """The CA's current (empty) revocation list: per-signer certificates are used once
    and never revoked; a compromised seal would be listed here."""
    now = datetime.now(tz=UTC)
    return (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca_cert.subject)
        .last_update(now - timedelta(minutes=1))
        .next_update(now + timedelta(days=7))
        .sign(ca_key, hashes.SHA256())
    )


def _our_roots() -> list[asn1_x509.Certificate]:
    """Every identity's signing CA (the default one and each seller entity's)."""
    base = Path(settings.PORTAL_SIGNING_DIR)
    if not base.exists():
        return []
    return [load_cert_from_pemder(str(pem)) for pem in sorted(base.glob("*/ca.pem"))]


def _trust_roots() -> list[asn1_x509.Certificate]:
    """Our signing CAs, plus the timestamping authorities' roots in
    ``PORTAL_SIGNING_TRUST_ROOTS`` (PEM or DER files)."""
    extra = [load_cert_from_pemder(str(path)) for path in settings.PORTAL_SIGNING_TRUST_ROOTS]
    return [*_our_roots(), *extra]


def _validation_context(*, crls: tuple[bytes, ...] = ()) -> ValidationContext:
    return ValidationContext(
        trust_roots=_trust_roots(),
        crls=list(crls),
        allow_fetching=False,
        revocation_mode="soft-fail",
    )


def _timestamper(seller: Any) -> timestamps.TimeStamper | None:
    url = settings.PORTAL_SIGNING_TSA_URL
    if not url:
        return None
    if url == "demo":
        # The demo's in-process timestamping authority (a TSA certificate issued by the
        # seller's demo CA): for ``make run`` only; production names a real TSA's URL.
        _ca_key, _ca_cert, folder = _identity_material(seller)
        key, cert, chain = _load_p12(folder / "tsa.p12")
        store = SimpleCertificateStore.from_certs([_asn1_cert(c) for c in chain])
        return DummyTimeStamper(
            tsa_cert=_asn1_cert(cert), tsa_key=_asn1_key(key), certs_to_embed=store
        )
    return timestamps.HTTPTimeStamper(url, timeout=settings.PORTAL_SIGNING_TSA_TIMEOUT_S)


def _sign(
    data: bytes,
    *,
    key: Any,
    cert: x509.Certificate,
    chain: list[x509.Certificate],
    meta_kwargs: dict[str, Any],
    crl: bytes,
    seller: Any,
) -> bytes:
    signer = signers.SimpleSigner(
        signing_cert=_asn1_cert(cert),
        signing_key=_asn1_key(key),
        cert_registry=SimpleCertificateStore.from_certs([_asn1_cert(c) for c in chain]),
    )
    timestamper = _timestamper(seller)
    meta = signers.PdfSignatureMetadata(
        subfilter=fields.SigSeedSubFilter.PADES,
        md_algorithm="sha256",
        embed_validation_info=timestamper is not None,
        use_pades_lta=timestamper is not None,
        validation_context=_validation_context(crls=(crl,)),
        # The validation data (chain, CRL) of the signature and of the document
        # timestamp go in before that timestamp, so the timestamp is the file's last
        # revision and covers all of it (``pdfsig``: "Total document signed").
        dss_settings=pdf_signer.DSSContentSettings(
            placement=pdf_signer.SigDSSPlacementPreference.TOGETHER_WITH_NEXT_TS,
            next_ts_settings=pdf_signer.TimestampDSSContentSettings(
                update_before_ts=True, include_vri=False
            ),
        ),
        **meta_kwargs,
    )
    out = io.BytesIO()
    writer = IncrementalPdfFileWriter(io.BytesIO(data), strict=False)
    try:
        signers.sign_pdf(writer, meta, signer=signer, timestamper=timestamper, output=out)
    except Exception as exc:  # the TSA, validation of our own chain, a broken PDF
        raise SigningFailed(f"{type(exc).__name__}: {exc}") from exc
    result = out.getvalue()
    if not result.startswith(data):  # pragma: no cover - an incremental update appends
        raise SigningFailed("the signed file does not start with the bytes signed")
    return result


# --- The customer's signature ------------------------------------------------------------


@dataclass(frozen=True)
class SignerEvidence:
    """Who signs and how we know it: recorded in the per-signer certificate."""

    name: str
    title: str
    email: str
    organisation: str
    user_id: int
    code_id: int
    ip: str
    at: datetime
    contract_number: str

    def notice(self) -> str:
        text = (
            f"Portal user {self.user_id} ({self.email}) signed contract "
            f"{self.contract_number} after email one-time code {self.code_id} was verified; "
            f"IP {self.ip or '-'}; {self.at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
        )
        return text[:200]  # RFC 5280: a user notice's explicit text is at most 200


class SigningProvider(Protocol):
    """What a signing provider does: the portal's own CA (``PortalCAProvider``), or a
    licensed CA (e签宝, 法大大) behind the same two calls."""

    code: str

    def customer_sign(self, data: bytes, *, seller: Any, evidence: SignerEvidence) -> bytes: ...

    def seal(
        self, data: bytes, *, seller: Any, reason: str, location: str, signatory: str
    ) -> bytes: ...


class PortalCAProvider:
    """The seller's own signing CA issues the customer a certificate for each signature;
    the seller's seal certificate countersigns. Proves integrity and who the portal
    authenticated; not a licensed CA (README: 电子签名法 Art. 13)."""

    code = "portal_ca"

    def customer_sign(self, data: bytes, *, seller: Any, evidence: SignerEvidence) -> bytes:
        ca_key, ca_cert, _folder = _identity_material(seller)
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "CN"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, evidence.organisation[:64] or "-"),
            x509.NameAttribute(NameOID.TITLE, evidence.title[:64] or "-"),
            x509.NameAttribute(NameOID.COMMON_NAME, evidence.name[:64]),
            x509.NameAttribute(NameOID.EMAIL_ADDRESS, evidence.email[:128]),
        ]
        policy = x509.PolicyInformation(
            # An arc under the "example" private enterprise number: a deployment with a
            # licensed CA has the CA's own policy here.
            x509.ObjectIdentifier("1.3.6.1.4.1.32473.1.1"),
            [x509.UserNotice(notice_reference=None, explicit_text=evidence.notice())],
        )
        cert = _issue(
            subject=x509.Name(attributes),
            public_key=key.public_key(),
            issuer=ca_cert.subject,
            issuer_key=ca_key,
            ca=False,
            days=SIGNER_CERT_VALIDITY.days,
            extra=[
                (x509.SubjectAlternativeName([x509.RFC822Name(evidence.email)]), False),
                (x509.CertificatePolicies([policy]), False),
            ],
        )
        crl = _crl(ca_key, ca_cert).public_bytes(serialization.Encoding.DER)
        return _sign(
            data,
            key=key,
            cert=cert,
            chain=[ca_cert],
            crl=crl,
            seller=seller,
            meta_kwargs={
                "field_name": CUSTOMER_FIELD,
                "certify": True,
                "docmdp_permissions": fields.MDPPerm.FILL_FORMS,
                "name": evidence.name,
                "reason": (
                    f"Customer signature of {evidence.contract_number}: {evidence.name}, "
                    f"{evidence.title}, {evidence.organisation}"
                )[:300],
                "contact_info": evidence.email,
                "prop_auth_type": fields.SigAuthType.PIN,
                "prop_auth_time": 0,
            },
        )

    def seal(
        self, data: bytes, *, seller: Any, reason: str, location: str, signatory: str
    ) -> bytes:
        ca_key, ca_cert, folder = _identity_material(seller)
        key, cert, chain = _load_p12(folder / "seal.p12")
        crl = _crl(ca_key, ca_cert).public_bytes(serialization.Encoding.DER)
        return _sign(
            data,
            key=key,
            cert=cert,
            chain=chain or [ca_cert],
            crl=crl,
            seller=seller,
            meta_kwargs={
                "field_name": _free_field(data, FIELD_NAME),
                "reason": reason or None,
                "location": location or None,
                "name": signatory or None,
            },
        )


def _free_field(data: bytes, base: str) -> str:
    """``base``, or ``base2``... when a signature field of that name is already filled."""
    try:
        taken = {
            s.field_name for s in PdfFileReader(io.BytesIO(data), strict=False).embedded_signatures
        }
    except Exception:
        taken = set()
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


def provider() -> SigningProvider:
    """The configured signing provider (``PORTAL_SIGNING_PROVIDER``, a dotted path)."""
    provider_class = import_string(settings.PORTAL_SIGNING_PROVIDER)
    instance: SigningProvider = provider_class()
    return instance


def customer_sign(data: bytes, *, seller: Any, evidence: SignerEvidence) -> bytes:
    """``data`` with the customer's certification signature appended."""
    return provider().customer_sign(data, seller=seller, evidence=evidence)


def seal_pdf(
    data: bytes,
    *,
    reason: str = "",
    location: str = "",
    seller: Any = None,
    signatory: str = "",
) -> bytes:
    """``data`` with the seal of ``seller`` (None: the default identity) appended as an
    incremental update, naming ``signatory`` when given."""
    return provider().seal(
        data, seller=seller, reason=reason, location=location, signatory=signatory
    )


# --- Verification ------------------------------------------------------------------------


@dataclass(frozen=True)
class SignatureReport:
    field: str
    kind: str  # "certification" | "approval" | "timestamp"
    signer: str
    issuer: str
    ours: bool
    intact: bool
    valid: bool
    trusted: bool
    docmdp_ok: bool | None
    coverage: str
    modification_level: str
    signed_at: datetime | None
    timestamp_at: datetime | None
    timestamp_trusted: bool


@dataclass(frozen=True)
class Verdict:
    status: str  # "valid" | "modified" | "unknown"
    signer: str = ""
    signed_at: datetime | None = None
    detail: str = ""
    signatures: tuple[SignatureReport, ...] = field(default_factory=tuple)


def _report(sig: Any, context: ValidationContext, our_roots: set[bytes]) -> SignatureReport:
    is_timestamp = sig.sig_object.get("/Type") == "/DocTimeStamp"
    status: Any
    if is_timestamp:
        status = validate_pdf_timestamp(sig, validation_context=context)
    else:
        status = validate_pdf_signature(
            sig, signer_validation_context=context, ts_validation_context=context
        )
    cert = sig.signer_cert
    path = status.validation_path
    root = path.trust_anchor.authority.certificate if path is not None else None
    ours = root is not None and root.dump() in our_roots
    ts = None if is_timestamp else status.timestamp_validity
    kind = (
        "timestamp" if is_timestamp else ("certification" if _is_certification(sig) else "approval")
    )
    level = getattr(status, "modification_level", None)
    return SignatureReport(
        field=sig.field_name,
        kind=kind,
        signer=cert.subject.human_friendly,
        issuer=cert.issuer.human_friendly,
        ours=ours,
        intact=bool(status.intact),
        valid=bool(status.valid),
        trusted=bool(status.trusted),
        docmdp_ok=status.docmdp_ok,
        coverage=status.coverage.name if status.coverage is not None else "",
        modification_level=level.name if level is not None else "",
        signed_at=status.timestamp if is_timestamp else status.signer_reported_dt,
        timestamp_at=status.timestamp if is_timestamp else (ts.timestamp if ts else None),
        timestamp_trusted=bool(
            (status if is_timestamp else ts) is not None
            and (status if is_timestamp else ts).trusted
        ),
    )


def _is_certification(sig: Any) -> bool:
    for ref in sig.sig_object.get("/Reference") or []:
        if ref.get("/TransformMethod") == "/DocMDP":
            return True
    return False


def _open(data: bytes | BinaryIO) -> PdfFileReader:
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    return PdfFileReader(stream, strict=False)


def verify_pdf(data: bytes | BinaryIO) -> Verdict:
    """Whether ``data`` carries our signatures over bytes that are still as signed, with
    nothing but signatures and validation data added since the first."""
    try:
        reader = _open(data)
        embedded = list(reader.embedded_signatures)
    except Exception as exc:
        return Verdict("unknown", detail=f"not a readable PDF: {type(exc).__name__}")
    if not embedded:
        return Verdict("unknown", detail="no signature")
    context = _validation_context()
    our_roots = {c.dump() for c in _our_roots()}
    reports = []
    for sig in embedded:
        try:
            reports.append(_report(sig, context, our_roots))
        except Exception as exc:
            logger.info("signature %s failed validation", sig.field_name, exc_info=True)
            return Verdict("modified", detail=f"validation failed: {type(exc).__name__}: {exc}")
    signing = [r for r in reports if r.kind != "timestamp"]
    if not any(r.ours for r in signing):
        return Verdict("unknown", detail="not our signature", signatures=tuple(reports))
    first = signing[0] if signing else reports[0]
    last = reports[-1]  # ENTIRE_REVISION: validation data follow, which the diff checks
    problems = []
    for r in reports:
        if not (r.intact and r.valid):
            problems.append(f"{r.field}: the signed bytes changed")
        elif r.docmdp_ok is False or r.modification_level == "OTHER":
            problems.append(f"{r.field}: the document changed after this signature")
    if last.coverage not in ("ENTIRE_FILE", "ENTIRE_REVISION"):
        problems.append("something was appended after the last signature")
    status = "modified" if problems else "valid"
    return Verdict(
        status,
        signer=first.signer,
        signed_at=first.signed_at,
        detail="; ".join(problems),
        signatures=tuple(reports),
    )


def embedded_files(data: bytes) -> list[bytes]:
    """The contents of the files attached to a PDF (its ``/EmbeddedFiles`` name tree, one
    level), in order: the audit record carries its chain as one."""
    root = _open(data).root
    try:
        names = root["/Names"]["/EmbeddedFiles"]["/Names"]
    except KeyError:
        return []
    found = []
    for i in range(1, len(names), 2):
        spec = names[i].get_object()
        try:
            found.append(spec["/EF"]["/F"].get_object().data)
        except KeyError:
            continue
    return found
