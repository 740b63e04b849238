"""Writes of the operations console that need orders and customers: telling the
customers a maintenance plan touches (email and the ``maintenance.announced`` webhook).

``inventory`` plans the work and knows nodes, not customers: it enqueues
``portal.operations.tasks.maintenance_notify_task`` by name when the notice time has come
(and beat's sweep finds the later ones); the task calls ``maintenance_notify`` here.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMessage
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation

from accounts import webhooks
from billing.models import Order
from core import jobs
from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from inventory.models import MaintenanceNotice, MaintenancePlan, MaintenanceStatus
from portal.operations import selectors

EMAIL_TASK = "portal.operations.tasks.maintenance_email_task"
FEED_SALT = "portal.operations.maintenance-feed"


def feed_token(organisation_id: int) -> str:
    """The organisation's secret calendar address part (signed: nothing stored)."""
    return signing.Signer(salt=FEED_SALT).sign(str(organisation_id))


def feed_organisation_id(token: str) -> int | None:
    try:
        return int(signing.Signer(salt=FEED_SALT).unsign(token))
    except (signing.BadSignature, ValueError):
        return None


def feed_url(organisation_id: int) -> str:
    return settings.PORTAL_BASE_URL + reverse(
        "maintenance_feed", args=[feed_token(organisation_id)]
    )


def plan_affected(plan: MaintenancePlan) -> list[selectors.Affected]:
    """The bookings the plan's windows cover now."""
    node_ids = list(plan.windows.values_list("node_id", flat=True))
    return selectors.affected_bookings(
        inventory_selectors.maintenance_clashes(
            node_ids=node_ids, start_at=plan.start_at, end_at=plan.end_at
        )
    )


def maintenance_notify(*, plan_id: int, now: datetime | None = None) -> int:
    """Tell every customer with a booking under the plan's windows, once: a notice per
    organisation (its email sent by a task through the outbox) and the
    ``maintenance.announced`` webhook; then the plan is announced. Returns the number of
    organisations told (0 when the plan was told already or called off)."""
    now = now or timezone.now()
    with transaction.atomic():
        plan = MaintenancePlan.objects.select_for_update().select_related("site").get(pk=plan_id)
        if plan.status != MaintenanceStatus.SCHEDULED:
            return 0
        affected = plan_affected(plan)
        by_org: dict[int, list[selectors.Affected]] = defaultdict(list)
        for item in affected:
            if item.owner.organisation_id:
                by_org[item.owner.organisation_id].append(item)
        languages = dict(
            Order.objects.filter(
                number__in=[a.owner.number for a in affected if a.owner.kind == "order"]
            ).values_list("organisation_id", "quote__language")
        )
        for org_id, items in sorted(by_org.items()):
            notice, created = MaintenanceNotice.objects.get_or_create(
                plan=plan,
                organisation_id=org_id,
                defaults={
                    "orders": [
                        {"number": a.owner.number, "kind": a.owner.kind, "nodes": a.nodes}
                        for a in items
                    ],
                    "language": languages.get(org_id, settings.LANGUAGE_CODE),
                },
            )
            webhooks.emit_event(
                org_id,
                "maintenance.announced",
                _webhook_data(plan, items),
                dedupe=f"maintenance.announced:{plan.pk}:{org_id}",
            )
            if created:
                jobs.enqueue(EMAIL_TASK, notice.pk)
        inventory_services.maintenance_plan_announce(plan=plan, now=now)
        return len(by_org)


def _webhook_data(plan: MaintenancePlan, items: list[selectors.Affected]) -> dict[str, Any]:
    return {
        "maintenance": plan.pk,
        "title": plan.title,
        "site": plan.site.code,
        "start_at": plan.start_at.isoformat(),
        "end_at": plan.end_at.isoformat(),
        "unplanned": plan.unplanned,
        "orders": [
            {"number": a.owner.number, "nodes": sorted(a.nodes)}
            for a in items
            if a.owner.kind == "order"
        ],
        "quotes": [
            {"number": a.owner.number, "nodes": sorted(a.nodes)}
            for a in items
            if a.owner.kind == "quote"
        ],
    }


def notice_recipients(notice: MaintenanceNotice) -> list[str]:
    """The organisation's billing address and the contacts of its affected orders."""
    numbers = [o["number"] for o in notice.orders if o.get("kind") == "order"]
    found = [notice.organisation.billing_email]
    found += list(
        Order.objects.filter(number__in=numbers).values_list("quote__contact_email", flat=True)
    )
    return list(dict.fromkeys(a for a in found if a))


def maintenance_email_send(*, notice_id: int) -> str:
    """The notice's email, in the customer's language, sent once (claimed first; a
    failed send gives the claim back)."""
    notice = MaintenanceNotice.objects.select_related("plan__site", "organisation").get(
        pk=notice_id
    )
    if notice.emailed_at is not None:
        return "skipped"
    to = notice_recipients(notice)
    if not to:
        return "no address"
    plan = notice.plan
    tz = plan.site.tzinfo
    with translation.override(notice.language or settings.LANGUAGE_CODE):
        values = {
            "plan": plan,
            "organisation": notice.organisation,
            "start": timezone.localtime(plan.start_at, tz).strftime("%Y-%m-%d %H:%M"),
            "end": timezone.localtime(plan.end_at, tz).strftime("%Y-%m-%d %H:%M"),
            "zone": plan.site.timezone,
            "orders": notice.orders,
            "feed_url": feed_url(notice.organisation_id),
        }
        subject = render_to_string("email/maintenance_announced_subject.txt", values).strip()
        body = render_to_string("email/maintenance_announced.txt", values)
    claimed = MaintenanceNotice.objects.filter(pk=notice.pk, emailed_at__isnull=True).update(
        emailed_at=timezone.now()
    )
    if not claimed:
        return "skipped"
    try:
        EmailMessage(subject=subject, body=body, to=to).send()
    except Exception:
        MaintenanceNotice.objects.filter(pk=notice.pk).update(emailed_at=None)
        raise
    return "sent"
