"""The driver of a run's node: its own (``Node.driver``) or the portal's default, the
simulated one rebuilt from the steps the run has recorded."""

from __future__ import annotations

from django.conf import settings

from inventory.models import HardwareDriverKind, Node
from provisioning.drivers.base import BmcTarget, DriverError, HardwareDriver
from provisioning.drivers.inband import SimulatedInBand
from provisioning.drivers.redfish import RedfishDriver
from provisioning.drivers.simulated import SimulatedDriver
from provisioning.models import NodeStep, ProvisioningRun, RunKind, StepName, StepStatus


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
    fail = settings.PORTAL_SIMULATED_FAIL or {}
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
    if StepName.INSTALL in done or run.kind == RunKind.REPLACE:  # a warm spare is imaged
        driver.installed_image = run.order.image_profile.name if run.order.image_profile else "os"
        driver.power = "on"
    if StepName.BOOT_OS in done:
        driver.os_running = True
    return driver
