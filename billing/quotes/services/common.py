"""What every part of the quote services shares: locking, moving, limits, staff mail."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.core.mail import send_mail
from django.db import transaction

from billing.models import Quote, QuoteStatus, SalesProfile
from core import lifecycle
from core.errors import DomainError
from core.types import Actor

DEFAULT_VALIDITY_DAYS = 15

OPEN_STATUSES = (
    QuoteStatus.DRAFT,
    QuoteStatus.PENDING_APPROVAL,
    QuoteStatus.APPROVED,
    QuoteStatus.SENT,
)


class NodesGone(DomainError):
    """The nodes held for a quote were released or taken before it was accepted."""


@dataclass(frozen=True)
class ItemSpec:
    """One thing a quote asks for: nodes (with optional cards), an add-on, a custom line."""

    kind: str
    quantity: Decimal
    node_type_id: int | None = None
    card_gpu_model_id: int | None = None
    cards_per_node: int = 0
    addon_code: str = ""
    description: str = ""
    unit_price: Decimal | None = None
    discountable: bool = False


def move(quote: Quote, target: str, actor: Actor, reason: str = "") -> None:
    """Move a quote whose row the caller has locked (``lock``/``lock_family``)."""
    lifecycle.transition(quote, to=target, actor=actor, reason=reason, locked=True)


def lock(quote: Quote) -> Quote:
    return Quote.objects.select_for_update().select_related("site", "organisation").get(pk=quote.pk)


def lock_family(quote: Quote) -> tuple[Quote, list[Quote]]:
    """Lock every version of the quote's number (in one order, so two sends of different
    versions cannot deadlock); return this version and the others."""
    family = list(
        Quote.objects.select_for_update()
        .select_related("site", "organisation")
        .filter(number=quote.number)
        .order_by("pk")
    )
    this = next(q for q in family if q.pk == quote.pk)
    return this, [q for q in family if q.pk != quote.pk]


def discount_limit(user: Actor) -> Decimal:
    """The extra discount this salesperson may give without a manager's approval."""
    profile = SalesProfile.objects.filter(user=user).first() if user is not None else None
    return profile.max_discount if profile else Decimal("0")


def notify_staff(subject: str, body: str, to: list[str]) -> None:
    """Email staff once the transaction commits (best effort: staff also see the quote)."""
    if not to:
        return
    transaction.on_commit(lambda: send_mail(subject, body, None, to, fail_silently=True))
