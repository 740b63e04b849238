"""Every write to the inventory. Services own their transactions and lock what they move.

One module per concern, re-exported here (``from inventory import services`` then
``services.reservation_hold`` keeps working): ``nodes`` (adding, editing, lifecycle moves,
the leaf group's port budget), ``reservations`` (holds, confirmation, release, hand-over,
swaps, expiry), ``maintenance`` (maintenance windows and plans) and ``placement`` (the
placement lock). Order, bottom first: ``nodes | placement → reservations → maintenance``.
The background CSV import's services are ``inventory.csv_jobs``.
"""

from inventory.services.maintenance import *  # noqa: F403
from inventory.services.nodes import *  # noqa: F403
from inventory.services.placement import *  # noqa: F403
from inventory.services.reservations import *  # noqa: F403
