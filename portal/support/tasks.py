"""Thin tasks of the support desk: tickets the portal opens itself, the ticket emails and
the clocks' sweep (beat). Each takes ids, re-reads and is safe to run twice."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage
from django.db import InterfaceError, OperationalError
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

from accounts import selectors as account_selectors
from accounts.models import Membership
from core.queues import CeleryQueue
from portal.support import inbound, selectors, services
from portal.support.models import Ticket, TicketMessage

IDEMPOTENT: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "max_retries": 5,
    "soft_time_limit": 60,
    "time_limit": 90,
}
EMAIL: dict[str, Any] = {
    "autoretry_for": (ConnectionError, TimeoutError, OSError),
    "retry_backoff": True,
    "max_retries": 5,
    "soft_time_limit": 60,
    "time_limit": 90,
}


@shared_task(
    name="portal.support.tasks.ticket_from_low_utilisation", queue=CeleryQueue.DEFAULT, **IDEMPOTENT
)
def ticket_from_low_utilisation(alert_id: int) -> int | None:
    ticket = services.ticket_open_for_low_utilisation(alert_id=alert_id)
    return ticket.pk if ticket else None


@shared_task(
    name="portal.support.tasks.ticket_from_replacement", queue=CeleryQueue.DEFAULT, **IDEMPOTENT
)
def ticket_from_replacement(incident_id: int) -> int | None:
    ticket = services.ticket_open_for_replacement(incident_id=incident_id)
    return ticket.pk if ticket else None


@shared_task(
    name="portal.support.tasks.ticket_clocks_sweep_task",
    queue=CeleryQueue.DEFAULT,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=60,
    time_limit=90,
)
def ticket_clocks_sweep_task() -> int:
    return services.ticket_clocks_sweep()


def _customer_emails(ticket: Ticket) -> list[str]:
    if ticket.opened_by_id and ticket.opened_by and ticket.opened_by.email:
        if Membership.objects.filter(
            organisation=ticket.organisation_id, user=ticket.opened_by_id
        ).exists():
            return [ticket.opened_by.email]
    return sorted(
        set(
            Membership.objects.filter(organisation=ticket.organisation_id).values_list(
                "user__email", flat=True
            )
        )
        - {""}
    )


def _staff_emails(ticket: Ticket) -> dict[str, list[str]]:
    """Support's addresses by the language each person last chose (``LANGUAGE_CODE``
    for those who never chose one): the assignee, or everyone who works tickets."""
    if ticket.assignee_id and ticket.assignee and ticket.assignee.email:
        people = [(ticket.assignee.pk, ticket.assignee.email)]
    else:
        users = get_user_model().objects.with_perm(services.WORK_TICKETS, include_superusers=False)
        people = list(users.filter(is_active=True).exclude(email="").values_list("pk", "email"))
    chosen = account_selectors.user_languages(pk for pk, _email in people)
    by_language: dict[str, set[str]] = {}
    for pk, email in people:
        by_language.setdefault(chosen.get(pk, settings.LANGUAGE_CODE), set()).add(email)
    return {language: sorted(emails) for language, emails in sorted(by_language.items())}


def _send(ticket: Ticket, kind: str, message: TicketMessage | None, *, to: list[str],
          language: str, staff: bool) -> int:  # fmt: skip
    if not to:
        return 0
    with translation.override(language):
        url_name = "support_staff_ticket" if staff else "support_ticket"
        context = {
            "ticket": ticket,
            "kind": kind,
            "message": message,
            "clocks": selectors.ticket_clocks(ticket),
            "url": settings.PORTAL_BASE_URL + reverse(url_name, args=[ticket.pk]),
        }
        reply_to = "" if staff else inbound.reply_address(ticket)
        context["reply_by_email"] = bool(reply_to)
        subject = render_to_string("email/support_ticket_subject.txt", context).strip()
        body = render_to_string("email/support_ticket.txt", context)
    email = EmailMessage(subject, body, None, to, reply_to=[reply_to] if reply_to else None)
    return email.send()


@shared_task(name="portal.support.tasks.ticket_email", queue=CeleryQueue.DEFAULT, **EMAIL)
def ticket_email(ticket_id: int, kind: str, message_id: int | None = None) -> int:
    """``opened``: the customer gets the reference and the clocks, support the new
    ticket; ``reply`` and ``resolved``: the customer gets support's words;
    ``customer_reply``: the assignee (or all of support) gets the customer's; ``missed``:
    they are told a clock ran out."""
    ticket = (
        Ticket.objects.select_related("organisation", "opened_by", "assignee", "order")
        .filter(pk=ticket_id)
        .first()
    )
    if ticket is None:
        return 0
    message = (
        TicketMessage.objects.filter(pk=message_id, ticket=ticket, internal=False).first()
        if message_id
        else None
    )
    if message_id and message is None:
        return 0  # never an internal note, never another ticket's message
    sent = 0
    if kind in ("opened", "reply", "resolved"):
        if not (kind == "opened" and ticket.opened_by_id is None):
            sent += _send(
                ticket, kind, message, to=_customer_emails(ticket), language=ticket.language,
                staff=False,
            )  # fmt: skip
    if kind in ("opened", "customer_reply", "missed"):
        for language, to in _staff_emails(ticket).items():
            sent += _send(ticket, kind, message, to=to, language=language, staff=True)
    return sent
