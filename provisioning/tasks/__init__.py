"""Provisioning's Celery tasks, one module per concern: ``runs`` (a run's canvas, the
beat jobs that start, resume and end runs, the customer's emails), ``power`` (suspended
orders' power), ``sla`` (the SLA credits sweep) and ``health`` (day two: rules,
replacement hand-over, incident emails, low utilisation). Each task declares its queue and
keeps its registered name, ``provisioning.tasks.<task>`` (the outbox and the beat table
store names). Importing this package registers them all."""

from provisioning.tasks.health import (
    health_evaluate_task,
    health_incident_email,
    health_node_marked_faulty,
    health_node_repaired,
    low_utilisation_task,
    replacement_handover,
    utilisation_email,
)
from provisioning.tasks.power import order_power_sync
from provisioning.tasks.runs import (
    order_cancelled_clean,
    provisioning_clean_finish,
    provisioning_deliver,
    provisioning_email,
    provisioning_end_due_orders_task,
    provisioning_launch,
    provisioning_reaper_task,
    provisioning_slot_advance,
    provisioning_start,
    provisioning_start_due_task,
    provisioning_validate,
)
from provisioning.tasks.sla import sla_credits_sweep_task

__all__ = [
    "health_evaluate_task",
    "health_incident_email",
    "health_node_marked_faulty",
    "health_node_repaired",
    "low_utilisation_task",
    "order_cancelled_clean",
    "order_power_sync",
    "provisioning_clean_finish",
    "provisioning_deliver",
    "provisioning_email",
    "provisioning_end_due_orders_task",
    "provisioning_launch",
    "provisioning_reaper_task",
    "provisioning_slot_advance",
    "provisioning_start",
    "provisioning_start_due_task",
    "provisioning_validate",
    "replacement_handover",
    "sla_credits_sweep_task",
    "utilisation_email",
]
