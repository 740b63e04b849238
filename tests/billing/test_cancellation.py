"""Free cancellation before delivery, from the customer's order page: the booking is
released, open payment documents voided, the contract cancelled, payments refunded (a
bank transfer noted for finance), touched nodes wiped; a delivered order cannot."""

import pytest
from django.urls import reverse
from django.utils import translation

from billing.models import ContractStatus, InvoiceStatus, OrderStatus
from billing.orders.services import order_mark_paid
from billing.shop import cancellation
from core.errors import DomainError
from core.models import OutboxMessage
from inventory import selectors
from inventory.models import ReservationStatus
from provisioning import runs
from provisioning.models import ProvisioningRun, RunKind
from tests import factories
from tests.billing.test_payments import make_order, reservations
from tests.provisioning.test_runs import drive, fast  # noqa: F401 (fast: autouse)

pytestmark = pytest.mark.django_db


def cancel_url(order):
    with translation.override("en"):
        return reverse("dashboard_order_cancel", args=[order.number])


def test_the_customer_cancels_an_unpaid_order_from_its_page(demo, client):
    order = make_order(demo, nodes=2)
    held = [r.node for r in reservations(order)]
    client.force_login(demo["customer"])
    with translation.override("en"):
        page = client.get(reverse("dashboard_order", args=[order.number])).content.decode()
    assert "Cancel this order free of charge" in page
    refused = client.post(cancel_url(order), {}, follow=True)  # not confirmed: nothing done
    assert "Tick the box" in refused.content.decode()
    order.refresh_from_db()
    assert order.status == OrderStatus.AWAITING_PAYMENT
    done = client.post(cancel_url(order), {"confirm": "1"}, follow=True).content.decode()
    assert "cancelled free of charge" in done
    order.refresh_from_db()
    assert order.status == OrderStatus.CANCELLED
    assert {r.status for r in reservations(order)} == {ReservationStatus.RELEASED}
    assert {i.status for i in order.invoices.all()} == {InvoiceStatus.VOID}
    assert {c.status for c in order.contracts.all()} <= {
        ContractStatus.CANCELLED,
        ContractStatus.ENDED,
    }
    free = selectors.free_nodes(
        site=order.site, node_type=held[0].node_type, start_at=order.start_at, end_at=order.end_at
    )
    assert set(held) <= set(free)  # the nodes are bookable again
    # The timeline says it in the reader's language.
    with translation.override("zh-hans"):
        zh = client.get(reverse("dashboard_order", args=[order.number])).content.decode()
    assert "免费取消" in zh and "Cancelled free of charge" not in zh


def test_a_paid_order_cancelled_during_provisioning_is_wiped_and_its_transfer_returned(demo):
    order = make_order(demo, nodes=2)
    order, _ = order_mark_paid(order=order, comment="CMB 2026-1201")
    run = runs.provisioning_begin(order_id=order.pk)
    assert run is not None
    order.refresh_from_db()
    assert order.status == OrderStatus.PROVISIONING
    result = cancellation.order_cancel(order=order, actor=demo["customer"], name="Li Wei")
    order.refresh_from_db()
    assert order.status == OrderStatus.CANCELLED
    assert result.refunds == []  # no card payment
    assert OutboxMessage.objects.filter(steps__0__0=cancellation.CLEAN_TASK).exists()
    assert factories.run_outbox(cancellation.CLEAN_TASK) == 1
    clean = ProvisioningRun.objects.get(order=order, kind=RunKind.CLEAN)
    assert drive(clean).status in ("delivered", "failed")
    assert runs.order_cancelled_clean(order_id=order.pk) is None  # once


def test_a_delivered_order_is_no_longer_cancelled_free(demo):
    order = make_order(demo, nodes=1)
    order, _ = order_mark_paid(order=order)
    drive(runs.provisioning_begin(order_id=order.pk))
    order.refresh_from_db()
    assert order.status == OrderStatus.READY
    with pytest.raises(DomainError, match="no longer be cancelled"):
        cancellation.order_cancel(order=order, actor=demo["customer"])
