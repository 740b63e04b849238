"""Provisioning's models, one module per concern: ``runs`` (provisioning runs, node steps,
image profiles, SSH keys, fabric keys, swaps) and ``validation`` (validation runs, rules
as data, stored agent documents, acceptance reports) and ``health`` (day two: simulated
faults, replacement policies, spare pools, health incidents, low-utilisation alerts)."""

from provisioning.models.health import *  # noqa: F403
from provisioning.models.runs import *  # noqa: F403
from provisioning.models.validation import *  # noqa: F403
