"""Reads of provisioning runs for the pages: per node and step, progress, ETA, message."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import Order
from provisioning.models import (
    NodeStep,
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
    StepStatus,
)


@dataclass
class NodeProgress:
    run_node: RunNode
    steps: list[NodeStep]
    percent: int
    message: str
    eta: datetime | None
    ssh_line: str = ""
    finished: list[NodeStep] = field(default_factory=list)


@dataclass
class RunProgress:
    run: ProvisioningRun
    nodes: list[NodeProgress]
    percent: int
    eta: datetime | None
    swaps: list[NodeSwap]
    jump_host: str
    message: str = ""  # what the run is doing now: its latest running step, else its own


def latest_run(order: Order, kind: str = RunKind.PROVISION) -> ProvisioningRun | None:
    return ProvisioningRun.objects.filter(order=order, kind=kind).order_by("-created_at").first()


def _scale() -> float:
    """Real seconds per expected (hardware) second: the simulated driver's time scale."""
    if settings.PORTAL_HARDWARE_DRIVER == "simulated":
        return max(settings.PORTAL_SIMULATED_TIME_SCALE, 0.0)
    return 1.0


def run_progress(run: ProvisioningRun) -> RunProgress:
    """Progress per node (time-weighted by each step's expected duration), ETA, messages."""
    now = timezone.now()
    scale = _scale()
    run_nodes = list(RunNode.objects.filter(run=run).select_related("node").order_by("slot", "pk"))
    steps = list(NodeStep.objects.filter(run=run).order_by("node_id", "position"))
    by_node: dict[int, list[NodeStep]] = {}
    for step in steps:
        by_node.setdefault(step.node_id, []).append(step)
    nodes: list[NodeProgress] = []
    jump = settings.PORTAL_SSH_JUMP_HOST
    total_weight = total_done = 0.0
    latest_eta: datetime | None = None
    current: NodeStep | None = None  # the latest step started and still running
    hostnames = {rn.node_id: rn.node.hostname for rn in run_nodes}
    for step in steps:
        if step.status == StepStatus.RUNNING and step.started_at:
            if current is None or step.started_at > current.started_at:
                current = step
    for rn in run_nodes:
        mine = by_node.get(rn.node_id, [])
        weight = sum(max(s.expected_s, 1.0) for s in mine) or 1.0
        done = 0.0
        remaining = 0.0
        message = ""
        for s in mine:
            w = max(s.expected_s, 1.0)
            if s.status in (StepStatus.DONE, StepStatus.SKIPPED):
                done += w
            elif s.status == StepStatus.RUNNING and s.started_at:
                elapsed = (now - s.started_at).total_seconds() / (scale or 1.0)
                part = min(elapsed, w * 0.95)
                done += part
                remaining += w - part
                message = s.message
            else:
                remaining += w
            if s.status == StepStatus.FAILED:
                message = s.message
        percent = round(100 * done / weight)
        eta = None
        if rn.state == RunNodeState.ACTIVE and run.is_active and remaining > 0:
            eta = now + timedelta(seconds=remaining * scale)
            latest_eta = max(latest_eta, eta) if latest_eta else eta
        if rn.state == RunNodeState.ACTIVE:
            total_weight += weight
            total_done += done
        user = rn.ssh_user or "root"
        host = rn.addresses[0] if rn.addresses else rn.node.hostname
        ssh = f"ssh -J {jump} {user}@{host}" if jump else f"ssh {user}@{host}"
        nodes.append(NodeProgress(rn, mine, percent, message, eta, ssh))
    return RunProgress(
        run=run,
        nodes=nodes,
        percent=round(100 * total_done / total_weight) if total_weight else 0,
        eta=latest_eta,
        swaps=list(NodeSwap.objects.filter(run=run).select_related("failed_node", "spare_node")),
        jump_host=jump,
        message=(
            _("%(node)s: %(step)s.")
            % {"node": hostnames.get(current.node_id, "?"), "step": current.get_name_display()}
            if current is not None and run.is_active
            else run.message
        ),
    )
