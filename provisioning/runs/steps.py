"""Executing a slot's steps: each step is safe to run twice.

``steps_execute`` reads each step's recorded state under its row lock first (done:
nothing to do; running under a live lease: someone else is at it), takes a lease, acts
through the node's driver outside any transaction, then records the outcome only if its
lease is still the current one (in the same short transaction as the next step's lease).
A node that fails a step after its retries is swapped for a spare (``swaps``); a node
that fails cleaning goes to faulty (``cleaning``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from core import lifecycle
from core.texts import Text
from inventory import services as inventory_services
from inventory.models import Node, NodeStatus
from provisioning.drivers.base import DriverError, HardwareDriver, ImageProfileSpec
from provisioning.models import (
    NodeStep,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
    StepName,
    StepStatus,
)
from provisioning.runs.cleaning import clean_node_failed
from provisioning.runs.drivers import driver_for
from provisioning.runs.fabric import fabric_allocate
from provisioning.runs.failure import run_fail
from provisioning.runs.plan import LOG_EXCERPT_CHARS, STEP_LEASE_GRACE_S, STEP_LIMIT_S, steps_for
from provisioning.runs.records import active_run_node, step_move
from provisioning.runs.swaps import node_swap

logger = logging.getLogger(__name__)


class StepBusy(Exception):
    """Another worker holds this step's lease: try again a little later."""


class StepTransient(Exception):
    """A transient driver error: the step goes back to waiting and is retried later."""

    def __init__(self, message: str, attempt: int) -> None:
        super().__init__(message)
        self.attempt = attempt


@dataclass(frozen=True)
class StepOutcome:
    status: str  # "done", "failed", "stopped"
    message: str = ""


def _claim_node(node: Node) -> str:
    node = Node.objects.select_for_update().get(pk=node.pk)
    if node.status == NodeStatus.PROVISIONING:
        return _("Already claimed.")
    if node.status == NodeStatus.AVAILABLE:
        node = inventory_services.node_transition(
            node=node, to_status=NodeStatus.RESERVED, reason=Text("Booked by a paid order.")
        )
    if node.status != NodeStatus.RESERVED:
        raise DriverError(
            _("%(node)s cannot be provisioned: it is %(status)s.")
            % {"node": node.hostname, "status": node.get_status_display()}
        )
    inventory_services.node_transition(
        node=node, to_status=NodeStatus.PROVISIONING, reason=Text("Provisioning started.")
    )
    return _("Claimed.")


def _act(run: ProvisioningRun, step: NodeStep, driver: HardwareDriver | None) -> str:
    """Do the step's work; returns a message. Raises ``DriverError`` on failure."""
    order = run.order
    name = step.name
    node = step.node
    if name == StepName.CLAIM:
        with transaction.atomic():
            return _claim_node(node)
    if name == StepName.FABRIC:
        hostnames = list(
            RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).values_list(
                "node__hostname", flat=True
            )
        )
        allocation = fabric_allocate(order=order, hostnames=hostnames)
        return _("Isolated in %(key)s.") % {"key": str(allocation)}
    assert driver is not None
    limit = settings.PORTAL_REDFISH_POWER_TIMEOUT_S
    if name == StepName.POWER_OFF:
        driver.power_off()
        driver.wait_power_state("off", timeout_s=limit, poll_s=settings.PORTAL_REDFISH_POLL_S)
        return _("Powered off.")
    if name == StepName.NETWORK_BOOT:
        driver.set_one_time_boot("pxe")
        return _("Next boot: network.")
    if name == StepName.POWER_ON:
        driver.power_on()
        driver.wait_power_state("on", timeout_s=limit, poll_s=settings.PORTAL_REDFISH_POLL_S)
        return _("Powered on.")
    if name == StepName.INSTALL:
        profile = order.image_profile
        if profile is None:
            raise DriverError(_("The order names no OS image."))
        driver.install_image(
            ImageProfileSpec(
                name=profile.name, image_url=profile.image_url, sha256=profile.sha256 or None
            )
        )
        return _("Installed %(image)s.") % {"image": profile.name}
    if name == StepName.ACCESS:
        keys = list(order.ssh_keys.values_list("public_key", flat=True))
        user = order.image_profile.ssh_user if order.image_profile else "root"
        driver.inject_access(ssh_public_keys=keys, username=user)
        return ngettext(
            "%(count)s SSH key installed for %(user)s.",
            "%(count)s SSH keys installed for %(user)s.",
            len(keys),
        ) % {
            "count": len(keys),
            "user": user,
        }
    if name == StepName.BOOT_OS:
        driver.boot_os()
        return _("Booted the OS.")
    if name == StepName.CHECK_OS:
        if not driver.ping_os():
            raise DriverError(_("The OS on %(node)s does not answer.") % {"node": node.hostname})
        return _("The OS answers.")
    if name == StepName.ERASE:
        driver.secure_erase()
        return _("Disks erased.")
    if name == StepName.BIOS_RESET:
        driver.bios_reset()
        return _("BIOS settings reset.")
    if name == StepName.CHECK_CLEAN:
        inventory = driver.inventory()
        state = driver.power_state()
        if state != "off":
            raise DriverError(
                _("%(node)s is still powered %(state)s after cleaning.")
                % {"node": node.hostname, "state": state}
            )
        return _("Checked (%(maker)s), powered off.") % {"maker": inventory.manufacturer or "?"}
    raise DriverError(f"unknown step {name!r}")


