"""Payment and hold terms: how long a quote's nodes are held for each payment method, the
methods offered, and the texts the documents print about them (reads, no writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import stripe_api
from billing.models import (
    PaymentMethod,
)
from billing.pricing import schedule
from billing.pricing.periods import acceptance_deadline, earliest_start_date
from inventory.models import Site

CARD_HOLD = timedelta(minutes=30)
# Holds outlive the payment deadline by this much, so a payment confirmed at the last
# moment (Alipay, 3-D Secure) still finds its nodes; unpaid orders expire after it too.
PAYMENT_GRACE = timedelta(minutes=15)
SELF_SERVICE_TRANSFER_HOLD = timedelta(days=2)
# A bank transfer needs a working day to arrive; a shorter deadline is not offered.
TRANSFER_MIN_WINDOW = timedelta(hours=24)
CARD_METHODS = (PaymentMethod.CARD, PaymentMethod.ALIPAY, PaymentMethod.WECHAT_PAY)


@dataclass(frozen=True)
class HoldTerms:
    """How long an order's nodes are held and when it must be paid, for one method.

    The one rule every page, PDF and email states (``hold_terms``): card, Alipay and
    WeChat Pay 30 minutes; bank transfer until the quote's expiry (self-service: at most
    two days), never later than the start minus the site's lead time.
    """

    method: str
    pay_by: datetime  # the payment deadline; unpaid by then the order expires
    possible: bool = True  # False: a transfer cannot arrive before the start's lead time
    transfer_start: date | None = None  # when not possible: the earliest start that works

    @property
    def held_until(self) -> datetime:
        return self.pay_by + PAYMENT_GRACE

    @property
    def is_card(self) -> bool:
        return self.method in CARD_METHODS


def hold_terms(
    *,
    site: Site,
    start_date: date,
    method: str,
    quote_expires_at: datetime | None = None,
    self_service: bool = True,
    now: datetime | None = None,
) -> HoldTerms:
    """The payment deadline (and so the hold) of an order paid by ``method``: the one
    function behind the configure page, the quote page and PDF, the pay page and emails."""
    now = now or timezone.now()
    if method in CARD_METHODS:
        return HoldTerms(method=method, pay_by=now + CARD_HOLD)
    due = quote_expires_at or now + SELF_SERVICE_TRANSFER_HOLD
    if self_service:
        due = min(due, now + SELF_SERVICE_TRANSFER_HOLD)
    latest = acceptance_deadline(site=site, start_date=start_date)
    due = min(due, latest)
    if due < now + TRANSFER_MIN_WINDOW:
        moved = earliest_start_date(site, now=now + TRANSFER_MIN_WINDOW)
        return HoldTerms(
            method=method,
            pay_by=max(due, now + timedelta(hours=1)),
            possible=False,
            transfer_start=moved,
        )
    return HoldTerms(method=method, pay_by=due)


def invoice_issue_days() -> int:
    """Later billing periods are issued this many days before they start (the one setting
    the schedule, the beat job, the contract and the pages read)."""
    return int(settings.PORTAL_INVOICE_ISSUE_DAYS)


def billing_schedule(
    *,
    quote: Any,
    tz: tzinfo,
    lines: list[schedule.ChargeLine],
    order: Any = None,
) -> list[schedule.Period]:
    """The billing periods of ``quote`` with their issue and due dates
    (``billing.pricing.schedule``): period 1 is issued with the ``order`` (when there is
    one) and due by its payment deadline."""
    first_issued_on = first_due_on = None
    if order is not None:
        if order.created_at is not None:
            first_issued_on = order.created_at.astimezone(tz).date()
        if order.payment_due_at is not None:
            first_due_on = order.payment_due_at.astimezone(tz).date()
    return schedule.invoice_schedule(
        term=quote.term,
        duration=quote.duration,
        start_date=quote.start_date,
        tz=tz,
        lines=lines,
        issue_days=invoice_issue_days(),
        first_issued_on=first_issued_on,
        first_due_on=first_due_on,
    )


def earliest_start_for(site: Site, methods: list[str], *, now: datetime | None = None) -> date:
    """The earliest start date that every one of ``methods`` can meet (the rule of
    ``hold_terms``): the site's lead time for any method, and for a bank transfer a
    payment deadline at least ``TRANSFER_MIN_WINDOW`` away, before that lead time."""
    now = now or timezone.now()
    start = earliest_start_date(site, now=now)
    if any(method not in CARD_METHODS for method in methods):
        start = max(start, earliest_start_date(site, now=now + TRANSFER_MIN_WINDOW))
    return start


def earliest_start_reason(site: Site, methods: list[str], *, now: datetime | None = None) -> str:
    """The earliest start and why it is not sooner, for the methods offered."""
    values = {
        "date": earliest_start_for(site, methods, now=now).isoformat(),
        "hours": site.lead_time_hours,
    }
    if any(method not in CARD_METHODS for method in methods):
        return (
            _(
                "The earliest start is %(date)s: the nodes need %(hours)s hours to prepare, "
                "and a bank transfer needs a working day to arrive before that."
            )
            % values
        )
    return _("The earliest start is %(date)s: the nodes need %(hours)s hours to prepare.") % values


def acceptance_refusal(
    *,
    site: Site,
    start_date: date,
    quote_expires_at: datetime,
    self_service: bool,
    methods: list[str] | None = None,
    now: datetime | None = None,
) -> str:
    """Why the customer could not accept a quote sent now ("" when they can): the one
    rule ``quote_send`` enforces and the sales page states before Send. The customer can
    accept when the quote is still open and at least one offered payment method works:
    the nodes can be ready by the start (the site's lead time) and, for a bank transfer,
    ``hold_terms`` gives a deadline the money can meet (card, Alipay and WeChat Pay are
    offered only when Stripe is configured)."""
    now = now or timezone.now()
    methods = payment_methods_offered() if methods is None else methods
    earliest = min(earliest_start_for(site, [m], now=now) for m in methods)
    if start_date < earliest:
        return _(
            "The customer could not accept this quote: the earliest start the customer "
            "can pay for in time (%(methods)s) is %(date)s. Move the start date."
        ) % {"methods": payment_methods_text(methods), "date": earliest.isoformat()}
    if quote_expires_at <= now:
        return _("The quote's validity has passed: set a later validity date.")
    if any(m in CARD_METHODS for m in methods):
        return ""
    terms = hold_terms(
        site=site,
        start_date=start_date,
        method=PaymentMethod.BANK_TRANSFER,
        quote_expires_at=quote_expires_at,
        self_service=self_service,
        now=now,
    )
    if not terms.possible and quote_expires_at < now + TRANSFER_MIN_WINDOW:
        return _(
            "The customer could not accept this quote: only bank transfer is offered and "
            "the quote expires at %(when)s, before a transfer can arrive. Set a later "
            "validity date."
        ) % {"when": quote_expires_at.astimezone(site.tzinfo).strftime("%Y-%m-%d %H:%M")}
    if not terms.possible:
        return _(
            "The customer could not accept this quote: only bank transfer is offered and "
            "the money could not arrive before the nodes must be prepared. Start on "
            "%(date)s or later."
        ) % {"date": terms.transfer_start.isoformat() if terms.transfer_start else "—"}
    return ""


def transfer_refusal(terms: HoldTerms) -> str:
    """What the customer reads when a bank transfer cannot arrive in time for the start."""
    return _(
        "A bank transfer cannot arrive before this start date (the nodes need preparing): "
        "pay online, or start on %(date)s or later."
    ) % {"date": terms.transfer_start.isoformat() if terms.transfer_start else "—"}


def payment_methods_offered() -> list[str]:
    """The payment methods this portal can take, in the order offered: the online ones
    configured on Stripe (``STRIPE_PAYMENT_METHODS``, only when its keys are set), then
    bank transfer. Pages, forms and documents mention only these."""
    online: list[str] = []
    if stripe_api.is_configured():
        online = [m for m in stripe_api.payment_methods() if m in CARD_METHODS]
    return [*online, PaymentMethod.BANK_TRANSFER]


def online_methods_text() -> str:
    """``card, Alipay or WeChat Pay``: the online methods offered, in a sentence; empty
    where Stripe is not configured (then only bank transfer is offered). The one source
    of the pay page, the payment emails and the payment documents."""
    return payment_methods_text([m for m in payment_methods_offered() if m in CARD_METHODS])


def payment_methods_text(methods: list[str]) -> str:
    """``card, Alipay or bank transfer``: the offered methods in a sentence."""
    labels = [str(PaymentMethod(m).label) for m in methods]
    if len(labels) <= 1:
        return labels[0] if labels else ""
    return _("%(first)s or %(last)s") % {"first": _(", ").join(labels[:-1]), "last": labels[-1]}


def hold_rows(
    *,
    site: Site,
    start_date: date,
    now: datetime,
    quote_expires_at: datetime | None = None,
    self_service: bool = True,
) -> list[dict[str, Any]]:
    """What a document states about holds, one row per payment method offered: the same
    ``hold_terms`` the order will get (quotes, estimates, their emails and pages)."""
    methods = payment_methods_offered()
    rows: list[dict[str, Any]] = []
    online = [m for m in methods if m in CARD_METHODS]
    if online:
        rows.append(
            {
                "online": True,
                "methods": payment_methods_text(online),
                "minutes": int(CARD_HOLD.total_seconds() // 60),
            }
        )
    if PaymentMethod.BANK_TRANSFER in methods:
        terms = hold_terms(
            site=site,
            start_date=start_date,
            method=PaymentMethod.BANK_TRANSFER,
            quote_expires_at=quote_expires_at,
            self_service=self_service,
            now=now,
        )
        rows.append(
            {
                "online": False,
                "possible": terms.possible,
                "pay_by": terms.pay_by.astimezone(site.tzinfo).strftime("%Y-%m-%d %H:%M"),
                "refusal": "" if terms.possible else transfer_refusal(terms),
            }
        )
    return rows
