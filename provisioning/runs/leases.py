"""A long step's lease, renewed by the step itself while it works (a heartbeat).

The validate step (and the 24-hour burn-in it may include) runs longer than the Redis
broker's visibility timeout, after which a message that is not acknowledged is handed out
again. Rather than a visibility timeout above the longest burn-in (which also makes a job
that a killed worker lost wait that long), the step holds a short lease in PostgreSQL
(``NodeStep.lease_until`` and ``lease_holder``): taken under the step's row lock, renewed
every fifth of its length by a thread of the process that works, never past the step's
own limit. A redelivered copy of the task finds the lease live and held by another
execution and returns without doing anything (and is acknowledged: nothing is lost, the
holder is at work). When the holder dies, its renewals stop, the lease runs out within
``PORTAL_PROVISIONING_LEASE_S`` and the reaper (beat, every minute) or a redelivered
copy takes the step over, once, under the same row lock: a new attempt by a new holder.
Only the holder still named on the step records its outcome.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from types import TracebackType

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from provisioning.models import NodeStep, StepStatus

logger = logging.getLogger(__name__)

#: A holder renews its lease this many times per lease length: four renewals in a row may
#: fail (a database that is away for a moment, a busy machine) before the lease is lost.
RENEWALS_PER_LEASE = 5


def lease_seconds() -> float:
    """How long a long step's lease lasts between two renewals."""
    return float(settings.PORTAL_PROVISIONING_LEASE_S)


def holder_name(worker: str | None = None, task_id: str | None = None) -> str:
    """The name of one execution of a step: the worker (or host and process), the Celery
    task id, and a nonce, since a redelivered message carries the same task id and may
    even reach the same worker."""
    where = worker or f"{socket.gethostname()}:{os.getpid()}"
    return f"{where}/{task_id or '-'}/{uuid.uuid4().hex[:8]}"[:200]


def lease_live(step: NodeStep, now: datetime) -> bool:
    """The step runs under a lease that has not run out (someone is at it)."""
    return step.status == StepStatus.RUNNING and bool(step.lease_until and step.lease_until > now)


def lease_expiry(now: datetime, until: datetime) -> datetime:
    """A lease taken or renewed at ``now``: one lease length, never past ``until``."""
    return min(now + timedelta(seconds=lease_seconds()), until)


def steps_held(step_ids: Sequence[int], holder: str) -> list[int]:
    """The steps among ``step_ids`` that ``holder`` still holds (running, named on them)."""
    return list(
        NodeStep.objects.filter(
            pk__in=list(step_ids), status=StepStatus.RUNNING, lease_holder=holder
        ).values_list("pk", flat=True)
    )


class Heartbeat:
    """``with Heartbeat(step_ids=…, holder=…, until=…):`` renews the steps' lease every
    fifth of its length from a thread of its own (its own database connection, closed at
    the end) while the block runs, never past ``until`` (the step's limit: a holder that
    hangs loses its lease then). A renewal that finds a step no longer held (the reaper or
    staff took it) stops renewing that one and sets ``lost``; a renewal that fails (the
    database away) is logged and tried again at the next beat."""

    def __init__(self, *, step_ids: Sequence[int], holder: str, until: datetime) -> None:
        self.step_ids = list(step_ids)
        self.holder = holder
        self.until = until
        self.every_s = lease_seconds() / RENEWALS_PER_LEASE
        self.renewals = 0
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="step-lease", daemon=True)

    def __enter__(self) -> Heartbeat:
        if self.step_ids:
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every_s) and self.step_ids:
                self.renew()
        finally:
            connection.close()  # this thread's own connection

    def renew(self) -> None:
        """One beat: push the held steps' lease one length further (up to ``until``)."""
        now = timezone.now()
        if now >= self.until:
            return  # past the step's limit: the lease runs out, the reaper takes over
        try:
            renewed = NodeStep.objects.filter(
                pk__in=self.step_ids, status=StepStatus.RUNNING, lease_holder=self.holder
            ).update(lease_until=lease_expiry(now, self.until))
            if renewed < len(self.step_ids):
                held = steps_held(self.step_ids, self.holder)
                logger.warning(
                    "step lease lost: steps %s are no longer held by %s",
                    sorted(set(self.step_ids) - set(held)),
                    self.holder,
                )
                self.step_ids = held
                self.lost.set()
        except DatabaseError:
            logger.exception("step lease renewal failed (holder %s); next beat", self.holder)
            connection.close()  # a fresh connection at the next beat
            return
        self.renewals += 1