def _needs_driver(name: str) -> bool:
    return name not in (StepName.CLAIM, StepName.FABRIC)


@dataclass
class _Acted:
    """A step acted on, whose outcome is not recorded yet."""

    step_id: int
    attempt: int
    error: DriverError | None
    message: str
    log: str
    finished: datetime


def _lease_moves(
    step: NodeStep, *, launch: int | None, now: datetime
) -> tuple[StepOutcome | None, list[lifecycle.Move]]:
    """Under the step's lock: an outcome when there is nothing to do (the run is over or
    relaunched, the step done or failed), else the moves that take its lease. Raises
    ``StepBusy`` while another worker holds a live lease."""
    run = step.run
    if run.status not in (RunStatus.RUNNING, RunStatus.VALIDATING):
        return StepOutcome("stopped"), []
    if launch is not None and launch != run.launch:
        return StepOutcome("stopped"), []
    if step.status in (StepStatus.DONE, StepStatus.SKIPPED):
        return StepOutcome("done", step.message), []
    if step.status == StepStatus.FAILED:
        return StepOutcome("failed", step.message), []
    if step.status == StepStatus.RUNNING:
        if step.lease_until and step.lease_until > now:
            raise StepBusy(step.message)
        # The worker that held it died: back to pending (its own event), then leased.
        step_move(step, StepStatus.PENDING, _("The worker running this step was lost."))
    attempt = step.attempt + 1
    return None, [
        lifecycle.Move(
            step,
            StepStatus.RUNNING,
            _("Attempt %(n)s.") % {"n": attempt},
            {
                "attempt": attempt,
                "started_at": now,
                "finished_at": None,
                "lease_until": now
                + timedelta(seconds=STEP_LIMIT_S.get(step.name, 600) + STEP_LEASE_GRACE_S),
                "message": _("Running: %(step)s.") % {"step": step.get_name_display()},
            },
        )
    ]


def _outcome_move(
    step: NodeStep, acted: _Acted
) -> tuple[StepOutcome | None, lifecycle.Move | None, StepTransient | None]:
    """Under the step's lock: the move that records what ``acted`` found, if its lease is
    still the current one. Returns (an outcome that ends the slot's advance, or None when
    the step is done; the move; a transient error to raise after the commit)."""
    if step.status != StepStatus.RUNNING or step.attempt != acted.attempt:
        return StepOutcome("stopped"), None, None  # the reaper or a staff action took it
    log = acted.log[-LOG_EXCERPT_CHARS:]
    error = acted.error
    if error is None:
        return (
            None,
            lifecycle.Move(
                step,
                StepStatus.DONE,
                acted.message[:2000],
                {
                    "finished_at": acted.finished,
                    "lease_until": None,
                    "message": acted.message,
                    "log_excerpt": log,
                },
            ),
            None,
        )
    if error.retryable and acted.attempt <= settings.PORTAL_PROVISIONING_STEP_RETRIES:
        move = lifecycle.Move(
            step,
            StepStatus.PENDING,
            str(error)[:2000],
            {
                "lease_until": None,
                "message": _("Retrying after a transient error: %(e)s") % {"e": error},
                "log_excerpt": log,
            },
        )
        return StepOutcome("retry", str(error)), move, StepTransient(str(error), acted.attempt)
    move = lifecycle.Move(
        step,
        StepStatus.FAILED,
        str(error)[:2000],
        {
            "finished_at": acted.finished,
            "lease_until": None,
            "message": str(error),
            "log_excerpt": log,
        },
    )
    return StepOutcome("failed", str(error)), move, None


def _perform(step: NodeStep, attempt: int, drivers: dict[int, HardwareDriver]) -> _Acted:
    """Do the leased step's work through the node's driver, outside any transaction."""
    run, node = step.run, step.node
    error: DriverError | None = None
    message = ""
    log = ""
    try:
        driver = None
        if _needs_driver(step.name):
            driver = drivers.get(node.pk)
            if driver is None or attempt > 1:
                driver = driver_for(run, node, attempt=attempt)
                drivers[node.pk] = driver
        recorded = len(getattr(driver, "steps", None) or ())
        message = _act(run, step, driver)
        operations = (getattr(driver, "steps", None) or [])[recorded:]  # this step's own
        if operations:
            log = "\n".join(
                f"{s.operation}: {s.simulated_s:g} s (simulated)" + (" FAILED" if s.failed else "")
                for s in operations
            )
    except DriverError as exc:
        error = exc
        log = str(exc)
    except Exception as exc:
        logger.exception("step %s failed unexpectedly", step.pk)
        error = DriverError(f"{type(exc).__name__}: {exc}")
        log = str(error)
    if error is not None:
        drivers.pop(node.pk, None)  # its state is unknown now: rebuilt from the record
    return _Acted(step.pk, attempt, error, message, log, timezone.now())


