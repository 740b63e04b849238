"""Every write of a provisioning run: create and start, execute one step, validate,
deliver, swap a node, clean at the end, cancel, retry, and the reaper.

Steps are safe to run twice: ``steps_execute`` reads each step's recorded state under its
row lock first (done: nothing to do; running under a live lease: someone else is at it),
takes a lease, acts through the node's driver outside any transaction, then records the
outcome only if its lease is still the current one (in the same short transaction as the
next step's lease). Work that follows a commit (the Celery canvas, emails) is handed over
through ``core.jobs``; this module never imports the tasks.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing.models import Order, OrderStatus, ProvisioningRelease
from billing.orders.selectors import order_nodes
from billing.orders.services import order_transition
from core import jobs, lifecycle
from core.errors import DomainError
from core.types import Actor
from inventory import services as inventory_services
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    HardwareDriverKind,
    MaintenanceWindow,
    Node,
    NodeStatus,
    Reservation,
)
from provisioning.drivers.base import (
    BmcTarget,
    DriverError,
    HardwareDriver,
    ImageProfileSpec,
)
from provisioning.drivers.fabric import (
    FabricKey,
    FabricKind,
    KeyKind,
    SimulatedFabricManager,
)
from provisioning.drivers.inband import SimulatedInBand
from provisioning.drivers.redfish import RedfishDriver
from provisioning.drivers.simulated import SimulatedDriver, SimulatedTimings
from provisioning.models import (
    CLEAN_STEPS,
    PROVISION_STEPS,
    FabricAllocation,
    NodeStep,
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
    StepName,
    StepStatus,
)
from provisioning.models.runs import ACTIVE_RUN_STATUSES
from provisioning.spares import SpareCandidate, choose_spare
from provisioning.validation import contract
from provisioning.validation import selectors as validation_selectors
from provisioning.validation import services as validation_services

logger = logging.getLogger(__name__)

LAUNCH_TASK = "provisioning.tasks.provisioning_launch"
EMAIL_TASK = "provisioning.tasks.provisioning_email"

# Hard bound of each step (s): what a task running it may take, and its lease.
STEP_LIMIT_S: dict[str, int] = {
    StepName.CLAIM: 60,
    StepName.POWER_OFF: 600,
    StepName.NETWORK_BOOT: 120,
    StepName.POWER_ON: 900,
    StepName.INSTALL: 3600,
    StepName.ACCESS: 600,
    StepName.FABRIC: 120,
    StepName.BOOT_OS: 900,
    StepName.CHECK_OS: 300,
    StepName.VALIDATE: 1800,
    StepName.ERASE: 5400,
    StepName.BIOS_RESET: 600,
    StepName.CHECK_CLEAN: 300,
}
# What each step costs on real hardware (simulated seconds): the ETA on the pages.
_TIMINGS = SimulatedTimings()
STEP_EXPECTED_S: dict[str, float] = {
    StepName.CLAIM: 0.0,
    StepName.POWER_OFF: _TIMINGS.power_off,
    StepName.NETWORK_BOOT: _TIMINGS.set_one_time_boot,
    StepName.POWER_ON: _TIMINGS.power_on,
    StepName.INSTALL: _TIMINGS.install_image,
    StepName.ACCESS: _TIMINGS.inject_access,
    StepName.FABRIC: 1.0,
    StepName.BOOT_OS: _TIMINGS.boot_os,
    StepName.CHECK_OS: _TIMINGS.ping_os,
    StepName.VALIDATE: 120.0,
    StepName.ERASE: _TIMINGS.secure_erase,
    StepName.BIOS_RESET: _TIMINGS.bios_reset,
    StepName.CHECK_CLEAN: _TIMINGS.inventory,
}
LOG_EXCERPT_CHARS = 4000
# The canvas runs each slot's steps in phases, one task each, named by their last step;
# each task runs every step up to its own (skipping those done) within the time limit of
# the steps up to it. One phase per slot: a task per step, or per part of the steps, cost
# a broker round trip, a result, a chain hop and the slot's reads per node and phase for
# nothing, while each step's lease (its own limit) already bounds a step and lets the
# reaper resume a dead worker's. Add an end here to split a slot's work into more tasks.
PROVISION_PHASE_ENDS: tuple[str, ...] = (StepName.CHECK_OS,)
CLEAN_PHASE_ENDS: tuple[str, ...] = (StepName.CHECK_CLEAN,)


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


# --- drivers --------------------------------------------------------------------------------


def driver_kind(node: Node) -> str:
    """The node's own driver, else the portal's default (``PORTAL_HARDWARE_DRIVER``)."""
    kind = node.driver or settings.PORTAL_HARDWARE_DRIVER
    if kind not in HardwareDriverKind.values:
        raise DriverError(f"unknown hardware driver {kind!r}: use simulated or redfish")
    return kind


def driver_for(run: ProvisioningRun, node: Node, *, attempt: int = 0) -> HardwareDriver:
    """The driver of ``node``, its state restored from the steps the run has done."""
    kind = driver_kind(node)
    if kind == HardwareDriverKind.REDFISH:
        if not node.bmc_address:
            raise DriverError(f"{node.hostname} has no BMC address")
        target = BmcTarget.from_reference(
            url=node.bmc_address,
            system_id=node.bmc_system_id or node.hostname,
            username=node.bmc_username or None,
            password_ref=node.bmc_password_ref or None,
        )
        in_band = SimulatedInBand() if settings.PORTAL_REDFISH_IN_BAND == "simulated" else None
        return RedfishDriver(
            target,
            cleaning_image_url=settings.PORTAL_CLEANING_IMAGE_URL or None,
            in_band=in_band,
            power_timeout_s=settings.PORTAL_REDFISH_POWER_TIMEOUT_S,
            poll_s=settings.PORTAL_REDFISH_POLL_S,
        )
    fail = getattr(settings, "PORTAL_SIMULATED_FAIL", {}) or {}
    driver = SimulatedDriver(
        hostname=node.hostname,
        time_scale=settings.PORTAL_SIMULATED_TIME_SCALE,
        failure_rate=settings.PORTAL_SIMULATED_FAILURE_RATE,
        fail={h: set(ops) for h, ops in fail.items()},
        seed=f"{run.pk}:{attempt}",
    )
    # The simulated node keeps its state in memory: rebuild it from what is recorded.
    done = set(
        NodeStep.objects.filter(run=run, node=node, status=StepStatus.DONE).values_list(
            "name", flat=True
        )
    )
    if StepName.POWER_ON in done:
        driver.power = "on"
    if StepName.INSTALL in done:
        driver.installed_image = run.order.image_profile.name if run.order.image_profile else "os"
        driver.power = "on"
    if StepName.BOOT_OS in done:
        driver.os_running = True
    return driver


# --- creating and starting ---------------------------------------------------------------


def _create_steps(run: ProvisioningRun, node: Node, names: tuple[str, ...]) -> None:
    NodeStep.objects.bulk_create(
        [
            NodeStep(
                run=run,
                node=node,
                name=name,
                position=i,
                expected_s=STEP_EXPECTED_S.get(name, 0.0),
            )
            for i, name in enumerate(names)
        ],
        ignore_conflicts=True,
    )


def _steps_for(kind: str) -> tuple[str, ...]:
    if kind == RunKind.CLEAN:
        return CLEAN_STEPS
    return (*PROVISION_STEPS, StepName.VALIDATE)


def _deadline(now: datetime) -> datetime:
    # The nodes of a run proceed in parallel: each gets the per-node budget.
    return now + timedelta(minutes=settings.PORTAL_PROVISIONING_DEADLINE_MIN_PER_NODE)


@transaction.atomic
def run_create(
    *, order: Order, kind: str = RunKind.PROVISION, nodes: list[Node] | None = None
) -> ProvisioningRun:
    """The order's run of ``kind`` with a slot and its steps per node. Idempotent: an
    active run of that kind (or a delivered provisioning run) is returned as it is."""
    order = Order.objects.select_for_update().get(pk=order.pk)
    existing = (
        ProvisioningRun.objects.filter(order=order, kind=kind)
        .filter(
            Q(status__in=ACTIVE_RUN_STATUSES)
            | Q(status=RunStatus.DELIVERED, kind=RunKind.PROVISION)
        )
        .first()
    )
    if existing is not None:
        return existing
    nodes = nodes if nodes is not None else order_nodes(order)
    if not nodes:
        raise DomainError(_("Order %(n)s has no booked nodes to work on.") % {"n": order.number})
    run = ProvisioningRun.objects.create(
        order=order,
        kind=kind,
        driver=",".join(sorted({driver_kind(n) for n in nodes})),
        message=_("Waiting for a worker."),
    )
    RunNode.objects.bulk_create([RunNode(run=run, node=n, slot=i) for i, n in enumerate(nodes)])
    for node in nodes:
        _create_steps(run, node, _steps_for(kind))
    lifecycle.record_creation([run], reason=_("Created for order %(n)s.") % {"n": order.number})
    return run


def _launch(run: ProvisioningRun) -> None:
    """(Re)start the run's canvas after commit; older launches stop at their next step."""
    ProvisioningRun.objects.filter(pk=run.pk).update(launch=run.launch + 1)
    run.launch += 1
    jobs.enqueue(LAUNCH_TASK, run.pk, run.launch)


