"""What a node is judged as (its target: GPU model, fabric, the node type's figures; the
CPU path only for simulated hardware) and the runners that reach it (local or SSH, the
profile's time limit)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from core.errors import DomainError
from inventory.models import HardwareDriverKind, Node, NodeType
from provisioning.agent.profiles import PROFILES
from provisioning.drivers.base import CredentialsUnavailable, resolve_secret
from provisioning.validation import ssh
from provisioning.validation.interface import (
    AgentFailed,
    LineSink,
    NodeRunner,
    NodeTarget,
    local_runner,
)
from provisioning.validation.rules import normalize_gpu_model
from provisioning.validation.ssh import SshSettings


def runner_kind(node: Node) -> str:
    """How the agent reaches ``node``: ``local`` (a subprocess next to the worker, judged on
    the CPU path: the simulated driver, CI, ``make run`` and the Redfish emulator with its
    simulated in-band channel) or ``ssh`` (a real node). ``VALIDATION_AGENT_RUNNER``
    ``auto`` decides by the node's driver; ``local`` or ``ssh`` force one."""
    forced = settings.VALIDATION_AGENT_RUNNER
    if forced in ("local", "ssh"):
        return forced
    if forced != "auto":
        raise DomainError(_("No agent runner “%(name)s” is configured.") % {"name": forced})
    driver = node.driver or settings.PORTAL_HARDWARE_DRIVER
    if driver == HardwareDriverKind.SIMULATED or settings.PORTAL_REDFISH_IN_BAND == "simulated":
        return "local"
    return "ssh"


def judged_on_cpu(node: Node) -> bool:
    """True only for a node whose hardware is simulated: the simulated driver, or the
    Redfish emulator with the simulated in-band channel (``PORTAL_REDFISH_IN_BAND``, which
    the system check ``provisioning.E001`` refuses outside DEBUG and tests). No runner
    setting makes a GPU node a CPU node: ``VALIDATION_AGENT_RUNNER=local`` on a GPU node
    measures the worker's CPU and is rejected (``device_mismatch``)."""
    driver = node.driver or settings.PORTAL_HARDWARE_DRIVER
    return driver == HardwareDriverKind.SIMULATED or settings.PORTAL_REDFISH_IN_BAND == "simulated"


def node_type_target(
    node_type: NodeType, *, node_id: int = 0, hostname: str = "", address: str = ""
) -> NodeTarget:
    """What an agent document is judged against for a node of ``node_type``: its GPU
    model (``cpu`` for a node type without GPUs), fabric and figures."""
    gpu = node_type.gpu_model
    return NodeTarget(
        node_id=node_id,
        hostname=hostname or node_type.code,
        gpu_model=normalize_gpu_model(gpu.name) if gpu else "cpu",
        address=address,
        fabric=type_fabric(node_type),
        expected=type_expected(node_type),
    )


def node_target(node: Node) -> NodeTarget:
    """What the agent is judged against: the node type's GPU model, or ``cpu`` when the
    node's hardware is simulated (``judged_on_cpu``)."""
    target = node_type_target(
        node.node_type, node_id=node.pk, hostname=node.hostname, address=node.ip_address or ""
    )
    if judged_on_cpu(node):
        return dataclasses.replace(target, gpu_model="cpu")
    return target


def ssh_settings() -> SshSettings:
    """The SSH settings with the key resolved from its reference (``env:NAME`` or
    ``file:/path``); ``AgentFailed`` (``ssh_not_configured``) when something is missing.
    The key's text lives only in memory, never in a log, a task argument or the database."""
    reference = settings.VALIDATION_SSH_KEY
    if not reference:
        raise AgentFailed(
            "no SSH key is configured for validation (VALIDATION_SSH_KEY)",
            code="ssh_not_configured",
            setting="VALIDATION_SSH_KEY",
        )
    try:
        key = resolve_secret(reference)
        passphrase = (
            resolve_secret(settings.VALIDATION_SSH_KEY_PASSPHRASE)
            if settings.VALIDATION_SSH_KEY_PASSPHRASE
            else None
        )
    except CredentialsUnavailable as exc:
        raise AgentFailed(
            f"the validation SSH key is not available: {exc}",
            code="ssh_not_configured",
            setting="VALIDATION_SSH_KEY",
        ) from None
    return SshSettings(
        user=settings.VALIDATION_SSH_USER,
        known_hosts=settings.VALIDATION_SSH_KNOWN_HOSTS,
        private_key=key,
        passphrase=passphrase,
        port=settings.VALIDATION_SSH_PORT,
        connect_timeout_s=settings.VALIDATION_SSH_CONNECT_TIMEOUT_S,
        python=settings.VALIDATION_SSH_PYTHON,
    )


_FABRIC_KEYS = {"ib_ndr": "ndr400", "ib_hdr": "hdr200"}


def type_fabric(node_type: NodeType) -> str | None:
    """The cluster rules' fabric key of a node type: InfiniBand NDR ``ndr400``, HDR
    ``hdr200``, 100 Gb/s Ethernet or RoCE ``100g``; None (no fabric rule) otherwise."""
    if node_type.fabric in _FABRIC_KEYS:
        return _FABRIC_KEYS[node_type.fabric]
    return "100g" if node_type.nic_speed_gbps == 100 else None


