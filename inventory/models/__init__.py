"""Inventory's models (Django sees them all as ``inventory.*``)."""

from inventory.models.nodes import *  # noqa: F403