@transaction.atomic
def run_start(*, run: ProvisioningRun, actor: Actor = None) -> ProvisioningRun:
    """pending → running; the order paid → provisioning; the canvas is launched."""
    run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
    if run.status != RunStatus.PENDING:
        return run
    now = timezone.now()
    lifecycle.transition(
        run,
        to=RunStatus.RUNNING,
        actor=actor,
        reason=_("Started."),
        updates={"started_at": now, "deadline_at": _deadline(now), "message": _("Started.")},
        locked=True,
    )
    if run.kind == RunKind.PROVISION:
        order = Order.objects.select_for_update().get(pk=run.order_id)
        if order.status == OrderStatus.PAID:
            order_transition(
                order=order,
                to_status=OrderStatus.PROVISIONING,
                actor=actor,
                reason=_("Provisioning started."),
            )
    _launch(run)
    return run


def provisioning_begin(*, order_id: int) -> ProvisioningRun | None:
    """Create the paid order's run and start it now (safe to call twice). Paid orders go
    through ``provisioning_start_when_due``, which waits for the release's time."""
    order = Order.objects.filter(pk=order_id).first()
    if order is None or order.status not in (OrderStatus.PAID, OrderStatus.PROVISIONING):
        return None
    run = run_create(order=order)
    return run_start(run=run)


