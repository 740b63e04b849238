"""Day two's tasks: the health rules' evaluation (beat), the hand-over of a replacement,
a node staff marked faulty while rented, the customer's incident emails and the
low-utilisation check."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

from accounts.models import Membership
from core.queues import CeleryQueue
from provisioning.health import services, utilisation
from provisioning.models import HealthIncident, UtilisationAlert
from provisioning.tasks.options import IDEMPOTENT, SWEEP
from provisioning.telemetry.prometheus import PrometheusUnavailable

logger = logging.getLogger(__name__)


@shared_task(
    name="provisioning.tasks.health_evaluate_task", queue=CeleryQueue.PROVISIONING, **SWEEP
)
def health_evaluate_task() -> dict[str, int]:
    """Beat (every PORTAL_HEALTH_EVALUATE_EVERY_S): evaluate the rules, then the sweep."""
    opened = 0
    if settings.PORTAL_PROMETHEUS_URL:
        try:
            opened = len(services.health_evaluate())
        except PrometheusUnavailable as exc:
            logger.error("health rules not evaluated: %s", exc)
    return {"opened": opened, **services.health_sweep()}


@shared_task(
    name="provisioning.tasks.low_utilisation_task", queue=CeleryQueue.PROVISIONING, **SWEEP
)
def low_utilisation_task() -> int:
    """Beat (every minute): orders whose GPUs stay under the threshold."""
    if not settings.PORTAL_PROMETHEUS_URL:
        return 0
    try:
        return len(utilisation.low_utilisation_check())
    except PrometheusUnavailable as exc:
        logger.error("utilisation not checked: %s", exc)
        return 0


@shared_task(
    name="provisioning.tasks.replacement_handover",
    queue=CeleryQueue.PROVISIONING,
    **IDEMPOTENT,
    soft_time_limit=60,
    time_limit=90,
)
def replacement_handover(run_id: int) -> str:
    incident = services.replacement_handover(run_id=run_id)
    return incident.status if incident else "none"


@shared_task(
    name="provisioning.tasks.health_node_marked_faulty",
    queue=CeleryQueue.PROVISIONING,
    **IDEMPOTENT,
    soft_time_limit=120,
    time_limit=150,
)
def health_node_marked_faulty(node_id: int) -> str:
    incident = services.incident_from_staff_fault(node_id=node_id)
    return incident.status if incident else "none"


@shared_task(
    name="provisioning.tasks.health_node_repaired",
    queue=CeleryQueue.PROVISIONING,
    **IDEMPOTENT,
    soft_time_limit=120,
    time_limit=150,
)
def health_node_repaired(node_id: int) -> str:
    incident = services.node_repaired_return(node_id=node_id)
    return incident.status if incident else "none"


@shared_task(
    name="provisioning.tasks.health_incident_email",
    queue=CeleryQueue.PROVISIONING,
    autoretry_for=(ConnectionError, TimeoutError, OSError),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=60,
    time_limit=90,
)
def health_incident_email(incident_id: int, kind: str) -> int:
    """Tell the order's members what failed, with the evidence, and what happens next."""
    incident = (
        HealthIncident.objects.select_related("order__quote", "node", "swap__spare_node")
        .filter(pk=incident_id)
        .first()
    )
    if incident is None or incident.order is None:
        return 0
    order = incident.order
    emails = sorted(
        set(
            Membership.objects.filter(organisation=order.organisation).values_list(
                "user__email", flat=True
            )
        )
        - {""}
    )
    if not emails:
        return 0
    language = getattr(order.quote, "language", "") or settings.LANGUAGE_CODE
    with translation.override(language):
        context = {
            "order": order,
            "incident": incident,
            "kind": kind,
            "evidence": services.incident_evidence(incident),
            "url": settings.PORTAL_BASE_URL
            + reverse("dashboard_order", args=[order.number])
            + "#health",
        }
        subject = render_to_string("provisioning/health/email_subject.txt", context).strip()
        body = render_to_string("provisioning/health/email_body.txt", context)
    return send_mail(subject, body, None, emails)


@shared_task(
    name="provisioning.tasks.utilisation_email",
    queue=CeleryQueue.PROVISIONING,
    autoretry_for=(ConnectionError, TimeoutError, OSError),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=60,
    time_limit=90,
)
def utilisation_email(alert_id: int) -> int:
    alert = UtilisationAlert.objects.select_related("order__quote").filter(pk=alert_id).first()
    if alert is None:
        return 0
    order = alert.order
    emails = sorted(
        set(
            Membership.objects.filter(organisation=order.organisation).values_list(
                "user__email", flat=True
            )
        )
        - {""}
    )
    if not emails:
        return 0
    language = getattr(order.quote, "language", "") or settings.LANGUAGE_CODE
    with translation.override(language):
        context = {
            "order": order,
            "alert": alert,
            "pointer": utilisation.POINTERS.get(alert.pointer, alert.pointer),
            "url": settings.PORTAL_BASE_URL
            + reverse("dashboard_order_monitoring", args=[order.number]),
        }
        subject = render_to_string("provisioning/health/utilisation_subject.txt", context).strip()
        body = render_to_string("provisioning/health/utilisation_body.txt", context)
    return send_mail(subject, body, None, emails)
