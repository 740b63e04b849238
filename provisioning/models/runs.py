"""Provisioning runs and what they need.

A ``ProvisioningRun`` belongs to an order: ``kind`` "provision" (paid → delivered) or
"clean" (at the order's end: wipe, BIOS reset, check, then available). Each run has
``RunNode`` rows (the slots of the order's cluster: which node fills each slot now; a swap
puts a spare into the slot and marks the old row swapped out) and a ``NodeStep`` per node
and step, with its own small lifecycle. ``NodeSwap`` records each swap on the order with
the hours lost; ``FabricAllocation`` the order's partition key or VLAN.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from billing.models import Order
from core.lifecycle import Lifecycle
from core.models import LifecycleEvent
from inventory.models import Node

__all__ = [
    "CLEAN_STEPS",
    "PROVISION_STEPS",
    "REPLACE_STEPS",
    "FabricAllocation",
    "NodeStep",
    "NodeStepEvent",
    "NodeSwap",
    "ProvisioningRun",
    "ProvisioningRunEvent",
    "RunKind",
    "RunNode",
    "RunNodeState",
    "RunStatus",
    "StepName",
    "StepStatus",
]


class RunKind(models.TextChoices):
    PROVISION = "provision", _("provisioning")
    CLEAN = "clean", _("cleaning")
    # Day two: a spare provisioned for a delivered order in place of a failed node.
    REPLACE = "replace", _("replacement")


class RunStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    RUNNING = "running", _("running")
    VALIDATING = "validating", _("validating")
    DELIVERED = "delivered", _("delivered")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunStatus.PENDING: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED}),
    RunStatus.RUNNING: frozenset(
        {RunStatus.VALIDATING, RunStatus.DELIVERED, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    # A node rejected by validation is swapped: the run goes back to running for the spare.
    RunStatus.VALIDATING: frozenset(
        {RunStatus.RUNNING, RunStatus.DELIVERED, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    # Staff may retry a failed run's step: it runs again.
    RunStatus.FAILED: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED}),
    RunStatus.DELIVERED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}
ACTIVE_RUN_STATUSES = (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.VALIDATING)
FINISHED_RUN_STATUSES = (RunStatus.DELIVERED, RunStatus.FAILED, RunStatus.CANCELLED)


class StepName(models.TextChoices):
    CLAIM = "claim", _("claim the node")
    POWER_OFF = "power_off", _("power off")
    NETWORK_BOOT = "network_boot", _("one-time network boot")
    POWER_ON = "power_on", _("power on")
    INSTALL = "install", _("install the OS image")
    ACCESS = "access", _("install SSH keys, hostname and network")
    FABRIC = "fabric", _("fabric isolation")
    BOOT_OS = "boot_os", _("boot the OS")
    CHECK_OS = "check_os", _("check the OS answers")
    VALIDATE = "validate", _("validation")
    ERASE = "erase", _("secure disk erase")
    BIOS_RESET = "bios_reset", _("BIOS reset")
    CHECK_CLEAN = "check_clean", _("check and release")


# Per node, in order. Validation is a step of its own, run for all nodes together.
PROVISION_STEPS: tuple[str, ...] = (
    StepName.CLAIM,
    StepName.POWER_OFF,
    StepName.NETWORK_BOOT,
    StepName.POWER_ON,
    StepName.INSTALL,
    StepName.ACCESS,
    StepName.FABRIC,
    StepName.BOOT_OS,
    StepName.CHECK_OS,
)
CLEAN_STEPS: tuple[str, ...] = (StepName.ERASE, StepName.BIOS_RESET, StepName.CHECK_CLEAN)
# A day-two replacement takes a warm spare (kept imaged with the standard image and
# checked by the idle sweep): it gets the order's keys and network, joins the order's
# fabric partition and boots; then the quick validation. No install: the 10-minute promise.
REPLACE_STEPS: tuple[str, ...] = (
    StepName.CLAIM,
    StepName.ACCESS,
    StepName.FABRIC,
    StepName.BOOT_OS,
    StepName.CHECK_OS,
)


class StepStatus(models.TextChoices):
    PENDING = "pending", _("waiting")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")
    SKIPPED = "skipped", _("skipped")


STEP_TRANSITIONS: dict[str, frozenset[str]] = {
    StepStatus.PENDING: frozenset({StepStatus.RUNNING, StepStatus.SKIPPED}),
    # running → pending: a worker died mid-step (the reaper) or a transient error retries.
    StepStatus.RUNNING: frozenset(
        {StepStatus.DONE, StepStatus.FAILED, StepStatus.PENDING, StepStatus.SKIPPED}
    ),
    StepStatus.FAILED: frozenset({StepStatus.PENDING, StepStatus.SKIPPED}),  # staff retry
    StepStatus.DONE: frozenset(),
    StepStatus.SKIPPED: frozenset(),
}


class ProvisioningRun(models.Model):
    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="provisioning_runs", verbose_name=_("order")
    )
    kind = models.CharField(
        _("kind"), max_length=16, choices=RunKind.choices, default=RunKind.PROVISION
    )
    status = models.CharField(
        _("status"), max_length=16, choices=RunStatus.choices, default=RunStatus.PENDING
    )
    status_changed_at = models.DateTimeField(_("status changed"), auto_now_add=True)
    driver = models.CharField(_("hardware driver"), max_length=16, blank=True)
    message = models.TextField(_("current message"), blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    deadline_at = models.DateTimeField(_("deadline"), null=True, blank=True)
    # Bumped whenever the canvas is (re)launched: tasks of an older launch stop quietly.
    launch = models.PositiveIntegerField(_("launch"), default=0)

    lifecycle = Lifecycle(
        choices=RunStatus,
        transitions=RUN_TRANSITIONS,
        event_model="provisioning.ProvisioningRunEvent",
        subject_field="run",
        describe=lambda r: gettext("Provisioning run %(id)s") % {"id": r.pk},
        changed_at_field="status_changed_at",
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("provisioning run")
        verbose_name_plural = _("provisioning runs")
        constraints = [
            # One live provisioning or cleaning run per order: a retried payment never
            # starts two. Replacement runs are not in it: two nodes of one order failing
            # at once are healed in parallel, a run each (one per health incident, which
            # ``provisioning.health.services`` creates under the incident's row lock;
            # the reservations' exclusion constraint keeps their spares apart).
            models.UniqueConstraint(
                fields=["order", "kind"],
                condition=Q(status__in=["pending", "running", "validating"]) & ~Q(kind="replace"),
                name="provisioningrun_one_active_per_order",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.order_id})"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RUN_STATUSES


class ProvisioningRunEvent(LifecycleEvent):
    run = models.ForeignKey(
        ProvisioningRun, on_delete=models.CASCADE, related_name="events", verbose_name=_("run")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("provisioning run event")
        verbose_name_plural = _("provisioning run events")

    def __str__(self) -> str:
        return f"{self.run_id}: {self.from_label()} → {self.to_label()}"


class RunNodeState(models.TextChoices):
    ACTIVE = "active", _("active")
    SWAPPED_OUT = "swapped_out", _("swapped out")


class RunNode(models.Model):
    """A node of a run: the slot it fills (a spare takes the failed node's slot)."""

    run = models.ForeignKey(
        ProvisioningRun, on_delete=models.CASCADE, related_name="run_nodes", verbose_name=_("run")
    )
    node = models.ForeignKey(
        Node, on_delete=models.PROTECT, related_name="run_nodes", verbose_name=_("node")
    )
    slot = models.PositiveSmallIntegerField(_("slot"))
    state = models.CharField(
        _("state"), max_length=16, choices=RunNodeState.choices, default=RunNodeState.ACTIVE
    )
    ssh_user = models.CharField(_("SSH user"), max_length=32, blank=True)
    addresses = models.JSONField(_("addresses"), default=list, blank=True)
    # The node's SSH host keys as delivered ([{"type", "key", "fingerprint"}]), so that
    # the customer can check the first connection (``provisioning.access``).
    host_keys = models.JSONField(_("SSH host keys"), default=list, blank=True)
    delivered_at = models.DateTimeField(_("delivered"), null=True, blank=True)

    class Meta:
        ordering = ["run_id", "slot", "pk"]
        verbose_name = _("node of a run")
        verbose_name_plural = _("nodes of runs")
        constraints = [
            models.UniqueConstraint(fields=["run", "node"], name="runnode_unique_node"),
            models.UniqueConstraint(
                fields=["run", "slot"], condition=Q(state="active"), name="runnode_one_per_slot"
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} slot {self.slot}: {self.node_id}"


class NodeStep(models.Model):
    """One step of one node in a run: status, attempts, times, message, log excerpt."""

    run = models.ForeignKey(
        ProvisioningRun, on_delete=models.CASCADE, related_name="steps", verbose_name=_("run")
    )
    node = models.ForeignKey(
        Node, on_delete=models.PROTECT, related_name="provisioning_steps", verbose_name=_("node")
    )
    name = models.CharField(_("step"), max_length=16, choices=StepName.choices)
    position = models.PositiveSmallIntegerField(_("order"))
    status = models.CharField(
        _("status"), max_length=16, choices=StepStatus.choices, default=StepStatus.PENDING
    )
    status_changed_at = models.DateTimeField(_("status changed"), auto_now_add=True)
    attempt = models.PositiveSmallIntegerField(_("attempt"), default=0)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    # A running step whose lease has passed was left by a dead worker (the reaper's cue).
    # A long step (validation, the 24-hour burn-in) keeps a short lease that it renews
    # while it works (``provisioning.runs.leases``); ``lease_holder`` names the execution
    # that holds it (worker, task id and a nonce: a redelivered copy of the same task is
    # another holder), and only that holder records the step's outcome.
    lease_until = models.DateTimeField(_("lease until"), null=True, blank=True)
    lease_holder = models.CharField(_("lease holder"), max_length=200, blank=True)
    expected_s = models.FloatField(_("expected seconds"), default=0.0)
    message = models.TextField(_("message"), blank=True)
    log_excerpt = models.TextField(_("log excerpt"), blank=True)

    lifecycle = Lifecycle(
        choices=StepStatus,
        transitions=STEP_TRANSITIONS,
        event_model="provisioning.NodeStepEvent",
        subject_field="step",
        describe=lambda s: (
            gettext("Step “%(step)s” of %(hostname)s")
            % {"step": s.get_name_display(), "hostname": s.node.hostname}
        ),
        changed_at_field="status_changed_at",
        lock_related=("node",),
    )

    class Meta:
        ordering = ["run_id", "node_id", "position"]
        verbose_name = _("node step")
        verbose_name_plural = _("node steps")
        constraints = [
            models.UniqueConstraint(fields=["run", "node", "name"], name="nodestep_unique"),
        ]
        indexes = [models.Index(fields=["status", "lease_until"], name="nodestep_lease_idx")]

    def __str__(self) -> str:
        return f"{self.node_id}/{self.name}: {self.status}"


class NodeStepEvent(LifecycleEvent):
    step = models.ForeignKey(
        NodeStep, on_delete=models.CASCADE, related_name="events", verbose_name=_("step")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("node step event")
        verbose_name_plural = _("node step events")

    def __str__(self) -> str:
        return f"{self.step_id}: {self.from_label()} → {self.to_label()}"


class NodeSwap(models.Model):
    """A node of an order replaced by a spare (or not, when none was free)."""

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="node_swaps", verbose_name=_("order")
    )
    run = models.ForeignKey(
        ProvisioningRun,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="swaps",
        verbose_name=_("run"),
    )
    failed_node = models.ForeignKey(
        Node, on_delete=models.PROTECT, related_name="+", verbose_name=_("failed node")
    )
    spare_node = models.ForeignKey(
        Node,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("spare node"),
    )
    reason = models.TextField(_("reason"))
    failed_at = models.DateTimeField(_("failed"))
    restored_at = models.DateTimeField(_("spare delivered"), null=True, blank=True)
    hours_lost = models.DecimalField(_("hours lost"), max_digits=10, decimal_places=2, default=0)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("requested by"),
    )

    class Meta:
        ordering = ["failed_at", "pk"]
        verbose_name = _("node swap")
        verbose_name_plural = _("node swaps")

    def __str__(self) -> str:
        return f"{self.order_id}: {self.failed_node_id} → {self.spare_node_id}"


class FabricAllocation(models.Model):
    """The order's fabric isolation key (InfiniBand P_Key or VLAN); released at the end."""

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="fabric_keys", verbose_name=_("order")
    )
    kind = models.CharField(_("kind"), max_length=8)  # "pkey" | "vlan"
    value = models.PositiveIntegerField(_("value"))
    fabric = models.CharField(_("fabric"), max_length=16)
    allocated_at = models.DateTimeField(_("allocated"), auto_now_add=True)
    released_at = models.DateTimeField(_("released"), null=True, blank=True)

    class Meta:
        ordering = ["-allocated_at"]
        verbose_name = _("fabric key")
        verbose_name_plural = _("fabric keys")
        constraints = [
            # The database is what keeps two orders from sharing a key.
            models.UniqueConstraint(
                fields=["kind", "value"],
                condition=Q(released_at__isnull=True),
                name="fabric_key_unique_in_use",
            ),
            models.UniqueConstraint(
                fields=["order"],
                condition=Q(released_at__isnull=True),
                name="fabric_key_one_per_order",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.value:#06x}" if self.kind == "pkey" else f"vlan {self.value}"
