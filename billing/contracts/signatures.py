"""The provider's PAdES seal on contract PDFs, and its verification: the only module that
imports ``pyhanko``.

- ``seal_pdf(data)`` signs the PDF with the provider's key (a PKCS#12 file named by
  ``PORTAL_SIGNING_P12`` with ``PORTAL_SIGNING_P12_PASSPHRASE``), as an incremental update
  (PAdES baseline, SHA-256), with an RFC 3161 timestamp from ``PORTAL_SIGNING_TSA_URL``
  when one is configured.
- ``verify_pdf(data)`` answers with pyHanko's validator: ``valid`` (signed with our key and
  unchanged since), ``modified`` (a signature whose bytes no longer match) or ``unknown``
  (no signature, not our key, or not a PDF). Trust is a separate question: the demo's
  self-signed certificate is not trusted by anyone, and need not be for "unchanged".
- ``demo_certificate_ensure()`` makes the demo key and self-signed certificate once
  (``manage.py signing_demo_key``, run by ``make run`` through ``seed_demo``).
"""

from __future__ import annotations

import hashlib
import io
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID
from django.conf import settings
from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
from pyhanko.pdf_utils.reader import PdfFileReader
from pyhanko.sign import fields, signers, timestamps
from pyhanko.sign.validation import validate_pdf_signature
from pyhanko_certvalidator import ValidationContext

logger = logging.getLogger(__name__)

FIELD_NAME = "ProviderSeal"


class SigningKeyMissing(RuntimeError):
    """No PKCS#12 file at ``PORTAL_SIGNING_P12``."""


def demo_certificate_ensure(*, path: Path | None = None, passphrase: str | None = None) -> bool:
    """Create the demo key and self-signed certificate as a PKCS#12 file, once.

    Returns whether a file was created (an existing one is never replaced)."""
    path = Path(path or settings.PORTAL_SIGNING_P12)
    if path.exists():
        return False
    secret = (passphrase or settings.PORTAL_SIGNING_P12_PASSPHRASE).encode()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "CN"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, settings.PORTAL_PROVIDER_NAME),
            x509.NameAttribute(NameOID.COMMON_NAME, f"{settings.PORTAL_PROVIDER_BRAND} demo seal"),
        ]
    )
    now = datetime.now(tz=UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=True,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    data = pkcs12.serialize_key_and_certificates(
        b"seal", key, cert, None, serialization.BestAvailableEncryption(secret)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o600)
    tmp.replace(path)
    logger.info("Created the demo signing key and self-signed certificate at %s", path)
    return True


def _signer() -> signers.SimpleSigner:
    path = Path(settings.PORTAL_SIGNING_P12)
    if not path.exists():
        raise SigningKeyMissing(
            f"No signing key at {path}: set PORTAL_SIGNING_P12 (and its passphrase), "
            "or run `manage.py signing_demo_key` for the demo."
        )
    signer = signers.SimpleSigner.load_pkcs12(
        str(path), passphrase=settings.PORTAL_SIGNING_P12_PASSPHRASE.encode() or None
    )
    if signer is None:
        raise SigningKeyMissing(f"Could not read the PKCS#12 file at {path}.")
    return signer


def seal_pdf(data: bytes, *, reason: str = "", location: str = "") -> bytes:
    """``data`` with the provider's PAdES signature appended (incremental update)."""
    signer = _signer()
    timestamper = None
    if settings.PORTAL_SIGNING_TSA_URL:
        timestamper = timestamps.HTTPTimeStamper(settings.PORTAL_SIGNING_TSA_URL)
    meta = signers.PdfSignatureMetadata(
        field_name=FIELD_NAME,
        reason=reason or None,
        location=location or None,
        subfilter=fields.SigSeedSubFilter.PADES,
        md_algorithm="sha256",
    )
    out = io.BytesIO()
    writer = IncrementalPdfFileWriter(io.BytesIO(data))
    signers.sign_pdf(writer, meta, signer=signer, timestamper=timestamper, output=out)
    return out.getvalue()


@dataclass(frozen=True)
class Verdict:
    status: str  # "valid" | "modified" | "unknown"
    signer: str = ""
    signed_at: datetime | None = None
    detail: str = ""


def verify_pdf(data: bytes) -> Verdict:
    """Whether ``data`` carries our seal over bytes that are still as we signed them."""
    try:
        reader = PdfFileReader(io.BytesIO(data), strict=False)
        embedded = reader.embedded_signatures
    except Exception as exc:
        return Verdict("unknown", detail=f"not a readable PDF: {type(exc).__name__}")
    if not embedded:
        return Verdict("unknown", detail="no signature")
    our_cert = _signer().signing_cert
    ours = hashlib.sha256(our_cert.dump()).hexdigest()
    # Our own certificate is the trust root: the question is "sealed by us, unchanged?".
    context = ValidationContext(trust_roots=[our_cert])
    for sig in embedded:
        cert = sig.signer_cert
        if hashlib.sha256(cert.dump()).hexdigest() != ours:
            continue
        try:
            status = validate_pdf_signature(sig, signer_validation_context=context)
        except Exception as exc:
            return Verdict("modified", detail=f"validation failed: {type(exc).__name__}")
        who = cert.subject.human_friendly
        if not (status.intact and status.valid):
            return Verdict("modified", signer=who, detail="the signed bytes changed")
        if status.coverage is None or status.modification_level is None:
            return Verdict("modified", signer=who, detail="coverage unknown")
        covers_all = status.coverage.name == "ENTIRE_FILE"
        if not covers_all:
            return Verdict("modified", signer=who, detail="changed after signing")
        return Verdict("valid", signer=who, signed_at=status.signer_reported_dt)
    return Verdict("unknown", detail="not our signature")
