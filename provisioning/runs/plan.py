"""What a run is made of: the steps of each kind of run, each step's time limit (its
task's bound and its lease) and expected duration (the pages' ETA), the canvas's phases,
and the tasks a run hands work to (by name: this package never imports the tasks)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from provisioning.drivers.simulated import SimulatedTimings
from provisioning.models import CLEAN_STEPS, PROVISION_STEPS, REPLACE_STEPS, RunKind, StepName

LAUNCH_TASK = "provisioning.tasks.provisioning_launch"
EMAIL_TASK = "provisioning.tasks.provisioning_email"
# A replacement run (day two) hands its spare over to the order instead of the ready email.
HANDOVER_TASK = "provisioning.tasks.replacement_handover"

# Hard bound of each step (s) on real hardware: what a task running it may take, and its
# lease (with STEP_LEASE_GRACE_S more; validation's lease is shorter and renewed while it
# runs, up to this bound plus the burn-in: ``leases``, ``delivery.validate_limit_s``).
# PORTAL_PROVISIONING_STEP_LIMIT_SCALE shrinks them
# for simulated hardware whose steps take a fraction of real time (never below
# STEP_LIMIT_FLOOR_S), so that a dead worker's lease runs out in seconds there too; not
# validation's, whose agent runs for real whatever the driver.
STEP_LIMIT_FLOOR_S = 20
_REAL_STEP_LIMIT_S: dict[str, int] = {
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
_LIMIT_SCALE = settings.PORTAL_PROVISIONING_STEP_LIMIT_SCALE
STEP_LIMIT_S: dict[str, int] = {
    name: limit
    if _LIMIT_SCALE >= 1 or name == StepName.VALIDATE
    else max(STEP_LIMIT_FLOOR_S, round(limit * _LIMIT_SCALE))
    for name, limit in _REAL_STEP_LIMIT_S.items()
}
# How long past its limit a running step's lease lasts (a worker finishing its bookkeeping).
STEP_LEASE_GRACE_S = 60 if _LIMIT_SCALE >= 1 else 5
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


def steps_for(kind: str) -> tuple[str, ...]:
    if kind == RunKind.CLEAN:
        return CLEAN_STEPS
    if kind == RunKind.REPLACE:
        return (*REPLACE_STEPS, StepName.VALIDATE)
    return (*PROVISION_STEPS, StepName.VALIDATE)


def deadline(now: datetime) -> datetime:
    # The nodes of a run proceed in parallel: each gets the per-node budget.
    return now + timedelta(minutes=settings.PORTAL_PROVISIONING_DEADLINE_MIN_PER_NODE)