def provisioning_due_at(order_id: int) -> datetime | None:
    """When the order's run may start (the gate's ``provision_at``: the rental's start
    minus the site's lead time); ``None`` when the order was never released."""
    release = ProvisioningRelease.objects.filter(order_id=order_id).first()
    if release is None:
        return None
    return release.provision_at or release.released_at


def provisioning_start_when_due(
    *, order_id: int, now: datetime | None = None
) -> ProvisioningRun | datetime | None:
    """The entry point of a released order: its run is started if its time has come;
    otherwise the time it will start is returned (``provisioning_start_due`` starts it
    then). ``None``: not released, or not a paid order any more."""
    now = now or timezone.now()
    due = provisioning_due_at(order_id)
    if due is None:
        return None
    if due > now:
        return due
    return provisioning_begin(order_id=order_id)


def provisioning_start_due(*, now: datetime | None = None, limit: int = 100) -> int:
    """Beat: start the runs of released, paid orders whose time has come and that have no
    provisioning run yet. Idempotent: a started order is ``provisioning`` (no longer
    paid) and ``run_create`` returns an existing run. Returns how many were started."""
    now = now or timezone.now()
    has_run = ProvisioningRun.objects.filter(order=OuterRef("order"), kind=RunKind.PROVISION)
    due = list(
        ProvisioningRelease.objects.filter(order__status=OrderStatus.PAID)
        .filter(Q(provision_at__lte=now) | Q(provision_at__isnull=True))
        .filter(~Exists(has_run))
        .order_by("provision_at", "pk")
        .values_list("order_id", flat=True)[:limit]
    )
    started = 0
    for order_id in due:
        try:
            if provisioning_begin(order_id=order_id) is not None:
                started += 1
        except DomainError as exc:  # e.g. no booked nodes: say so, go on with the others
            logger.error("order %s could not start provisioning: %s", order_id, exc)
    return started


# --- steps ---------------------------------------------------------------------------------


def active_run_node(run: ProvisioningRun, slot: int) -> RunNode | None:
    return (
        RunNode.objects.select_related("node")
        .filter(run=run, slot=slot, state=RunNodeState.ACTIVE)
        .first()
    )


def _set_step(step: NodeStep, to: str, reason: str, **updates: Any) -> NodeStep:
    return lifecycle.transition(step, to=to, reason=reason[:2000], updates=updates, locked=True)


def _skip_steps(steps: Any, reason: str, actor: Actor = None) -> None:
    """Steps that will not run (their node left the run, or the run ended)."""
    locked = list(
        steps.select_for_update(of=("self",))
        .select_related("node")
        .filter(status__in=[StepStatus.PENDING, StepStatus.RUNNING])
    )
    if locked:
        lifecycle.transition_many(
            locked,
            to=StepStatus.SKIPPED,
            actor=actor,
            reason=reason,
            updates={"lease_until": None, "message": reason},
            locked=True,
        )


def _claim_node(node: Node) -> str:
    node = Node.objects.select_for_update().get(pk=node.pk)
    if node.status == NodeStatus.PROVISIONING:
        return _("Already claimed.")
    if node.status == NodeStatus.AVAILABLE:
        node = inventory_services.node_transition(
            node=node, to_status=NodeStatus.RESERVED, reason=_("Booked by a paid order.")
        )
    if node.status != NodeStatus.RESERVED:
        raise DriverError(
            _("%(node)s cannot be provisioned: it is %(status)s.")
            % {"node": node.hostname, "status": node.get_status_display()}
        )
    inventory_services.node_transition(
        node=node, to_status=NodeStatus.PROVISIONING, reason=_("Provisioning started.")
    )
    return _("Claimed.")


def fabric_allocate(*, order: Order, hostnames: list[str]) -> FabricAllocation:
    """The order's partition key / VLAN: the lowest free one; the same one when asked
    again. The partial unique constraint is what keeps two orders from sharing one."""
    existing = FabricAllocation.objects.filter(order=order, released_at__isnull=True).first()
    if existing is not None:
        return existing
    first = Node.objects.filter(hostname__in=hostnames).select_related("node_type").first()
    fabric = first.node_type.fabric if first else "ethernet"
    kind = {
        "ib_ndr": FabricKind.IB_NDR400,
        "ib_hdr": FabricKind.IB_HDR200,
        "roce_v2": FabricKind.ROCE_V2,
    }.get(fabric, FabricKind.ETHERNET)
    for _attempt in range(5):
        in_use = [
            FabricKey(KeyKind(k), v)
            for k, v in FabricAllocation.objects.filter(released_at__isnull=True).values_list(
                "kind", "value"
            )
        ]
        key = SimulatedFabricManager(in_use=in_use).allocate(
            order_ref=order.number, fabric_kind=kind, node_hostnames=hostnames
        )
        try:
            with transaction.atomic():
                return FabricAllocation.objects.create(
                    order=order, kind=key.kind.value, value=key.value, fabric=kind.value
                )
        except IntegrityError:
            existing = FabricAllocation.objects.filter(
                order=order, released_at__isnull=True
            ).first()
            if existing is not None:
                return existing
    raise DriverError("could not allocate a fabric key: too much contention")


