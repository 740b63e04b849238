"""An order's access details as text a machine uses: an OpenSSH config and an MPI-style
hostfile (``hostname slots=<GPUs>``), from the delivered nodes of its provisioning run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AccessNode:
    hostname: str
    user: str
    addresses: tuple[str, ...]
    gpus: int


def ssh_config(nodes: list[AccessNode], *, jump_host: str, order: str) -> str:
    lines = [f"# GPU portal order {order}"]
    for node in nodes:
        lines.append(f"Host {node.hostname}")
        lines.append(f"    HostName {node.addresses[0] if node.addresses else node.hostname}")
        lines.append(f"    User {node.user}")
        if jump_host:
            lines.append(f"    ProxyJump {jump_host}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def hostfile(nodes: list[AccessNode]) -> str:
    return "".join(f"{n.hostname} slots={max(n.gpus, 1)}\n" for n in nodes)