def rule_fabric(node: Node) -> str | None:
    return type_fabric(node.node_type)


def type_expected(node_type: NodeType) -> dict[str, int]:
    """The node type's figures the rules compare with."""
    return {"gpu_count": node_type.gpu_count, "nics_per_node": node_type.nic_count}


def node_expected(node: Node) -> dict[str, int]:
    return type_expected(node.node_type)


def agent_timeout_s(profile: str) -> float:
    """The runner's limit for one agent: the profile's own (``agent.profiles``: acceptance
    40 min, covering DCGM -r 3) or ``VALIDATION_AGENT_TIMEOUT_S`` when larger."""
    limit = PROFILES[profile].time_limit_s if profile in PROFILES else 0.0
    return max(float(settings.VALIDATION_AGENT_TIMEOUT_S), limit)


class SshNodeRunner:
    """The agent over SSH on each node (``provisioning.validation.ssh``), and the cluster
    check's commands on the first node. ``resolve`` completes a target with the node's
    IP address (else its hostname is used), fabric and node-type figures."""

    parallel = True  # each node measures itself: all nodes at once (interface.collect_reports)
    streams = True  # the agent's lines reach ``on_line`` as they arrive (the run page)

    def __init__(
        self, *, timeout_s: float | None = None, sizes: Sequence[str] | None = None
    ) -> None:
        self.timeout_s = timeout_s  # None: the profile's limit (agent_timeout_s)
        self.sizes = settings.VALIDATION_AGENT_SIZES if sizes is None else sizes

    def resolve(self, target: NodeTarget) -> NodeTarget:
        node = Node.objects.select_related("node_type").filter(pk=target.node_id).first()
        if node is None:
            return target
        return dataclasses.replace(
            target,
            address=target.address or node.ip_address or "",
            fabric=target.fabric or rule_fabric(node),
            expected=target.expected or node_expected(node),
        )

    def __call__(
        self, target: NodeTarget, profile: str, on_line: LineSink | None = None
    ) -> dict[str, Any]:
        # No database here (it may run in a thread): validate_nodes resolved the target.
        return ssh.run_agent(
            ssh_settings(),
            target,
            profile,
            timeout_s=self.timeout_s or agent_timeout_s(profile),
            sizes=self.sizes,
            on_line=on_line,
        )

    def run_command(self, host: str, argv: Sequence[str], timeout_s: float) -> ssh.CommandResult:
        return ssh.run_command(ssh_settings(), host, argv, timeout_s=timeout_s)


def ssh_node_runner(
    *, timeout_s: float | None = None, sizes: Sequence[str] | None = None
) -> SshNodeRunner:
    return SshNodeRunner(timeout_s=timeout_s, sizes=sizes)


def agent_runner(*, simulated: bool, burn_in_seconds: int = 0) -> NodeRunner:
    """The runner a provisioning run uses: simulated nodes (the simulated driver, or Redfish
    with the simulated in-band channel) run the agent locally on the CPU path; real nodes
    (Redfish) over SSH. ``burn_in_seconds``: the simulated nodes' (scaled) burn-in length;
    real nodes run the ``burn_in`` profile's own 24 hours."""
    if simulated:
        sizes = list(settings.PORTAL_VALIDATION_CPU_SIZES)
        if burn_in_seconds:
            sizes.append(f"burn_in={burn_in_seconds}")
        return local_runner(
            timeout_s=settings.VALIDATION_AGENT_TIMEOUT_S + burn_in_seconds,
            sizes=sizes,
        )
    return ssh_node_runner()


class _PerNodeRunner(SshNodeRunner):
    """A stand-alone run's runner: per node local (CPU path) or SSH (``runner_kind``)."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        super().__init__()
        self.kinds = {n.pk: runner_kind(n) for n in nodes}
        # In parallel only when no node runs locally (local ones share this machine's CPUs).
        self.parallel = bool(self.kinds) and all(k == "ssh" for k in self.kinds.values())
        self.local = local_runner(
            timeout_s=settings.VALIDATION_AGENT_TIMEOUT_S, sizes=settings.VALIDATION_AGENT_SIZES
        )

    def _kind(self, target: NodeTarget) -> str:
        return self.kinds.get(target.node_id) or runner_kind(Node.objects.get(pk=target.node_id))

    def resolve(self, target: NodeTarget) -> NodeTarget:
        return target if self._kind(target) == "local" else super().resolve(target)

    def __call__(
        self, target: NodeTarget, profile: str, on_line: LineSink | None = None
    ) -> dict[str, Any]:
        if self._kind(target) == "local":
            return self.local(target, profile, on_line)
        return super().__call__(target, profile, on_line)


def default_runner(nodes: Sequence[Node] = ()) -> NodeRunner:
    """The runner of a stand-alone validation run: per node, local or SSH (``runner_kind``)."""
    return _PerNodeRunner(nodes)
