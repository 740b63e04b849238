"""Low utilisation (the seeds: under 75 % means a bottleneck, engineers answer within 5
minutes): an order's mean GPU utilisation over ``PORTAL_LOW_UTIL_MINUTES`` below
``PORTAL_LOW_UTIL_THRESHOLD`` raises one alert (the customer is told what the metrics
point at; staff see it on their list until answered)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from billing.models import Order, OrderStatus
from core import jobs
from core.types import Actor
from provisioning.health.signals import low_utilisation_raised
from provisioning.models import RunKind, RunNode, RunNodeState, RunStatus, UtilisationAlert
from provisioning.telemetry import exposition as m
from provisioning.telemetry import prometheus

EMAIL_TASK = "provisioning.tasks.utilisation_email"

POINTERS = {
    "idle": _("GPUs idle: no work is running on them"),
    "memory_bound": _("memory-bound: the GPUs wait on memory, SMs are half busy"),
    "network_bound": _("network-bound: NVLink and InfiniBand are busy while SMs wait"),
    "input_bound": _("input-bound: GPUs wait between steps (data loading, checkpoints)"),
}


def classify(*, util: float, sm: float, fb_frac: float, ib_gbps: float, nic_gbps: float) -> str:
    """What the metrics point at (pure)."""
    if util < 0.05:
        return "idle"
    if nic_gbps and ib_gbps > 0.6 * nic_gbps:
        return "network_bound"
    if fb_frac > 0.85 and sm < 0.5:
        return "memory_bound"
    return "input_bound"


def order_hostnames(order: Order) -> list[str]:
    return list(
        RunNode.objects.filter(
            run__order=order,
            run__kind=RunKind.PROVISION,
            run__status=RunStatus.DELIVERED,
            state=RunNodeState.ACTIVE,
        ).values_list("node__hostname", flat=True)
    )


def _mean(promql: str) -> float | None:
    rows = prometheus.query(promql)
    return rows[0].value if rows else None


def low_utilisation_check() -> list[UtilisationAlert]:
    """One alert per order under the threshold for the whole window. An open alert is
    not raised again; an answered one only after a new full window (the engineer's
    contact is not followed by an alert a minute later)."""
    minutes = settings.PORTAL_LOW_UTIL_MINUTES
    raised: list[UtilisationAlert] = []
    quiet_since = timezone.now() - timedelta(minutes=minutes)
    for order in Order.objects.filter(status=OrderStatus.READY):
        if UtilisationAlert.objects.filter(
            Q(answered_at__isnull=True) | Q(answered_at__gt=quiet_since), order=order
        ).exists():
            continue
        hosts = order_hostnames(order)
        if not hosts:
            continue
        sel = "{" + prometheus.node_selector(hosts) + "}"
        window = f"{minutes}m"
        util = _mean(f"avg(avg_over_time({m.GPU_UTIL}{sel}[{window}])) / 100")
        samples = _mean(f"min(count_over_time({m.GPU_UTIL}{sel}[{window}]))")
        # Only a full window of data says anything (fail closed: no data, no claim).
        expected = minutes * 60 / settings.PORTAL_PROMETHEUS_SCRAPE_INTERVAL_S * 0.8
        if util is None or samples is None or samples < expected:
            continue
        if util >= settings.PORTAL_LOW_UTIL_THRESHOLD:
            continue
        sm = _mean(f"avg(avg_over_time({m.SM_ACTIVE}{sel}[{window}]))") or 0.0
        used = _mean(f"avg(avg_over_time({m.FB_USED}{sel}[{window}]))") or 0.0
        free = _mean(f"avg(avg_over_time({m.FB_FREE}{sel}[{window}]))") or 0.0
        ib = _mean(f"avg(rate({m.IB_XMIT}{sel}[{window}])) * 8 / 1e9") or 0.0
        pointer = classify(
            util=util,
            sm=sm,
            fb_frac=used / (used + free) if used + free else 0.0,
            ib_gbps=ib,
            nic_gbps=400.0,
        )
        try:
            with transaction.atomic():
                alert = UtilisationAlert.objects.create(
                    order=order, utilisation=util, pointer=pointer
                )
                jobs.enqueue(EMAIL_TASK, alert.pk)
                low_utilisation_raised.send(sender=UtilisationAlert, alert=alert)
        except IntegrityError:
            continue
        raised.append(alert)
    return raised


def alert_answer(*, alert: UtilisationAlert, actor: Actor) -> UtilisationAlert:
    if alert.answered_at is None:
        UtilisationAlert.objects.filter(pk=alert.pk, answered_at__isnull=True).update(
            answered_at=timezone.now(),
            answered_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        alert.refresh_from_db()
    return alert
