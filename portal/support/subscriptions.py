"""The support desk listens to day two: a low-utilisation alert and a node that must be
replaced each open a ticket. The receivers run inside the transaction that wrote the
alert or moved the incident and only enqueue the task (the outbox): the ticket follows
the commit, survives a dead broker, and a failure here never undoes provisioning's
work."""

from __future__ import annotations

from typing import Any

from core import jobs
from provisioning.health import signals

LOW_UTILISATION_TASK = "portal.support.tasks.ticket_from_low_utilisation"
REPLACEMENT_TASK = "portal.support.tasks.ticket_from_replacement"


def _on_low_utilisation(sender: type, alert: Any, **_kwargs: Any) -> None:
    jobs.enqueue(LOW_UTILISATION_TASK, alert.pk)


def _on_replacement(sender: type, incident: Any, **_kwargs: Any) -> None:
    if incident.order_id:
        jobs.enqueue(REPLACEMENT_TASK, incident.pk)


def connect() -> None:
    signals.low_utilisation_raised.connect(_on_low_utilisation, dispatch_uid="support-low-util")
    signals.replacement_needed.connect(_on_replacement, dispatch_uid="support-replacement")