def steps_execute(
    *,
    step_ids: list[int],
    launch: int | None = None,
    now: datetime | None = None,
    drivers: dict[int, HardwareDriver] | None = None,
) -> StepOutcome:
    """Run a node's steps in order, each once: check the record, take a lease, act,
    record the outcome; stop at the first that does not end done.

    Returns "done" (all of them, now or before; the last one's message), "failed" (a
    step failed after its retries: the caller swaps the node) or "stopped" (the run is
    over or relaunched, or someone else took a step over). Raises ``StepBusy`` while
    another worker holds a live lease and ``StepTransient`` for a retryable driver error
    (after recording it).

    One short transaction between two steps records the outcome of one and takes the
    lease of the next (the two steps' row locks, one event insert, one update): a worker
    killed at any point leaves each step either not started, leased (the reaper resumes
    it once the lease runs out) or recorded, so no step is done twice. The steps' rows are
    the only ones written while a node works: the nodes of a run never wait for each
    other's locks. ``drivers``: the caller's drivers by node id, kept across steps (a
    node's driver is built, and its state restored from the record, once per task).
    """
    drivers = {} if drivers is None else drivers
    acted: _Acted | None = None
    queue: list[int | None] = [*step_ids, None]  # None: record the last one's outcome
    message = ""
    for step_id in queue:
        ids = [i for i in (acted.step_id if acted else None, step_id) if i is not None]
        ending: StepOutcome | None = None
        transient: StepTransient | None = None
        busy: StepBusy | None = None
        leased: NodeStep | None = None
        with transaction.atomic():
            locked = {
                s.pk: s
                for s in NodeStep.objects.select_for_update(of=("self",))
                .select_related("node", "run", "run__order", "run__order__image_profile")
                .filter(pk__in=ids)
                .order_by("pk")
            }
            moves: list[lifecycle.Move] = []
            if acted is not None:
                ending, move, transient = _outcome_move(locked[acted.step_id], acted)
                if move is not None:
                    moves.append(move)
                if ending is None:
                    message = acted.message
            if ending is None and step_id is not None:
                step = locked[step_id]
                try:
                    early, lease = _lease_moves(step, launch=launch, now=now or timezone.now())
                except StepBusy as exc:
                    busy, early, lease = exc, None, []
                now = None  # the caller's time applies to the first lease only
                if early is not None and early.status == "done":
                    message = early.message
                elif early is not None:
                    ending = early
                moves.extend(lease)
                if lease:
                    leased = step
            lifecycle.transition_each(moves)
            if leased is not None and (
                leased.run.kind in (RunKind.PROVISION, RunKind.REPLACE)
                and _needs_driver(leased.name)
                and leased.node.status in (NodeStatus.AVAILABLE, NodeStatus.RESERVED)
            ):
                _claim_node(leased.node)  # a retried run finds its nodes released
        if transient is not None:
            raise transient
        if busy is not None:
            raise busy
        if ending is not None:
            return ending
        acted = _perform(leased, leased.attempt, drivers) if leased is not None else None
    return StepOutcome("done", message)


def step_execute(
    *,
    step_id: int,
    launch: int | None = None,
    now: datetime | None = None,
    drivers: dict[int, HardwareDriver] | None = None,
) -> StepOutcome:
    """Run one step once (``steps_execute`` of one step): "done" (now or before),
    "failed" (after its retries) or "stopped"; raises ``StepBusy`` / ``StepTransient``."""
    return steps_execute(step_ids=[step_id], launch=launch, now=now, drivers=drivers)


def slot_advance(*, run_id: int, slot: int, upto: str, launch: int | None = None) -> str:
    """Bring the node in ``slot`` through every step up to ``upto``; a node that fails a
    step is swapped for a spare, which then catches up from its first step."""
    while True:
        run = ProvisioningRun.objects.get(pk=run_id)
        if run.status not in (RunStatus.RUNNING, RunStatus.VALIDATING):
            return "stopped"
        if launch is not None and launch != run.launch:
            return "stopped"
        run_node = active_run_node(run, slot)
        if run_node is None:
            return "no-node"
        names = steps_for(run.kind)
        last = names.index(upto)
        todo = list(
            NodeStep.objects.filter(run=run, node=run_node.node, name__in=names[: last + 1])
            .exclude(status__in=[StepStatus.DONE, StepStatus.SKIPPED])
            .order_by("position")
            .values_list("pk", flat=True)
        )
        if not todo:
            return "ok"
        outcome = steps_execute(step_ids=todo, launch=launch)
        if outcome.status == "done":
            return "ok"
        if outcome.status == "stopped":
            return "stopped"
        # failed after its retries
        if run.kind == RunKind.CLEAN:
            clean_node_failed(run=run, run_node=run_node, reason=outcome.message)
            return "failed"
        spare = node_swap(run=run, run_node=run_node, reason=outcome.message)
        if spare is None:
            run_fail(
                run=run,
                reason=Text(
                    "%(node)s failed and no spare is free: %(why)s",
                    node=run_node.node.hostname,
                    why=outcome.message,
                ),
            )
            return "failed"