def fabric_release(*, order: Order) -> int:
    return FabricAllocation.objects.filter(order=order, released_at__isnull=True).update(
        released_at=timezone.now()
    )


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
        _set_step(step, StepStatus.PENDING, _("The worker running this step was lost."))
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
                "lease_until": now + timedelta(seconds=STEP_LIMIT_S.get(step.name, 600) + 60),
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
                leased.run.kind == RunKind.PROVISION
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
        names = _steps_for(run.kind)
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
                reason=_("%(node)s failed and no spare is free: %(why)s")
                % {"node": run_node.node.hostname, "why": outcome.message},
            )
            return "failed"


# --- swaps ---------------------------------------------------------------------------------


def spare_candidates(
    *, order: Order, failed: Node, exclude: list[int], start_at: datetime
) -> list[SpareCandidate]:
    """Free nodes of the same type at the order's site for the rest of its period."""
    busy = Reservation.objects.filter(
        node=OuterRef("pk"),
        status__in=ACTIVE_RESERVATION_STATUSES,
        start_at__lt=order.end_at,
        end_at__gt=start_at,
    )
    maintained = MaintenanceWindow.objects.filter(
        node=OuterRef("pk"), start_at__lt=order.end_at, end_at__gt=start_at
    )
    rows = (
        Node.objects.filter(
            site_id=failed.site_id, node_type_id=failed.node_type_id, status=NodeStatus.AVAILABLE
        )
        .exclude(pk__in=exclude)
        .filter(~Exists(busy), ~Exists(maintained))
        .values_list("pk", "hostname", "leaf_switch_id", "rack_id")
    )
    return [SpareCandidate(*row) for row in rows]


