"""The demo's running order (``seed_demo``): two Shenzhen H100 nodes the demo customer
ordered on the shop three days ago, for a month from today, accepted the standard terms
for, and paid by bank transfer (finance recorded it the next day).

Why the history is replayed rather than made now: the rules refuse an order that starts
sooner than the site's lead time and a bank transfer's working day (``hold_terms``,
``earliest_start_for``), so a rental starting today can only have been ordered days ago.
The commercial steps therefore run through the real services (``order_self_service``,
``terms_accept``, ``invoice_mark_paid_by_transfer``) with their clock set to the moments
they would have happened (``_clock_at``); nothing is written around them. Provisioning is
not replayed: the payment releases the order (``billing.contracts.gate``) whose time has
come, the release enqueues ``provisioning_start`` through the outbox, and the embedded
worker and beat (``provisioning-start-due``) provision and validate it live on the
simulated hardware, as for any paid order.

Idempotent: while the demo customer has a live order of this scenario (found by its
idempotency key), it is returned as it is; once it has ended a new one is made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from django.contrib.auth import get_user_model
from django.utils import timezone, translation

from accounts import services as account_services
from accounts.models import Organisation, SshPublicKey
from billing.contracts import gate
from billing.demo import DEMO_CUSTOMER_NAME, DEMO_ORGANISATION_TAX_IDS
from billing.models import Invoice, Order, OrderStatus, PaymentMethod
from billing.orders.services import invoice_mark_paid_by_transfer
from billing.pricing import periods
from billing.pricing.periods import site_today
from billing.shop.selfservice import order_self_service
from inventory.models import NodeType, Site

SITE = "SZ"
NODE_TYPE = "h100-8x-nvlink"
NODES = 2
KEY_PREFIX = "demo-running-"
# The demo customer's public key, installed on the nodes (its private half was thrown
# away when it was made: nobody can log in with it).
DEMO_SSH_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIj7fv4Ih9Qgg7tjv6tj2kARsI5xcsjA7+hZ3CVlIDEU "
    "li.wei@pearlriver.example"
)
DEMO_SSH_KEY_NAME = "李伟的工作站"
FINISHED = (OrderStatus.ENDED, OrderStatus.CANCELLED, OrderStatus.EXPIRED)


def demo_running_order() -> Order:
    """The demo customer's order that is running now (made when there is none)."""
    org = Organisation.objects.get(tax_id=DEMO_ORGANISATION_TAX_IDS[0])
    ours = Order.objects.filter(organisation=org, idempotency_key__startswith=KEY_PREFIX)
    live = ours.exclude(status__in=FINISHED).order_by("-pk").first()
    if live is not None:
        return live
    users = get_user_model().objects
    customer, finance = users.get(username="customer"), users.get(username="finance")
    site = Site.objects.get(code=SITE)
    _demo_ssh_key(org)
    start = site_today(site)
    ordered_at = _at(site.tzinfo, start - timedelta(days=3), time(10, 0))
    paid_at = _at(site.tzinfo, start - timedelta(days=2), time(11, 0))
    with translation.override("zh-hans"), _clock_at(ordered_at):
        order = order_self_service(
            user=customer,
            organisation=org,
            site=site,
            node_type=NodeType.objects.get(code=NODE_TYPE),
            node_count=NODES,
            card_gpu_model_id=None,
            cards_per_node=0,
            term="month",
            duration=1,
            start_date=start,
            addons={},
            payment_method=PaymentMethod.BANK_TRANSFER,
            ip="203.0.113.9",
            idempotency_key=f"{KEY_PREFIX}{start.isoformat()}-{ours.count() + 1}",
        )
    with _clock_at(ordered_at + timedelta(minutes=10)):
        gate.terms_accept(order=order, user=customer, name=DEMO_CUSTOMER_NAME, ip="203.0.113.9")
    invoice = Invoice.objects.filter(order=order).order_by("pk").first()
    assert invoice is not None  # order_create_from_quote issues the first period's
    with _clock_at(paid_at):
        invoice_mark_paid_by_transfer(
            invoice=invoice,
            reference=f"DEMO-{order.number}",
            actor=finance,
            value_date=paid_at.date(),
        )
    order.refresh_from_db()
    if order.status != OrderStatus.PAID:  # the services refused: say so, write nothing
        raise RuntimeError(f"the demo's running order {order.number} is {order.status}")
    return order


def _demo_ssh_key(org: Organisation) -> None:
    if not SshPublicKey.objects.filter(organisation=org, public_key=DEMO_SSH_KEY).exists():
        account_services.ssh_key_add(
            organisation=org, name=DEMO_SSH_KEY_NAME, public_key=DEMO_SSH_KEY, actor=None
        )


def _at(tz: tzinfo, day: date, at: time) -> datetime:
    return datetime.combine(day, at, tzinfo=tz).astimezone(UTC)


@contextmanager
def _clock_at(moment: datetime) -> Iterator[None]:
    """The services' clock reads ``moment`` and runs on from it: ``timezone.now`` (every
    timestamp the services and ``auto_now_add`` write) and the site calendar of
    ``billing.pricing.periods`` (the only clock of billing that is not ``timezone.now``;
    ``tests/portal/test_seed_demo_running_order.py`` checks the history reads as one)."""
    real_now: Callable[[], datetime] = timezone.now
    real_datetime = periods.datetime
    offset = real_now() - moment

    class _Shifted(real_datetime):  # type: ignore[valid-type]
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:
            return real_datetime.now(tz) - offset

        @classmethod
        def combine(cls, *args: object, **kwargs: object) -> datetime:
            return real_datetime.combine(*args, **kwargs)

    setattr(timezone, "now", lambda: real_now() - offset)  # noqa: B010
    setattr(periods, "datetime", _Shifted)  # noqa: B010
    try:
        yield
    finally:
        setattr(timezone, "now", real_now)  # noqa: B010
        setattr(periods, "datetime", real_datetime)  # noqa: B010
