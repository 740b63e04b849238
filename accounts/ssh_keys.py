"""SSH public keys: parse and judge one ``authorized_keys`` line (no Django models here).

Accepted: ed25519, ECDSA (P-256/384/521) and RSA of at least 3072 bits. Anything else
(DSA, short RSA, garbage, a private key pasted by mistake) is refused with a message that
says why. Parsing is done by the ``cryptography`` package, not by pattern matching.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from django.utils.translation import gettext as _

RSA_MIN_BITS = 3072
MAX_KEY_LENGTH = 16_384


class InvalidSshKey(ValueError):
    """The text is not an acceptable SSH public key; ``str()`` says why, for people."""


@dataclass(frozen=True)
class ParsedSshKey:
    algorithm: str  # "ed25519", "ecdsa", "rsa"
    bits: int
    fingerprint: str  # "SHA256:..." as ssh-keygen -l prints it
    comment: str
    line: str  # the normalised authorized_keys line: type, base64, comment


def parse_public_key(text: str) -> ParsedSshKey:
    """Parse one OpenSSH public key line; raise ``InvalidSshKey`` with the reason."""
    line = " ".join((text or "").strip().split())
    if not line:
        raise InvalidSshKey(_("Paste an SSH public key."))
    if len(line) > MAX_KEY_LENGTH:
        raise InvalidSshKey(_("This text is too long to be an SSH public key."))
    if "PRIVATE KEY" in line:
        raise InvalidSshKey(
            _("This is a private key. Never share it: paste the public key (the .pub file).")
        )
    parts = line.split(" ", 2)
    if len(parts) < 2:
        raise InvalidSshKey(
            _("An SSH public key looks like “ssh-ed25519 AAAA… comment”: type, key, comment.")
        )
    kind, blob = parts[0], parts[1]
    comment = parts[2] if len(parts) > 2 else ""
    if kind in ("ssh-dss", "ssh-dsa"):
        raise InvalidSshKey(_("DSA keys are not accepted: use ed25519, ECDSA or RSA ≥ 3072 bits."))
    try:
        key = serialization.load_ssh_public_key(f"{kind} {blob}".encode())
    except (ValueError, TypeError, IndexError):
        raise InvalidSshKey(
            _(
                "This is not a valid SSH public key (type “%(kind)s”). Accepted: ed25519, "
                "ECDSA or RSA of at least 3072 bits."
            )
            % {"kind": kind[:40]}
        ) from None
    except Exception as exc:
        raise InvalidSshKey(
            _("This key type is not supported (%(reason)s).") % {"reason": str(exc)[:100]}
        ) from None
    if isinstance(key, ed25519.Ed25519PublicKey):
        algorithm, bits = "ed25519", 256
    elif isinstance(key, ec.EllipticCurvePublicKey):
        algorithm, bits = "ecdsa", key.curve.key_size
    elif isinstance(key, rsa.RSAPublicKey):
        algorithm, bits = "rsa", key.key_size
        if bits < RSA_MIN_BITS:
            raise InvalidSshKey(
                _(
                    "This RSA key has %(bits)s bits; at least %(min)s are required. Create "
                    "an ed25519 key instead: ssh-keygen -t ed25519"
                )
                % {"bits": bits, "min": RSA_MIN_BITS}
            )
    else:
        raise InvalidSshKey(
            _("This key type is not accepted: use ed25519, ECDSA or RSA ≥ 3072 bits.")
        )
    raw = base64.b64decode(blob)
    digest = base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
    normalised = f"{kind} {blob}" + (f" {comment}" if comment else "")
    return ParsedSshKey(algorithm, bits, f"SHA256:{digest}", comment, normalised)