def node_swap(
    *, run: ProvisioningRun, run_node: RunNode, reason: str, actor: Actor = None
) -> RunNode | None:
    """The failed node goes to faulty with the reason; a spare takes its slot (booked
    through ``inventory_services.reservation_swap``). ``None`` when no spare is free or the
    slot used up its swaps. Safe to call twice: a slot already swapped returns its spare."""
    now = timezone.now()
    for _attempt in range(3):  # a spare taken meanwhile by another booking: choose again
        with transaction.atomic():
            current = RunNode.objects.select_for_update().select_related("node").get(pk=run_node.pk)
            if current.state != RunNodeState.ACTIVE:
                return active_run_node(run, current.slot)
            order = Order.objects.get(pk=run.order_id)
            failed = Node.objects.get(pk=current.node_id)
            if failed.status not in (NodeStatus.FAULTY, NodeStatus.RETIRED):
                inventory_services.node_mark_faulty(node=failed, actor=actor, reason=reason[:1000])
            _skip_steps(
                NodeStep.objects.filter(run=run, node=failed), _("Node swapped out."), actor
            )
            used = NodeSwap.objects.filter(
                run=run,
                failed_node__in=RunNode.objects.filter(run=run, slot=current.slot).values("node"),
            ).count()
            run_nodes = list(RunNode.objects.filter(run=run).select_related("node"))
            cluster_leaves = {
                rn.node.leaf_switch_id for rn in run_nodes if rn.state == RunNodeState.ACTIVE
            }
            spare = None
            if used < settings.PORTAL_PROVISIONING_MAX_SWAPS_PER_NODE:
                spare = choose_spare(
                    spare_candidates(
                        order=order,
                        failed=failed,
                        exclude=[rn.node_id for rn in run_nodes],
                        start_at=max(now, order.start_at),
                    ),
                    failed_leaf_id=failed.leaf_switch_id,
                    failed_rack_id=failed.rack_id,
                    cluster_leaf_ids=cluster_leaves,
                )
            if spare is None:
                NodeSwap.objects.create(
                    order=order,
                    run=run,
                    failed_node=failed,
                    reason=reason,
                    failed_at=now,
                    requested_by=actor if getattr(actor, "is_authenticated", False) else None,
                )
                RunNode.objects.filter(pk=current.pk).update(state=RunNodeState.SWAPPED_OUT)
                return None
            reservation = (
                Reservation.objects.filter(
                    node=failed,
                    group=order.reservation_group,
                    status__in=ACTIVE_RESERVATION_STATUSES,
                )
                .order_by("start_at")
                .first()
            )
            spare_node = Node.objects.get(pk=spare.node_id)
            try:
                with transaction.atomic():
                    if reservation is not None:
                        inventory_services.reservation_swap(
                            reservation=reservation,
                            new_node=spare_node,
                            actor=actor,
                            reason=_("%(failed)s replaced by %(spare)s: %(why)s")
                            % {
                                "failed": failed.hostname,
                                "spare": spare_node.hostname,
                                "why": reason[:500],
                            },
                        )
            except DomainError:
                continue  # taken meanwhile (the constraint's word): choose again
            RunNode.objects.filter(pk=current.pk).update(state=RunNodeState.SWAPPED_OUT)
            replacement = RunNode.objects.create(run=run, node=spare_node, slot=current.slot)
            _create_steps(run, spare_node, _steps_for(run.kind))
            NodeSwap.objects.create(
                order=order,
                run=run,
                failed_node=failed,
                spare_node=spare_node,
                reason=reason,
                failed_at=now,
                requested_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
            locked_run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
            lifecycle.record_note(
                [locked_run],
                actor=actor,
                reason=_("%(failed)s swapped for %(spare)s: %(why)s")
                % {"failed": failed.hostname, "spare": spare_node.hostname, "why": reason[:500]},
            )
            ProvisioningRun.objects.filter(pk=run.pk).update(
                deadline_at=_deadline(now),
                message=_("%(failed)s swapped for %(spare)s.")
                % {"failed": failed.hostname, "spare": spare_node.hostname},
            )
            return replacement
    return None


def node_send_to_swap(
    *, run: ProvisioningRun, node_id: int, actor: Actor, reason: str
) -> RunNode | None:
    """Staff: take a node out of the run and put a spare in its slot; relaunch."""
    if not reason.strip():
        raise DomainError(_("Say why the node is swapped."))
    run_node = RunNode.objects.filter(run=run, node_id=node_id, state=RunNodeState.ACTIVE).first()
    if run_node is None:
        raise DomainError(_("This node is not active in the run."))
    if not run.is_active:
        raise DomainError(_("The run is over."))
    with transaction.atomic():
        _skip_steps(
            NodeStep.objects.filter(run=run, node_id=node_id), _("Node swapped out."), actor
        )
    spare = node_swap(run=run, run_node=run_node, reason=reason, actor=actor)
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
        if spare is None:
            run_fail(
                run=run,
                reason=_("No spare is free for %(node)s.") % {"node": run_node.node.hostname},
                actor=actor,
            )
        else:
            _back_to_running(run, actor=actor)
            _launch(run)
    return spare


# --- validation and delivery --------------------------------------------------------------


def _back_to_running(run: ProvisioningRun, *, actor: Actor = None) -> None:
    if run.status == RunStatus.VALIDATING:
        lifecycle.transition(
            run, to=RunStatus.RUNNING, actor=actor, reason=_("A spare is provisioned."), locked=True
        )
        order = Order.objects.select_for_update().get(pk=run.order_id)
        if order.status == OrderStatus.VALIDATING:
            order_transition(
                order=order,
                to_status=OrderStatus.PROVISIONING,
                actor=actor,
                reason=_("A node is swapped for a spare."),
            )


def run_validate(
    *, run_id: int, launch: int | None = None, runner: contract.NodeRunner | None = None
) -> str:
    """Cluster validation once every slot is provisioned: accepted nodes are kept,
    rejected ones are swapped and the canvas relaunched for their spares."""
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
        if run.status not in (RunStatus.RUNNING, RunStatus.VALIDATING):
            return "stopped"
        if launch is not None and launch != run.launch:
            return "stopped"
        active = list(
            RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).select_related(
                "node", "node__node_type__gpu_model"
            )
        )
        unfinished = (
            NodeStep.objects.filter(
                run=run, node_id__in=[rn.node_id for rn in active], name__in=PROVISION_STEPS
            )
            .exclude(status__in=[StepStatus.DONE, StepStatus.SKIPPED])
            .exists()
        )
        if not active or unfinished:
            return "waiting"
        if run.status == RunStatus.RUNNING:
            lifecycle.transition(
                run,
                to=RunStatus.VALIDATING,
                reason=_("All nodes answer: validating."),
                updates={"message": _("Validating the cluster.")},
                locked=True,
            )
        order = Order.objects.select_for_update().get(pk=run.order_id)
        if order.status == OrderStatus.PROVISIONING:
            order_transition(
                order=order, to_status=OrderStatus.VALIDATING, reason=_("Validating the cluster.")
            )
        nodes = list(
            Node.objects.select_for_update().filter(
                pk__in=[rn.node_id for rn in active], status=NodeStatus.PROVISIONING
            )
        )
        if nodes:
            lifecycle.transition_many(
                nodes, to=NodeStatus.VALIDATING, reason=_("Validating."), locked=True
            )
        todo = list(
            NodeStep.objects.select_for_update(of=("self",))
            .select_related("node")
            .filter(
                run=run,
                node_id__in=[rn.node_id for rn in active],
                name=StepName.VALIDATE,
                status__in=[StepStatus.PENDING, StepStatus.RUNNING],
            )
        )
        now = timezone.now()
        pending = [step for step in todo if step.status == StepStatus.PENDING]
        for attempt in sorted({step.attempt for step in pending}):  # one move per attempt
            lifecycle.transition_many(
                [step for step in pending if step.attempt == attempt],
                to=StepStatus.RUNNING,
                reason=_("Validation started."),
                updates={
                    "attempt": attempt + 1,
                    "started_at": now,
                    "lease_until": now + timedelta(seconds=STEP_LIMIT_S[StepName.VALIDATE]),
                    "message": _("Running the validation suite."),
                },
                locked=True,
            )
    if todo:
        by_node = {rn.node_id: rn for rn in active}
        simulated = (
            run.driver == HardwareDriverKind.SIMULATED
            or settings.PORTAL_REDFISH_IN_BAND == "simulated"
        )
        targets = [
            contract.NodeTarget(
                step.node_id,
                step.node.hostname,
                "cpu"
                if simulated or by_node[step.node_id].node.node_type.gpu_model is None
                else by_node[step.node_id].node.node_type.gpu_model.name,
            )
            for step in todo
        ]
        try:
            # Rules as stored (staff-editable); the outcome is kept as a ValidationRun with
            # its documents, raw outputs and acceptance report.
            outcome = contract.validate_nodes(
                targets,
                runner=runner or validation_services.agent_runner(simulated=simulated),
                rules=validation_selectors.rules_from_db(),
                persist=validation_services.validation_persister(order_id=run.order_id),
            )
        except Exception as exc:
            logger.exception("validation of run %s failed to run", run_id)
            outcome = contract.ValidationOutcome(
                [
                    contract.NodeResult(
                        t.node_id, t.hostname, False, [f"validation did not run: {exc}"], {}
                    )
                    for t in targets
                ],
                False,
                [f"validation did not run: {exc}"],
            )
        results = {r.node_id: r for r in outcome.nodes}
        rejected: list[tuple[RunNode, str]] = []
        with transaction.atomic():
            accepted: list[NodeStep] = []
            for step in (
                NodeStep.objects.select_for_update(of=("self",))
                .select_related("node")
                .filter(pk__in=[s.pk for s in todo], status=StepStatus.RUNNING)
            ):
                result = results.get(step.node_id)
                excerpt = json.dumps(result.report if result else {}, default=str)[
                    :LOG_EXCERPT_CHARS
                ]
                if result is not None and result.accepted:
                    step.log_excerpt = excerpt
                    accepted.append(step)
                else:
                    why = "; ".join(result.reasons) if result else _("no result")
                    _set_step(
                        step,
                        StepStatus.FAILED,
                        why,
                        finished_at=timezone.now(),
                        lease_until=None,
                        message=why,
                        log_excerpt=excerpt,
                    )
                    rejected.append((by_node[step.node_id], why))
            if accepted:  # one move for all accepted nodes, then their reports
                lifecycle.transition_many(
                    accepted,
                    to=StepStatus.DONE,
                    reason=_("Accepted."),
                    updates={
                        "finished_at": timezone.now(),
                        "lease_until": None,
                        "message": _("Accepted by validation."),
                    },
                    locked=True,
                )
                NodeStep.objects.bulk_update(accepted, ["log_excerpt"])
        if not rejected and not outcome.cluster_accepted and len(active) > 1:
            run_fail(
                run=run,
                reason=_("The cluster failed validation: %(why)s")
                % {"why": "; ".join(outcome.cluster_reasons)},
            )
            return "failed"
        if rejected:
            for run_node, why in rejected:
                spare = node_swap(
                    run=run,
                    run_node=run_node,
                    reason=_("Failed validation: %(why)s") % {"why": why},
                )
                if spare is None:
                    run_fail(
                        run=run,
                        reason=_("%(node)s failed validation and no spare is free.")
                        % {"node": run_node.node.hostname},
                    )
                    return "failed"
            with transaction.atomic():
                run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
                _back_to_running(run)
                _launch(run)
            return "swapped"
    return "validated"


