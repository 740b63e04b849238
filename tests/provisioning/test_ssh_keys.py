"""SSH public keys: ed25519, ECDSA and RSA ≥ 3072 bits are accepted, everything else
refused with a clear message; keys belong to one organisation."""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

from accounts import services
from accounts.ssh_keys import InvalidSshKey, parse_public_key
from core.errors import DomainError


def openssh(key) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )


@pytest.mark.parametrize(
    ("key", "algorithm", "bits"),
    [
        (ed25519.Ed25519PrivateKey.generate(), "ed25519", 256),
        (ec.generate_private_key(ec.SECP256R1()), "ecdsa", 256),
        (ec.generate_private_key(ec.SECP384R1()), "ecdsa", 384),
        (rsa.generate_private_key(public_exponent=65537, key_size=3072), "rsa", 3072),
    ],
)
def test_accepted_keys(key, algorithm, bits):
    parsed = parse_public_key(openssh(key) + "  li.wei@lab ")
    assert (parsed.algorithm, parsed.bits) == (algorithm, bits)
    assert parsed.fingerprint.startswith("SHA256:") and parsed.comment == "li.wei@lab"


def test_short_rsa_is_refused_with_its_size():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(InvalidSshKey, match="2048 bits; at least 3072"):
        parse_public_key(openssh(key))


def test_dsa_garbage_and_private_keys_are_refused():
    key = dsa.generate_private_key(key_size=1024)  # noqa: S505 - refused, that is the point
    with pytest.raises(InvalidSshKey, match="DSA keys are not accepted"):
        parse_public_key(openssh(key))
    with pytest.raises(InvalidSshKey, match="not a valid SSH public key"):
        parse_public_key("ssh-ed25519 AAAAnotbase64!! me")
    with pytest.raises(InvalidSshKey, match="private key"):
        parse_public_key("-----BEGIN OPENSSH PRIVATE KEY----- abc")
    with pytest.raises(InvalidSshKey):
        parse_public_key("")


def test_keys_are_stored_per_organisation_once(demo):
    line = openssh(ed25519.Ed25519PrivateKey.generate())
    key = services.ssh_key_add(
        organisation=demo["org"], name="laptop", public_key=line, actor=demo["customer"]
    )
    assert key.algorithm == "ed25519" and key.public_key == line
    with pytest.raises(DomainError, match="already"):
        services.ssh_key_add(organisation=demo["org"], name="again", public_key=line, actor=None)
    with pytest.raises(DomainError, match="3072"):
        short = openssh(rsa.generate_private_key(public_exponent=65537, key_size=2048))
        services.ssh_key_add(organisation=demo["org"], name="old", public_key=short, actor=None)
    services.ssh_key_remove(organisation=demo["org"], key_id=key.pk)
    assert not demo["org"].ssh_keys.exists()


def _huge_rsa_line(bits: int) -> str:
    # An RSA public key of that size without generating one (minutes for 90,000 bits):
    # any odd modulus of the right length serialises as sshd would receive it.
    numbers = rsa.RSAPublicNumbers(e=65537, n=(1 << (bits - 1)) + 1 + 2 * 12345)
    return (
        numbers.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )


def test_rsa_over_sshds_limit_is_refused_with_its_size():
    """Issue 25, point 7: sshd refuses RSA keys over 16,384 bits; so do we, saying why."""
    with pytest.raises(InvalidSshKey, match="91994 bits; the servers' SSH accepts at most 16384"):
        parse_public_key(_huge_rsa_line(91_994) + " big@lab")
    assert parse_public_key(_huge_rsa_line(16_384)).bits == 16_384


def test_a_second_key_in_the_field_is_refused_not_folded_into_the_comment():
    first = openssh(ed25519.Ed25519PrivateKey.generate()) + " laptop"
    second = openssh(ec.generate_private_key(ec.SECP256R1())) + " desktop"
    for pasted in (f"{first}\n{second}", f"{first} {second}", f"{first}\r\n\r\n{second}\n"):
        with pytest.raises(InvalidSshKey, match="holds 2 keys"):
            parse_public_key(pasted)
    # A comment that merely mentions a key type is still one key.
    assert parse_public_key(f"{first} ssh-rsa is old").comment == "laptop ssh-rsa is old"


def test_the_add_service_refuses_two_keys_with_the_reason(demo):
    pasted = "\n".join(openssh(ed25519.Ed25519PrivateKey.generate()) for _ in range(2))
    with pytest.raises(DomainError, match="holds 2 keys"):
        services.ssh_key_add(
            organisation=demo["org"], name="two", public_key=pasted, actor=demo["customer"]
        )
