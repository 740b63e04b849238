"""Every write of a provisioning run, one module per part of its life (each imports only
the ones listed before it):

- ``plan``: the steps of each kind of run, their time limits and expected durations, the
  canvas's phases and the task names work is handed to;
- ``drivers``: the node's hardware driver; ``records``: the record moves the others share;
- ``leases``: a long step's lease, renewed by the step while it works (a heartbeat);
- ``create``: creating and starting a run (now, or when its release's time has come);
- ``fabric``: the order's partition key or VLAN; ``failure``: fail, cancel, retry a step;
- ``spares`` (pure) and ``swaps``: a failed node swapped for a spare;
- ``cleaning``: wiping an ended order's nodes; ``steps``: executing a slot's steps;
- ``delivery``: cluster validation and delivery; ``reaper``: what a dead worker left.

Work that follows a commit (the Celery canvas, emails) is handed over through
``core.jobs``; this package never imports the tasks. The names below are the package's
interface (``from provisioning import runs``; ``runs.run_create(...)``).
"""

from provisioning.runs.cleaning import (
    clean_node_failed,
    cleaning_finish,
    cleaning_start,
    order_cancelled_clean,
    orders_end_due,
)
from provisioning.runs.create import (
    provisioning_begin,
    provisioning_due_at,
    provisioning_start_due,
    provisioning_start_when_due,
    run_create,
    run_start,
)
from provisioning.runs.delivery import (
    run_burn_in_seconds,
    run_deliver,
    run_validate,
    validate_limit_s,
)
from provisioning.runs.drivers import driver_for, driver_kind
from provisioning.runs.fabric import fabric_allocate, fabric_release
from provisioning.runs.failure import run_cancel, run_fail, step_retry
from provisioning.runs.leases import holder_name
from provisioning.runs.plan import (
    CLEAN_PHASE_ENDS,
    PROVISION_PHASE_ENDS,
    STEP_EXPECTED_S,
    STEP_LIMIT_S,
    steps_for,
)
from provisioning.runs.reaper import reaper
from provisioning.runs.records import active_run_node
from provisioning.runs.steps import (
    StepBusy,
    StepOutcome,
    StepTransient,
    slot_advance,
    step_execute,
    steps_execute,
)
from provisioning.runs.swaps import node_send_to_swap, node_swap, spare_candidates

__all__ = [
    "CLEAN_PHASE_ENDS",
    "PROVISION_PHASE_ENDS",
    "STEP_EXPECTED_S",
    "STEP_LIMIT_S",
    "StepBusy",
    "StepOutcome",
    "StepTransient",
    "active_run_node",
    "clean_node_failed",
    "cleaning_finish",
    "cleaning_start",
    "driver_for",
    "driver_kind",
    "fabric_allocate",
    "fabric_release",
    "holder_name",
    "node_send_to_swap",
    "node_swap",
    "order_cancelled_clean",
    "orders_end_due",
    "provisioning_begin",
    "provisioning_due_at",
    "provisioning_start_due",
    "provisioning_start_when_due",
    "reaper",
    "run_burn_in_seconds",
    "run_cancel",
    "run_create",
    "run_deliver",
    "run_fail",
    "run_start",
    "run_validate",
    "slot_advance",
    "spare_candidates",
    "step_execute",
    "step_retry",
    "steps_execute",
    "steps_for",
    "validate_limit_s",
]
