"""SSH public keys: parse and judge one ``authorized_keys`` line (no Django models here).

Accepted: ed25519, ECDSA (P-256/384/521) and RSA of 3072 to 16,384 bits (OpenSSH's sshd
refuses larger RSA keys). Anything else (DSA, short or huge RSA, garbage, a private key
pasted by mistake, two keys pasted into one field) is refused with a message that says
why. Parsing is done by the ``cryptography`` package, not by pattern matching.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from django.utils.translation import gettext as _

RSA_MIN_BITS = 3072
#: OpenSSH's limit (``SSH_RSA_MAXIMUM_MODULUS_SIZE``): sshd refuses a larger key at login.
RSA_MAX_BITS = 16_384
MAX_KEY_LENGTH = 16_384
#: Where a public key starts: its type, then its base64 (which always begins "AAAA").
KEY_START = re.compile(r"(?:^|\s)((?:ssh|ecdsa|sk)-[\w@.-]+)\s+AAAA")


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
    starts = KEY_START.findall(line)
    if len(starts) > 1:
        raise InvalidSshKey(
            _(
                "This field holds %(n)s keys (%(types)s): paste one key here and add each "
                "other key on its own."
            )
            % {"n": len(starts), "types": ", ".join(starts[:5])}
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
        if bits > RSA_MAX_BITS:
            raise InvalidSshKey(
                _(
                    "This RSA key has %(bits)s bits; the servers' SSH accepts at most "
                    "%(max)s, so it could not log in. Create an ed25519 key instead: "
                    "ssh-keygen -t ed25519"
                )
                % {"bits": bits, "max": RSA_MAX_BITS}
            )
    else:
        raise InvalidSshKey(
            _("This key type is not accepted: use ed25519, ECDSA or RSA ≥ 3072 bits.")
        )
    raw = base64.b64decode(blob)
    digest = base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
    normalised = f"{kind} {blob}" + (f" {comment}" if comment else "")
    return ParsedSshKey(algorithm, bits, f"SHA256:{digest}", comment, normalised)
