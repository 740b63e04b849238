"""Delivery details a customer can connect with: per node the public and fabric
addresses, the SSH user, the host keys and their fingerprints; the jump host; the ssh line,
an ``~/.ssh/config`` and ``known_hosts`` lines; and when billing starts.

Host keys come from the node itself when its driver can read them (the simulated node
makes real Ed25519 and ECDSA keys when its OS is installed), else from operations'
known_hosts file (``VALIDATION_SSH_KNOWN_HOSTS``, the same file the validation runner
trusts: filled when a node is racked and checked against the BMC console). They are kept
on the run's node at delivery (``RunNode.host_keys``), so the page shows what was
delivered. Fingerprints are SHA-256 over the key blob in base64 without padding, as
``ssh-keygen -l`` and the first ``ssh`` prompt print them.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import paramiko
from django.conf import settings

from billing.models import Order
from inventory.models import Node
from provisioning.drivers.base import DriverError, HardwareDriver
from provisioning.models import ProvisioningRun, RunKind, RunNode, RunNodeState, RunStatus

logger = logging.getLogger(__name__)


def fingerprint(key_line: str) -> str:
    """``SHA256:…`` of an OpenSSH public key line ("ssh-ed25519 AAAA… [comment]")."""
    parts = key_line.split()
    if len(parts) < 2:
        raise ValueError("not an OpenSSH public key line")
    blob = base64.b64decode(parts[1].encode(), validate=True)
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _entry(key_line: str) -> dict[str, str] | None:
    parts = key_line.split()
    try:
        return {
            "type": parts[0],
            "key": f"{parts[0]} {parts[1]}",
            "fingerprint": fingerprint(key_line),
        }
    except (ValueError, IndexError):
        return None


def _known_hosts(names: list[str]) -> list[str]:
    path = settings.VALIDATION_SSH_KNOWN_HOSTS
    if not path or not Path(path).is_file():
        return []
    try:
        known = paramiko.HostKeys(path)
    except (OSError, paramiko.SSHException) as exc:
        logger.warning("known_hosts %s could not be read: %s", path, exc)
        return []
    for name in names:
        found = known.lookup(name)
        if found:
            return [f"{kind} {key.get_base64()}" for kind, key in found.items()]
    return []


def delivered_host_keys(node: Node, driver: HardwareDriver | None) -> list[dict[str, str]]:
    """The node's host keys at delivery: from its driver, else from known_hosts."""
    lines: list[str] = []
    if driver is not None:
        try:
            lines = driver.host_keys()
        except DriverError as exc:
            logger.warning("Host keys of %s could not be read: %s", node.hostname, exc)
    if not lines:
        lines = _known_hosts([n for n in (node.hostname, node.ip_address) if n])
    return [e for e in map(_entry, lines) if e is not None]


def jump_host(order: Order) -> str:
    """The site's jump host, else the portal's (``PORTAL_SSH_JUMP_HOST``), else none."""
    return order.site.ssh_jump_host or settings.PORTAL_SSH_JUMP_HOST


@dataclass
class NodeAccess:
    hostname: str
    public_address: str
    fabric_address: str
    user: str
    host_keys: list[dict[str, str]]
    ssh_line: str


@dataclass
class DeliveryAccess:
    nodes: list[NodeAccess]
    jump_host: str
    delivered_at: datetime | None
    billing_starts_at: datetime
    early: bool  # delivered before the rental starts: the days before are not billed
    ssh_config: str = ""
    known_hosts: str = ""


def _ssh_config(nodes: list[NodeAccess], jump: str) -> str:
    blocks = []
    for n in nodes:
        lines = [f"Host {n.hostname}"]
        lines.append(f"    HostName {n.public_address or n.hostname}")
        lines.append(f"    User {n.user}")
        if jump:
            lines.append(f"    ProxyJump {jump}")
        lines.append(f"    HostKeyAlias {n.hostname}")
        lines.append("    StrictHostKeyChecking yes")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n" if blocks else ""


def _known_hosts_text(nodes: list[NodeAccess]) -> str:
    # With HostKeyAlias the key is looked up under the hostname alone.
    return "".join(f"{n.hostname} {k['key']}\n" for n in nodes for k in n.host_keys)


def order_access(order: Order, run: ProvisioningRun | None = None) -> DeliveryAccess | None:
    """What the customer connects with, once the order's provisioning run delivered."""
    if run is None:
        run = (
            ProvisioningRun.objects.filter(order=order, kind=RunKind.PROVISION)
            .order_by("-created_at")
            .first()
        )
    if run is None or run.status != RunStatus.DELIVERED:
        return None
    jump = jump_host(order)
    nodes = []
    delivered: datetime | None = None
    for rn in (
        RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE)
        .select_related("node")
        .order_by("slot", "pk")
    ):
        public = rn.addresses[0] if rn.addresses else (rn.node.ip_address or "")
        user = rn.ssh_user or "root"
        target = f"{user}@{public or rn.node.hostname}"
        nodes.append(
            NodeAccess(
                hostname=rn.node.hostname,
                public_address=public,
                fabric_address=rn.node.fabric_address or "",
                user=user,
                host_keys=list(rn.host_keys or []),
                ssh_line=f"ssh -J {jump} {target}" if jump else f"ssh {target}",
            )
        )
        if rn.delivered_at and (delivered is None or rn.delivered_at > delivered):
            delivered = rn.delivered_at
    return DeliveryAccess(
        nodes=nodes,
        jump_host=jump,
        delivered_at=delivered,
        billing_starts_at=order.start_at,
        early=delivered is not None and delivered < order.start_at,
        ssh_config=_ssh_config(nodes, jump),
        known_hosts=_known_hosts_text(nodes),
    )
