"""A ticket's two clocks: the first response and the resolution, per contract tier and
priority (and the seeds' own promise for a utilisation problem).

Sources of the figures:
- The contract's §7.1 (``billing.contracts.documents``): fault response within
  ``FAULT_RESPONSE_MINUTES``, faulty hardware replaced within ``REPLACEMENT_HOURS``, around
  the clock: an urgent ticket of an order under a signed contract runs on those.
- The seeds (FAQ Q3): "if utilisation stays below 75 %, our engineers respond within 5
  minutes": a utilisation ticket's first response is due within 5 minutes in every tier.

Clocks run around the clock (the contract says so) and stop while the ticket waits on the
customer: each pause moves the due times of the running clocks by its length.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from billing.contracts.documents import FAULT_RESPONSE_MINUTES, REPLACEMENT_HOURS

CONTRACT = "contract"  # an order under a signed contract
STANDARD = "standard"  # self-service orders and questions without an order

URGENT, HIGH, NORMAL, LOW = "urgent", "high", "normal", "low"
UTILISATION = "utilisation"
UTILISATION_RESPONSE = timedelta(minutes=5)  # the seeds' promise


@dataclass(frozen=True)
class Targets:
    response: timedelta
    resolution: timedelta


H = timedelta(hours=1)

TABLE: dict[str, dict[str, Targets]] = {
    CONTRACT: {
        URGENT: Targets(timedelta(minutes=FAULT_RESPONSE_MINUTES), REPLACEMENT_HOURS * H),
        HIGH: Targets(1 * H, 8 * H),
        NORMAL: Targets(4 * H, 48 * H),
        LOW: Targets(24 * H, 120 * H),
    },
    STANDARD: {
        URGENT: Targets(1 * H, 8 * H),
        HIGH: Targets(4 * H, 24 * H),
        NORMAL: Targets(8 * H, 72 * H),
        LOW: Targets(24 * H, 168 * H),
    },
}


def targets(*, tier: str, priority: str, category: str) -> Targets:
    """The response and resolution targets of a ticket (``KeyError`` for unknown codes)."""
    base = TABLE[tier][priority]
    if category == UTILISATION:
        return Targets(min(base.response, UTILISATION_RESPONSE), base.resolution)
    return base


def shifted(due: datetime | None, pause: timedelta) -> datetime | None:
    """A running clock's due time after a pause of ``pause``."""
    return due + pause if due is not None else None


def remaining(
    *, due: datetime, stopped_at: datetime | None, paused_at: datetime | None, now: datetime
) -> timedelta:
    """Time left on a clock (negative: overdue). A stopped clock keeps what it had when it
    stopped; a paused one what it had when the pause began."""
    at = stopped_at or paused_at or now
    return due - at
