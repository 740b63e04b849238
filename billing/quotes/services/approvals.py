"""Discounts above a salesperson's limit: request, approve, decline."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from billing.models import Quote, QuoteStatus, SalesProfile
from billing.quotes.services.common import discount_limit, lock, move, notify_staff
from core.errors import DomainError
from core.types import Actor


def _approvers_emails() -> list[str]:
    return list(
        SalesProfile.objects.filter(can_approve=True)
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    )


@transaction.atomic
def quote_request_approval(*, quote: Quote, actor: Actor, comment: str = "") -> Quote:
    quote = lock(quote)
    limit = discount_limit(actor)
    if quote.extra_discount <= limit:
        raise DomainError(
            _("A %(discount)s discount is within your limit of %(limit)s: send the quote.")
            % {"discount": f"{quote.extra_discount:.2%}", "limit": f"{limit:.2%}"}
        )
    move(quote, QuoteStatus.PENDING_APPROVAL, actor, comment)
    notify_staff(
        _("Approval needed: quote %(number)s v%(version)s")
        % {"number": quote.number, "version": quote.version},
        _("%(user)s asks to give %(discount)s extra discount to %(org)s. %(comment)s")
        % {
            "user": actor.get_username(),
            "discount": f"{quote.extra_discount:.2%}",
            "org": quote.organisation.name,
            "comment": comment,
        },
        _approvers_emails(),
    )
    return quote


def _check_approver(quote: Quote, actor: Actor) -> None:
    profile = SalesProfile.objects.filter(user=actor).first()
    if profile is None or not profile.can_approve:
        raise DomainError(_("Only a sales manager can decide on a discount approval."))
    if quote.extra_discount > profile.max_discount:
        raise DomainError(
            _("A %(discount)s discount is above your own limit of %(limit)s.")
            % {"discount": f"{quote.extra_discount:.2%}", "limit": f"{profile.max_discount:.2%}"}
        )


@transaction.atomic
def quote_approve(*, quote: Quote, actor: Actor, comment: str = "") -> Quote:
    quote = lock(quote)
    _check_approver(quote, actor)
    move(quote, QuoteStatus.APPROVED, actor, comment)
    notify_staff(
        _("Approved: quote %(number)s v%(version)s")
        % {"number": quote.number, "version": quote.version},
        _("%(user)s approved the discount. %(comment)s")
        % {"user": actor.get_username(), "comment": comment},
        [quote.created_by.email] if quote.created_by.email else [],
    )
    return quote


@transaction.atomic
def quote_decline_approval(*, quote: Quote, actor: Actor, comment: str) -> Quote:
    if not comment.strip():
        raise DomainError(_("Say why the discount is not approved."))
    quote = lock(quote)
    _check_approver(quote, actor)
    if quote.status != QuoteStatus.PENDING_APPROVAL:
        raise DomainError(_("This quote is not waiting for approval."))
    move(quote, QuoteStatus.DRAFT, actor, _("Approval declined: %(c)s") % {"c": comment})
    notify_staff(
        _("Not approved: quote %(number)s v%(version)s")
        % {"number": quote.number, "version": quote.version},
        _("%(user)s did not approve the discount: %(comment)s")
        % {"user": actor.get_username(), "comment": comment},
        [quote.created_by.email] if quote.created_by.email else [],
    )
    return quote
