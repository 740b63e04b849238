"""A small RFC 3161 timestamping authority on 127.0.0.1 for the signature tests: an HTTP
server (``application/timestamp-query`` in, ``application/timestamp-reply`` out) whose
answers pyHanko's ``DummyTimeStamper`` signs with a TSA certificate under a root of its
own, so the portal talks to it exactly as to a real TSA URL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from asn1crypto import keys as asn1_keys
from asn1crypto import tsp
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from pyhanko.sign.timestamps.dummy_client import DummyTimeStamper
from pyhanko_certvalidator.registry import SimpleCertificateStore


def _cert(subject, key, issuer, issuer_key, *, ca):
    now = datetime.now(tz=UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _der(cert):
    return asn1_x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))


class LocalTSA:
    def __init__(self, folder: Path) -> None:
        root_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        tsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        root_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test TSA root")])
        tsa_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test TSA")])
        root = _cert(root_name, root_key, root_name, root_key, ca=True)
        tsa = _cert(tsa_name, tsa_key, root_name, root_key, ca=False)
        folder.mkdir(parents=True, exist_ok=True)
        self.root_pem = folder / "tsa-root.pem"
        self.root_pem.write_bytes(root.public_bytes(serialization.Encoding.PEM))
        self.requests = 0
        stamper = DummyTimeStamper(
            tsa_cert=_der(tsa),
            tsa_key=asn1_keys.PrivateKeyInfo.load(
                tsa_key.private_bytes(
                    serialization.Encoding.DER,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            ),
            certs_to_embed=SimpleCertificateStore.from_certs([_der(root)]),
        )
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                response = stamper.request_tsa_response(tsp.TimeStampReq.load(body)).dump()
                outer.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(response)))
                self.end_headers()
                self.wfile.write(response)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/tsa"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
