"""Delivery details a customer can connect with: addresses (public and fabric), the jump
host, host-key fingerprints the simulated node's real keys give, the ssh line, an ssh
config and known_hosts lines, and when billing starts; shown on the order page."""

import base64
import hashlib
import subprocess

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import translation

from provisioning import access, runs
from provisioning.drivers.base import ImageProfileSpec
from provisioning.drivers.simulated import SimulatedDriver
from provisioning.models import RunNode
from provisioning.tasks.runs import provisioning_email
from tests.provisioning.test_runs import drive, fast, paid  # noqa: F401 (fast: autouse)

pytestmark = pytest.mark.django_db


def test_fingerprints_match_ssh_keygen(tmp_path):
    driver = SimulatedDriver(hostname="sz-h100-009")
    driver.install_image(ImageProfileSpec(name="ubuntu-22.04", image_url="http://x/i.img"))
    lines = driver.host_keys()
    assert [line.split()[0] for line in lines] == ["ssh-ed25519", "ecdsa-sha2-nistp256"]
    for line in lines:
        key = tmp_path / "k.pub"
        key.write_text(line + "\n")
        out = subprocess.run(
            ["ssh-keygen", "-l", "-E", "sha256", "-f", str(key)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert access.fingerprint(line) in out.split()
    blob = base64.b64decode(lines[0].split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    assert access.fingerprint(lines[0]) == "SHA256:" + digest


def test_a_delivered_order_says_how_to_connect_and_when_billing_starts(demo, client):
    order = paid(demo, nodes=2)
    sz = order.site
    sz.ssh_jump_host = "jump.sz.example.net"
    sz.save(update_fields=["ssh_jump_host"])
    for i, rn_node in enumerate(order_nodes(order)):
        rn_node.ip_address, rn_node.fabric_address = f"198.18.9.{i + 1}", f"10.200.9.{i + 1}"
        rn_node.save(update_fields=["ip_address", "fabric_address"])
    run = drive(runs.provisioning_begin(order_id=order.pk))
    delivered = access.order_access(order, run)
    assert delivered is not None and len(delivered.nodes) == 2
    first = delivered.nodes[0]
    assert first.public_address.startswith("198.18.9.") and first.fabric_address.startswith(
        "10.200.9."
    )
    assert first.ssh_line == f"ssh -J jump.sz.example.net ubuntu@{first.public_address}"
    assert {k["type"] for k in first.host_keys} == {"ssh-ed25519", "ecdsa-sha2-nistp256"}
    assert all(k["fingerprint"].startswith("SHA256:") for k in first.host_keys)
    assert f"Host {first.hostname}\n    HostName {first.public_address}\n    User ubuntu\n" in (
        delivered.ssh_config
    )
    assert "ProxyJump jump.sz.example.net" in delivered.ssh_config
    assert first.host_keys[0]["key"] in delivered.known_hosts
    assert delivered.billing_starts_at == order.start_at and delivered.early
    # the delivery email carries the ssh lines, fingerprints and when billing starts
    mail.outbox.clear()
    assert provisioning_email(run.pk, "ready") >= 1
    body = mail.outbox[-1].body
    assert first.ssh_line in body and first.host_keys[0]["fingerprint"] in body
    # the keys kept are those the page shows
    stored = RunNode.objects.get(run=run, node__hostname=first.hostname).host_keys
    assert stored == first.host_keys

    client.force_login(demo["customer"])
    for language in ("en", "zh-hans"):
        with translation.override(language):
            url = reverse("dashboard_order", args=[order.number])
        page = client.get(url).content.decode()
        assert first.host_keys[0]["fingerprint"] in page
        assert "ProxyJump jump.sz.example.net" in page
        assert first.fabric_address in page
        starts = order.start_at.astimezone(sz.tzinfo)
        assert starts.strftime("%Y-%m-%d %H:%M") in page
    with translation.override("zh-hans"):
        page = client.get(reverse("dashboard_order", args=[order.number])).content.decode()
    start = page.index("data-delivery-access")
    section = page[start : page.index("</section>", start)]
    assert "计费" in section and "指纹" in section
    for english in ("Billing starts", "Host key fingerprints", "Public address", "Jump host"):
        assert english not in section


def order_nodes(order):
    from inventory.models import Node

    return list(Node.objects.filter(reservations__group=order.reservation_group))
