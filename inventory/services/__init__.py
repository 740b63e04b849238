"""Every write to the inventory."""

from inventory.services.reservations import *  # noqa: F403