def _addresses(node: Node) -> list[str]:
    return [node.ip_address] if node.ip_address else []


def run_deliver(*, run_id: int, launch: int | None = None) -> str:
    """Every active node accepted: nodes in service, the order ready, the customer told."""
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.VALIDATING:
            return "stopped" if run.status != RunStatus.DELIVERED else "delivered"
        if launch is not None and launch != run.launch:
            return "stopped"
        active = list(
            RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).select_related("node")
        )
        pending = NodeStep.objects.filter(
            run=run, node_id__in=[rn.node_id for rn in active]
        ).exclude(status__in=[StepStatus.DONE, StepStatus.SKIPPED])
        if pending.exists():
            return "waiting"
        now = timezone.now()
        order = (
            Order.objects.select_for_update(of=("self",))
            .select_related("image_profile")
            .get(pk=run.order_id)
        )
        user = order.image_profile.ssh_user if order.image_profile else "root"
        nodes = list(Node.objects.select_for_update().filter(pk__in=[rn.node_id for rn in active]))
        lifecycle.transition_many(
            [n for n in nodes if n.status == NodeStatus.VALIDATING],
            to=NodeStatus.IN_SERVICE,
            reason=_("Delivered to order %(n)s.") % {"n": order.number},
            locked=True,
        )
        for rn in active:
            rn.ssh_user, rn.addresses, rn.delivered_at = user, _addresses(rn.node), now
        RunNode.objects.bulk_update(active, ["ssh_user", "addresses", "delivered_at"])
        lifecycle.transition(
            run,
            to=RunStatus.DELIVERED,
            reason=_("Delivered."),
            updates={"finished_at": now, "message": _("Delivered.")},
            locked=True,
        )
        if order.status == OrderStatus.VALIDATING:
            order_transition(
                order=order,
                to_status=OrderStatus.READY,
                reason=_("The cluster passed validation and is ready."),
            )
        for swap in NodeSwap.objects.filter(
            run=run, spare_node__isnull=False, restored_at__isnull=True
        ):
            lost_from = max(order.start_at, swap.failed_at)
            lost_to = max(order.start_at, now)
            hours = Decimal(max((lost_to - lost_from).total_seconds(), 0) / 3600).quantize(
                Decimal("0.01"), rounding=ROUND_HALF_UP
            )
            NodeSwap.objects.filter(pk=swap.pk).update(restored_at=now, hours_lost=hours)
        jobs.enqueue(EMAIL_TASK, run.pk, "ready")
    return "delivered"


