"""Day two's tasks: the health rules' evaluation (beat), the hand-over of a replacement,
a node staff marked faulty while rented, the customer's incident emails and the
low-utilisation check."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import shared_task
from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

from accounts.models import Membership
from billing.models import Order
from core.queues import CeleryQueue
from provisioning.health import services, utilisation
from provisioning.models import HealthIncident, UtilisationAlert
from provisioning.tasks.options import EMAIL, IDEMPOTENT, SWEEP
from provisioning.telemetry.prometheus import PrometheusUnavailable

logger = logging.getLogger(__name__)

# Hand-over and the node's own follow-ups: idempotent, a minute or two.
HANDOVER = {**IDEMPOTENT, "soft_time_limit": 60, "time_limit": 90}
NODE_FOLLOW_UP = {**IDEMPOTENT, "soft_time_limit": 120, "time_limit": 150}


def task(name: str, options: dict[str, Any]) -> Callable[[Callable[..., Any]], Any]:
    """``provisioning.tasks.<name>`` on the provisioning queue with ``options``."""
    return shared_task(name=f"provisioning.tasks.{name}", queue=CeleryQueue.PROVISIONING, **options)


@task("health_evaluate_task", SWEEP)
def health_evaluate_task() -> dict[str, int]:
    """Beat (every PORTAL_HEALTH_EVALUATE_EVERY_S): evaluate the rules, then the sweep."""
    opened = 0
    if settings.PORTAL_PROMETHEUS_URL:
        try:
            opened = len(services.health_evaluate())
        except PrometheusUnavailable as exc:
            logger.error("health rules not evaluated: %s", exc)
    return {"opened": opened, **services.health_sweep()}


@task("low_utilisation_task", SWEEP)
def low_utilisation_task() -> int:
    """Beat (every minute): orders whose GPUs stay under the threshold."""
    if not settings.PORTAL_PROMETHEUS_URL:
        return 0
    try:
        return len(utilisation.low_utilisation_check())
    except PrometheusUnavailable as exc:
        logger.error("utilisation not checked: %s", exc)
        return 0


@task("replacement_handover", HANDOVER)
def replacement_handover(run_id: int) -> str:
    incident = services.replacement_handover(run_id=run_id)
    return incident.status if incident else "none"


@task("health_node_marked_faulty", NODE_FOLLOW_UP)
def health_node_marked_faulty(node_id: int) -> str:
    incident = services.incident_from_staff_fault(node_id=node_id)
    return incident.status if incident else "none"


@task("health_node_repaired", NODE_FOLLOW_UP)
def health_node_repaired(node_id: int) -> str:
    incident = services.node_repaired_return(node_id=node_id)
    return incident.status if incident else "none"


def _mail_members(order: Order, template: str, context: dict[str, Any]) -> int:
    """``<template>_subject.txt`` and ``_body.txt`` in the order's language, to every
    member of the order's organisation with an address."""
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
        context = {key: value() if callable(value) else value for key, value in context.items()}
        subject = render_to_string(f"provisioning/health/{template}_subject.txt", context).strip()
        body = render_to_string(f"provisioning/health/{template}_body.txt", context)
    return send_mail(subject, body, None, emails)


@task("health_incident_email", EMAIL)
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
    return _mail_members(
        order,
        "email",
        {
            "order": order,
            "incident": incident,
            "kind": kind,
            # Callables: computed in the order's language.
            "evidence": lambda: services.incident_evidence(incident),
            "url": lambda: (
                settings.PORTAL_BASE_URL
                + reverse("dashboard_order", args=[order.number])
                + "#health"
            ),
        },
    )


@task("utilisation_email", EMAIL)
def utilisation_email(alert_id: int) -> int:
    alert = UtilisationAlert.objects.select_related("order__quote").filter(pk=alert_id).first()
    if alert is None:
        return 0
    order = alert.order
    return _mail_members(
        order,
        "utilisation",
        {
            "order": order,
            "alert": alert,
            "pointer": lambda: str(utilisation.POINTERS.get(alert.pointer, alert.pointer)),
            "url": lambda: (
                settings.PORTAL_BASE_URL
                + reverse("dashboard_order_monitoring", args=[order.number])
            ),
        },
    )
