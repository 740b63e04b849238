"""The SSH-key pages: an organisation's owners add and remove public keys (ed25519, ECDSA,
RSA ≥ 3072 bits; anything else refused with its reason and the pasted text kept), every
member sees them, another organisation gets 404; an order chooses which keys to install
until its provisioning starts."""

from datetime import timedelta
from decimal import Decimal

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone, translation

from accounts import services as account_services
from accounts.models import MemberRole, Membership, Organisation, SshPublicKey
from billing.models import OrderStatus
from billing.orders import acceptance
from billing.orders.services import order_transition
from billing.quotes import services as qs

pytestmark = pytest.mark.django_db

User = get_user_model()


def openssh(private_key, comment: str = "") -> str:
    line = (
        private_key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    return f"{line} {comment}".strip()


def url(name, *args, lang="en"):
    with translation.override(lang):
        return reverse(name, args=args)


def text(response) -> str:
    return response.content.decode()


def accepted_order(demo):
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    return acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )


def member_of(org, username: str, role: str):
    user = User.objects.create_user(username, f"{username}@example.com", "pw-member-12345")
    Membership.objects.create(user=user, organisation=org, role=role)
    return user


def test_owner_adds_a_valid_key_and_sees_it_listed(client, demo):
    client.force_login(demo["customer"])
    line = openssh(ed25519.Ed25519PrivateKey.generate(), "li.wei@laptop")
    response = client.post(url("accounts:ssh_key_add"), {"name": "", "public_key": line})
    assert response.status_code == 302
    key = SshPublicKey.objects.get(organisation=demo["org"])
    assert (key.name, key.algorithm, key.public_key) == ("li.wei@laptop", "ed25519", line)
    page = client.get(url("accounts:ssh_keys"))
    assert page.status_code == 200
    assert key.fingerprint in text(page) and "li.wei@laptop" in text(page)
    assert f"Key “li.wei@laptop” added ({key.fingerprint})" in text(page)

    ecdsa = openssh(ec.generate_private_key(ec.SECP384R1()))
    client.post(url("accounts:ssh_key_add"), {"name": "ci runner", "public_key": ecdsa})
    assert sorted(demo["org"].ssh_keys.values_list("name", "bits")) == [
        ("ci runner", 384),
        ("li.wei@laptop", 256),
    ]


@pytest.mark.parametrize(
    ("pasted", "reason"),
    [
        (
            lambda: openssh(rsa.generate_private_key(public_exponent=65537, key_size=2048)),
            "This RSA key has 2048 bits; at least 3072 are required.",
        ),
        (lambda: "ssh-ed25519 AAAAnotbase64!! me", "This is not a valid SSH public key"),
        (lambda: "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXk", "This is a private key"),
        (lambda: "ssh-dss AAAAB3NzaC1kc3MAAACBAP me", "DSA keys are not accepted"),
    ],
)
def test_refused_keys_say_why_and_keep_what_was_typed(client, demo, pasted, reason):
    client.force_login(demo["customer"])
    line = pasted()
    response = client.post(url("accounts:ssh_key_add"), {"name": "old laptop", "public_key": line})
    assert response.status_code == 400
    body = text(response)
    assert reason in body
    assert 'value="old laptop"' in body  # nothing typed is lost
    assert line.split()[1][:12] in body
    assert not SshPublicKey.objects.exists()