# --- failure, cancel, retry ----------------------------------------------------------------


def _release_nodes(run: ProvisioningRun, reason: str, actor: Actor = None) -> None:
    """No node stays in provisioning or validating once its run is over: the order's
    booking still holds them; cleaning wipes them when the order ends."""
    nodes = list(
        Node.objects.select_for_update().filter(
            pk__in=RunNode.objects.filter(run=run).values("node_id"),
            status__in=[NodeStatus.PROVISIONING, NodeStatus.VALIDATING],
        )
    )
    if nodes:
        lifecycle.transition_many(
            nodes, to=NodeStatus.AVAILABLE, actor=actor, reason=reason, locked=True
        )


@transaction.atomic
def run_fail(*, run: ProvisioningRun, reason: str, actor: Actor = None) -> ProvisioningRun:
    """The run stops with the reason; staff are alerted and the customer told."""
    run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
    if run.status not in ACTIVE_RUN_STATUSES:
        return run
    lifecycle.transition(
        run,
        to=RunStatus.FAILED,
        actor=actor,
        reason=reason,
        updates={"finished_at": timezone.now(), "message": reason[:2000]},
        locked=True,
    )
    _release_nodes(run, _("Run %(id)s failed.") % {"id": run.pk}, actor)
    logger.error("Provisioning run %s of order %s failed: %s", run.pk, run.order_id, reason)
    jobs.enqueue(EMAIL_TASK, run.pk, "problem")
    return run


@transaction.atomic
def run_cancel(*, run: ProvisioningRun, actor: Actor, reason: str) -> ProvisioningRun:
    """Staff stop a run: its nodes leave provisioning; running steps are abandoned."""
    if not reason.strip():
        raise DomainError(_("Say why the run is cancelled."))
    run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
    lifecycle.transition(
        run,
        to=RunStatus.CANCELLED,
        actor=actor,
        reason=reason,
        updates={"finished_at": timezone.now(), "message": reason},
        locked=True,
    )
    _skip_steps(NodeStep.objects.filter(run=run), _("Run cancelled."), actor)
    _release_nodes(run, _("Run %(id)s cancelled.") % {"id": run.pk}, actor)
    return run


@transaction.atomic
def step_retry(*, step: NodeStep, actor: Actor, reason: str = "") -> NodeStep:
    """Staff: run a failed step again (a failed run goes back to running)."""
    step = NodeStep.objects.select_for_update(of=("self",)).select_related("node").get(pk=step.pk)
    run = ProvisioningRun.objects.select_for_update().get(pk=step.run_id)
    if not RunNode.objects.filter(
        run=run, node_id=step.node_id, state=RunNodeState.ACTIVE
    ).exists():
        raise DomainError(_("This node is no longer part of the run."))
    lifecycle.transition(
        step,
        to=StepStatus.PENDING,
        actor=actor,
        reason=reason or _("Retried by staff."),
        updates={"message": _("Retry requested.")},
        locked=True,
    )
    if run.status == RunStatus.FAILED:
        lifecycle.transition(
            run,
            to=RunStatus.RUNNING,
            actor=actor,
            reason=_("A step is retried."),
            updates={"finished_at": None, "deadline_at": _deadline(timezone.now())},
            locked=True,
        )
    elif run.status == RunStatus.VALIDATING:
        _back_to_running(run, actor=actor)
    _launch(run)
    return step


# --- cleaning -----------------------------------------------------------------------------


def cleaning_start(*, order: Order, actor: Actor = None) -> ProvisioningRun | None:
    """Wipe every node the order used (disk secure erase, BIOS reset, check) before it is
    available again; a node that fails goes to faulty."""
    nodes = list(
        Node.objects.filter(run_nodes__run__order=order, run_nodes__state=RunNodeState.ACTIVE)
        .exclude(status__in=[NodeStatus.FAULTY, NodeStatus.RETIRED])
        .distinct()
        .order_by("hostname")
    )
    if not nodes:
        nodes = [
            n for n in order_nodes(order) if n.status not in (NodeStatus.FAULTY, NodeStatus.RETIRED)
        ]
    if not nodes:
        return None
    with transaction.atomic():
        for run in ProvisioningRun.objects.filter(
            order=order, kind=RunKind.PROVISION, status__in=ACTIVE_RUN_STATUSES
        ):
            run_cancel(run=run, actor=actor, reason=_("The order ended."))
        run = run_create(order=order, kind=RunKind.CLEAN, nodes=nodes)
        run = run_start(run=run, actor=actor)
        fabric_release(order=order)
    return run


