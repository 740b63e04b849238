"""Creating a run and starting it: for a paid order, once its release's time has come
(the rental's start minus the site's lead time), or by the beat job for the ones due."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import Order, OrderStatus, ProvisioningRelease
from billing.orders.selectors import order_nodes
from billing.orders.services import order_transition
from core import lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor
from inventory.models import Node
from provisioning.models import ProvisioningRun, RunKind, RunNode, RunStatus
from provisioning.models.runs import ACTIVE_RUN_STATUSES
from provisioning.runs.drivers import driver_kind
from provisioning.runs.plan import deadline, steps_for
from provisioning.runs.records import create_steps, run_launch

logger = logging.getLogger(__name__)


@transaction.atomic
def run_create(
    *, order: Order, kind: str = RunKind.PROVISION, nodes: list[Node] | None = None
) -> ProvisioningRun:
    """The order's run of ``kind`` with a slot and its steps per node. Idempotent: an
    active run of that kind (or a delivered provisioning run) is returned as it is.
    Replacement runs are not: an order may have several at once (one per failed node),
    and their caller keeps each incident to one run (``provisioning.health.services``)."""
    order = Order.objects.select_for_update().get(pk=order.pk)
    existing = (
        ProvisioningRun.objects.filter(order=order, kind=kind)
        .filter(
            Q(status__in=ACTIVE_RUN_STATUSES)
            | Q(status=RunStatus.DELIVERED, kind=RunKind.PROVISION)
        )
        .first()
        if kind != RunKind.REPLACE
        else None
    )
    if existing is not None:
        return existing
    nodes = nodes if nodes is not None else order_nodes(order)
    if not nodes:
        raise DomainError(_("Order %(n)s has no booked nodes to work on.") % {"n": order.number})
    run = ProvisioningRun.objects.create(
        order=order,
        kind=kind,
        driver=",".join(sorted({driver_kind(n) for n in nodes})),
        message=_("Waiting for a worker."),
    )
    RunNode.objects.bulk_create([RunNode(run=run, node=n, slot=i) for i, n in enumerate(nodes)])
    for node in nodes:
        create_steps(run, node, steps_for(kind))
    lifecycle.record_creation([run], reason=Text("Created for order %(n)s.", n=order.number))
    return run


@transaction.atomic
def run_start(*, run: ProvisioningRun, actor: Actor = None) -> ProvisioningRun:
    """pending → running; the order paid → provisioning; the canvas is launched."""
    run = ProvisioningRun.objects.select_for_update().get(pk=run.pk)
    if run.status != RunStatus.PENDING:
        return run
    now = timezone.now()
    lifecycle.transition(
        run,
        to=RunStatus.RUNNING,
        actor=actor,
        reason=Text("Started."),
        updates={"started_at": now, "deadline_at": deadline(now), "message": _("Started.")},
        locked=True,
    )
    if run.kind == RunKind.PROVISION:
        order = Order.objects.select_for_update().get(pk=run.order_id)
        if order.status == OrderStatus.PAID:
            order_transition(
                order=order,
                to_status=OrderStatus.PROVISIONING,
                actor=actor,
                reason=Text("Provisioning started."),
            )
    run_launch(run)
    return run


def provisioning_begin(*, order_id: int) -> ProvisioningRun | None:
    """Create the paid order's run and start it now (safe to call twice). Paid orders go
    through ``provisioning_start_when_due``, which waits for the release's time."""
    order = Order.objects.filter(pk=order_id).first()
    if order is None or order.status not in (OrderStatus.PAID, OrderStatus.PROVISIONING):
        return None
    run = run_create(order=order)
    return run_start(run=run)


def provisioning_due_at(order_id: int) -> datetime | None:
    """When the order's run may start (the gate's ``provision_at``: the rental's start
    minus the site's lead time); ``None`` when the order was never released."""
    release = ProvisioningRelease.objects.filter(order_id=order_id).first()
    if release is None:
        return None
    return release.provision_at or release.released_at


def provisioning_start_when_due(
    *, order_id: int, now: datetime | None = None
) -> ProvisioningRun | datetime | None:
    """The entry point of a released order: its run is started if its time has come;
    otherwise the time it will start is returned (``provisioning_start_due`` starts it
    then). ``None``: not released, or not a paid order any more."""
    now = now or timezone.now()
    due = provisioning_due_at(order_id)
    if due is None:
        return None
    if due > now:
        return due
    return provisioning_begin(order_id=order_id)


def provisioning_start_due(*, now: datetime | None = None, limit: int = 100) -> int:
    """Beat: start the runs of released, paid orders whose time has come and that have no
    provisioning run yet. Idempotent: a started order is ``provisioning`` (no longer
    paid) and ``run_create`` returns an existing run. Returns how many were started."""
    now = now or timezone.now()
    has_run = ProvisioningRun.objects.filter(order=OuterRef("order"), kind=RunKind.PROVISION)
    due = list(
        ProvisioningRelease.objects.filter(order__status=OrderStatus.PAID)
        .filter(Q(provision_at__lte=now) | Q(provision_at__isnull=True))
        .filter(~Exists(has_run))
        .order_by("provision_at", "pk")
        .values_list("order_id", flat=True)[:limit]
    )
    started = 0
    for order_id in due:
        try:
            if provisioning_begin(order_id=order_id) is not None:
                started += 1
        except DomainError as exc:  # e.g. no booked nodes: say so, go on with the others
            logger.error("order %s could not start provisioning: %s", order_id, exc)
    return started