def test_the_chinese_page_refuses_a_short_rsa_key_too(client, demo):
    client.force_login(demo["customer"])
    line = openssh(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    response = client.post(url("accounts:ssh_key_add", lang="zh-hans"), {"public_key": line})
    assert response.status_code == 400
    assert "2048" in text(response)
    assert not SshPublicKey.objects.exists()


def test_a_duplicate_key_is_refused(client, demo):
    client.force_login(demo["customer"])
    line = openssh(ed25519.Ed25519PrivateKey.generate())
    client.post(url("accounts:ssh_key_add"), {"public_key": line})
    again = client.post(url("accounts:ssh_key_add"), {"public_key": line + " copy"})
    assert again.status_code == 400
    assert "This key is already in your organisation" in text(again)
    assert SshPublicKey.objects.count() == 1


def test_members_see_the_keys_but_only_owners_change_them(client, demo):
    key = account_services.ssh_key_add(
        organisation=demo["org"],
        name="laptop",
        public_key=openssh(ed25519.Ed25519PrivateKey.generate()),
        actor=demo["customer"],
    )
    engineer = member_of(demo["org"], "engineer", MemberRole.MEMBER)
    client.force_login(engineer)
    page = client.get(url("accounts:ssh_keys"))
    assert page.status_code == 200 and key.fingerprint in text(page)
    assert "Add the key" not in text(page)
    line = openssh(ed25519.Ed25519PrivateKey.generate())
    assert client.post(url("accounts:ssh_key_add"), {"public_key": line}).status_code == 403
    assert client.post(url("accounts:ssh_key_remove"), {"key": key.pk}).status_code == 403
    assert list(demo["org"].ssh_keys.all()) == [key]

    client.force_login(demo["customer"])
    response = client.post(url("accounts:ssh_key_remove"), {"key": key.pk}, follow=True)
    assert "Key “laptop” removed." in text(response)
    assert not demo["org"].ssh_keys.exists()


def test_another_organisations_key_is_a_404(client, demo):
    key = account_services.ssh_key_add(
        organisation=demo["org"],
        name="laptop",
        public_key=openssh(ed25519.Ed25519PrivateKey.generate()),
        actor=None,
    )
    other = Organisation.objects.create(name="Other Lab", legal_name="Other Lab Ltd.")
    eve = member_of(other, "eve", MemberRole.OWNER)
    client.force_login(eve)
    assert client.post(url("accounts:ssh_key_remove"), {"key": key.pk}).status_code == 404
    assert client.post(url("accounts:ssh_key_remove"), {"key": "x"}).status_code == 404
    page = client.get(url("accounts:ssh_keys"))
    assert key.fingerprint not in text(page)
    assert SshPublicKey.objects.filter(pk=key.pk).exists()


def test_an_order_records_the_chosen_keys_until_provisioning_starts(client, demo):
    keys = [
        account_services.ssh_key_add(
            organisation=demo["org"],
            name=name,
            public_key=openssh(ed25519.Ed25519PrivateKey.generate()),
            actor=None,
        )
        for name in ("alice", "bob", "carol")
    ]
    order = accepted_order(demo)
    assert order.ssh_keys.count() == 3  # an order starts with all the organisation's keys
    client.force_login(demo["customer"])
    page = text(client.get(url("dashboard_order", order.number)))
    assert "Save the SSH keys" in page and "carol" in page

    response = client.post(
        url("dashboard_order_access", order.number),
        {"keys": [keys[0].pk, keys[2].pk]},
        follow=True,
    )
    assert "Saved: 2 SSH keys will be installed on the nodes." in text(response)
    assert sorted(order.ssh_keys.values_list("name", flat=True)) == ["alice", "carol"]
    assert f'value="{keys[2].pk}" checked' in text(response)

    # Another organisation's key (or garbage) is refused and nothing changes.
    other = Organisation.objects.create(name="Other Lab")
    foreign = account_services.ssh_key_add(
        organisation=other,
        name="eve",
        public_key=openssh(ed25519.Ed25519PrivateKey.generate()),
        actor=None,
    )
    for bad in ([keys[1].pk, foreign.pk], ["nope"]):
        response = client.post(
            url("dashboard_order_access", order.number), {"keys": bad}, follow=True
        )
        assert "Choose among your organisation&#x27;s SSH keys." in text(response)
        assert sorted(order.ssh_keys.values_list("name", flat=True)) == ["alice", "carol"]

    # Provisioning started: the keys are shown, no longer editable.
    order_transition(order=order, to_status=OrderStatus.PAID, actor=None, reason="test")
    order_transition(order=order, to_status=OrderStatus.PROVISIONING, actor=None, reason="test")
    page = text(client.get(url("dashboard_order", order.number)))
    assert "Save the SSH keys" not in page
    assert "Provisioning has started: the keys can no longer change." in page
    response = client.post(
        url("dashboard_order_access", order.number), {"keys": [keys[1].pk]}, follow=True
    )
    assert "access can no longer change" in text(response)
    assert sorted(order.ssh_keys.values_list("name", flat=True)) == ["alice", "carol"]


def test_billing_members_cannot_choose_an_orders_keys(client, demo):
    key = account_services.ssh_key_add(
        organisation=demo["org"],
        name="laptop",
        public_key=openssh(ed25519.Ed25519PrivateKey.generate()),
        actor=None,
    )
    order = accepted_order(demo)
    assert list(order.ssh_keys.all()) == [key]  # an order starts with all the keys
    client.force_login(member_of(demo["org"], "bookkeeper", MemberRole.BILLING))
    response = client.post(url("dashboard_order_access", order.number), {}, follow=True)
    assert "Only owners and members choose the SSH keys of an order." in text(response)
    assert list(order.ssh_keys.all()) == [key]
