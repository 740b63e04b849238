"""Inventory's models, one module per concern (Django sees them all as ``inventory.*``):
``sites`` (sites, racks, switches), ``catalog`` (GPU models, node types, image profiles),
``nodes`` (nodes and their lifecycle), ``maintenance`` (maintenance plans, their notices,
the per-node windows), ``reservations`` (bookings and their lifecycle) and ``imports``
(background CSV import jobs). Order, bottom first: ``sites → catalog → nodes →
maintenance | reservations``; ``imports`` stands alone.

Invariants live here (field validation, ``clean()``, database constraints). Writes go
through ``inventory.services``; multi-line reads through ``inventory.selectors``.
"""

from inventory.models.catalog import *  # noqa: F403
from inventory.models.imports import *  # noqa: F403
from inventory.models.maintenance import *  # noqa: F403
from inventory.models.nodes import *  # noqa: F403
from inventory.models.reservations import *  # noqa: F403
from inventory.models.sites import *  # noqa: F403