def clean_node_failed(*, run: ProvisioningRun, run_node: RunNode, reason: str) -> None:
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=run_node.node_id)
        if node.status not in (NodeStatus.FAULTY, NodeStatus.RETIRED):
            inventory_services.node_mark_faulty(
                node=node, reason=_("Cleaning failed: %(why)s") % {"why": reason[:1000]}
            )
        _skip_steps(NodeStep.objects.filter(run=run, node=node), _("Cleaning failed."))


def cleaning_finish(*, run_id: int, launch: int | None = None) -> str:
    """Nodes whose every cleaning step is done become available; the run ends."""
    with transaction.atomic():
        run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.RUNNING or (launch is not None and launch != run.launch):
            return "stopped"
        steps = NodeStep.objects.filter(run=run)
        if steps.filter(status__in=[StepStatus.PENDING, StepStatus.RUNNING]).exists():
            return "waiting"
        clean_ids = set(RunNode.objects.filter(run=run).values_list("node_id", flat=True)) - set(
            steps.exclude(status=StepStatus.DONE).values_list("node_id", flat=True)
        )
        nodes = list(
            Node.objects.select_for_update()
            .filter(pk__in=clean_ids)
            .exclude(status=NodeStatus.AVAILABLE)
        )
        if nodes:
            lifecycle.transition_many(
                nodes,
                to=NodeStatus.AVAILABLE,
                reason=_("Cleaned: disks erased, BIOS reset, checked."),
                locked=True,
            )
        failed = steps.filter(status=StepStatus.FAILED).exists()
        lifecycle.transition(
            run,
            to=RunStatus.FAILED if failed else RunStatus.DELIVERED,
            reason=_("Cleaning finished with failures.") if failed else _("Cleaning finished."),
            updates={"finished_at": timezone.now(), "message": _("Cleaning finished.")},
            locked=True,
        )
    return "cleaned"


@transaction.atomic
def orders_end_due(*, now: datetime | None = None) -> int:
    """Ready orders past their end: ended, and their nodes cleaned."""
    now = now or timezone.now()
    ended = 0
    for order in Order.objects.select_for_update(skip_locked=True).filter(
        status=OrderStatus.READY, end_at__lte=now
    ):
        order_transition(
            order=order, to_status=OrderStatus.ENDED, reason=_("The rental period is over.")
        )
        cleaning_start(order=order)
        ended += 1
    return ended


# --- the reaper ---------------------------------------------------------------------------


def reaper(*, now: datetime | None = None, stall_s: float | None = None) -> dict[str, int]:
    """Find work a dead worker left: steps running past their lease go back to waiting
    and their run is relaunched from its last finished step; runs past their deadline
    fail; runs with no progress for ``stall_s`` are relaunched (a lost message); nodes
    left in provisioning by an ended run are released."""
    now = now or timezone.now()
    stall_s = settings.PORTAL_PROVISIONING_STALL_S if stall_s is None else stall_s
    relaunched: set[int] = set()
    reaped = failed = released = 0
    with transaction.atomic():
        stale = list(
            NodeStep.objects.select_for_update(of=("self",), skip_locked=True)
            .select_related("node")
            .filter(status=StepStatus.RUNNING, lease_until__lt=now)
        )
        for step in stale:
            _set_step(
                step,
                StepStatus.PENDING,
                _("The worker running this step was lost; resumed."),
                lease_until=None,
                message=_("Resumed after a lost worker."),
            )
            relaunched.add(step.run_id)
            reaped += 1
    for run in ProvisioningRun.objects.filter(status__in=ACTIVE_RUN_STATUSES, deadline_at__lt=now):
        run_fail(run=run, reason=_("The run passed its deadline."))
        relaunched.discard(run.pk)
        failed += 1
    quiet = (
        ProvisioningRun.objects.filter(status__in=[RunStatus.RUNNING, RunStatus.VALIDATING])
        .annotate(last=Max("steps__status_changed_at"))
        .filter(last__lt=now - timedelta(seconds=stall_s))
        .exclude(steps__status=StepStatus.RUNNING)
    )
    relaunched.update(quiet.values_list("pk", flat=True))
    for run_id in relaunched:
        with transaction.atomic():
            run = ProvisioningRun.objects.select_for_update().get(pk=run_id)
            if run.status in (RunStatus.RUNNING, RunStatus.VALIDATING):
                lifecycle.record_note(
                    [run], reason=_("Resumed by the reaper from the last finished step.")
                )
                _launch(run)
    with transaction.atomic():
        live = ProvisioningRun.objects.filter(
            run_nodes__node=OuterRef("pk"), status__in=ACTIVE_RUN_STATUSES
        )
        orphans = list(
            Node.objects.select_for_update(skip_locked=True)
            .filter(status__in=[NodeStatus.PROVISIONING, NodeStatus.VALIDATING])
            .filter(~Exists(live))
        )
        if orphans:
            lifecycle.transition_many(
                orphans, to=NodeStatus.AVAILABLE, reason=_("Its run is over."), locked=True
            )
            released = len(orphans)
    return {"reaped": reaped, "relaunched": len(relaunched), "failed": failed, "released": released}
