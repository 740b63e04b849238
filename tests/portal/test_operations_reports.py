"""Utilisation and revenue (issue 22, point 2) against hand-computed small cases, the
page's SVG charts and its CSV downloads, for operations and finance only."""

from __future__ import annotations

import csv
import io
import re
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import translation

from billing.models import Invoice, Order, OrderStatus, Payment, Quote
from billing.quotes import services as qs
from inventory.models import MaintenanceWindow, Reservation
from portal.operations import reports
from tests import factories
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db
SHANGHAI = ZoneInfo("Asia/Shanghai")


def at(day: int, hour: int = 0, month: int = 3) -> datetime:
    return datetime(2027, month, day, hour, tzinfo=SHANGHAI)


def _booking(node, start, end, status, **kw):
    return Reservation.objects.create(
        node=node,
        start_at=start,
        end_at=end,
        held_from=start - timedelta(hours=24),
        held_until=end + timedelta(hours=8),
        status=status,
        owner_ref=kw.pop("owner_ref", "order:t"),
        **kw,
    )


def test_utilisation_equals_the_hand_computed_case(db):
    """Hand computation (site Shenzhen, Asia/Shanghai; days and months in site time):

    Nodes A and B serve; node C is retired (never available).
    - A: a firm booking 1 March 12:00 → 2 March 06:00: 12 h on 1 March, 6 h on 2 March.
    - B: a booking that ran to its end, 2 March 00:00 → 3 March 00:00: 24 h on 2 March;
      a hold on 1 March 08:00–18:00 (not a sale: 0 h); maintenance 1 March 20:00–23:00.
    - C (retired): a booking is ignored for capacity, counted for nothing else either.
    1 March: available 2 × 24 − 3 = 45 h, reserved 12 h, 12 / 45 = 0.2667.
    2 March: available 2 × 24 = 48 h, reserved 6 + 24 = 30 h, 30 / 48 = 0.6250.
    March: available 2 × 744 − 3 = 1485 h, reserved 12 + 6 + 24 = 42 h, 42 / 1485 = 0.0283.
    """
    s = factories.site("SZ")
    nt = factories.node_type("h100-8x")
    a, b = factories.node(s, nt), factories.node(s, nt)
    c = factories.node(s, nt, status="retired")
    _booking(a, at(1, 12), at(2, 6), "firm")
    _booking(b, at(2), at(3), "ended")
    _booking(b, at(1, 8), at(1, 18), "hold", expires_at=at(1, 7), owner_ref="quote:t-v1")
    MaintenanceWindow.objects.create(node=b, start_at=at(1, 20), end_at=at(1, 23), reason="t")
    _booking(c, at(1), at(2), "ended")
    days = reports.utilisation(first=date(2027, 3, 1), last=date(2027, 3, 2), by="day")
    assert [(r.period, r.available_hours, r.reserved_hours, r.utilisation) for r in days] == [
        (date(2027, 3, 1), Decimal("45.00"), Decimal("12.00"), Decimal("0.2667")),
        (date(2027, 3, 2), Decimal("48.00"), Decimal("30.00"), Decimal("0.6250")),
    ]
    (month,) = reports.utilisation(first=date(2027, 3, 1), last=date(2027, 3, 31), by="month")
    assert (month.period, month.available_hours, month.reserved_hours, month.utilisation) == (
        date(2027, 3, 1),
        Decimal("1485.00"),
        Decimal("42.00"),
        Decimal("0.0283"),
    )


def test_revenue_equals_the_hand_computed_case(demo):
    """Hand computation (CNY, months in Shanghai time), March and April 2027:

    - booked: order 1 accepted 5 March (1,000.00) and order 2 accepted 31 March 23:30
      Shanghai (15:30 UTC: still March, 250.50); order 3 accepted 10 March but expired
      unpaid (not booked): March 1,250.50.
    - invoiced: an invoice issued 1 March 01:00 Shanghai (28 Feb 17:00 UTC: March) of
      600.00 and one issued in April of 400.00; a void one in March (not counted): March
      600.00, April 400.00.
    - collected: 600.00 paid on 2 March with 100.00 refunded: March 500.00.
    - pipeline: a sent quote starting 15 April (2,000.00): April 2,000.00 from 1 quote.
    """
    made = [make_order(demo, term="month", duration=1) for _ in range(3)]
    amounts = [Decimal("1000.00"), Decimal("250.50"), Decimal("999.00")]
    dates = [at(5, 10), datetime(2027, 3, 31, 15, 30, tzinfo=ZoneInfo("UTC")), at(10)]
    for order, amount, when in zip(made, amounts, dates, strict=True):
        Order.objects.filter(pk=order.pk).update(gross_total=amount, created_at=when)
    Order.objects.filter(pk=made[2].pk).update(status=OrderStatus.EXPIRED)
    invoices = [o.invoices.get() for o in made]
    feb_end = datetime(2027, 2, 28, 17, 0, tzinfo=ZoneInfo("UTC"))
    for invoice, total, issued, status in (
        (invoices[0], "600.00", feb_end, "issued"),
        (invoices[1], "400.00", at(3, 9, month=4), "issued"),
        (invoices[2], "999.00", at(6), "void"),
    ):
        Invoice.objects.filter(pk=invoice.pk).update(
            gross_total=Decimal(total), issued_at=issued, status=status
        )
    Payment.objects.create(
        invoice=invoices[0],
        method="bank_transfer",
        status="refunded",
        currency="CNY",
        amount=Decimal("600.00"),
        amount_refunded=Decimal("100.00"),
        succeeded_at=at(2, 11),
    )
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=date(2027, 4, 15),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    Quote.objects.filter(pk=quote.pk).update(gross_total=Decimal("2000.00"))
    rows = {
        (r.month, r.currency): r
        for r in reports.revenue(first=date(2027, 3, 1), last=date(2027, 4, 30))
    }
    march, april = rows[(date(2027, 3, 1), "CNY")], rows[(date(2027, 4, 1), "CNY")]
    assert (march.booked, march.invoiced, march.collected, march.pipeline) == (
        Decimal("1250.50"),
        Decimal("600.00"),
        Decimal("500.00"),
        Decimal("0.00"),
    )
    assert (april.booked, april.invoiced, april.collected, april.pipeline) == (
        Decimal("0.00"),
        Decimal("400.00"),
        Decimal("0.00"),
        Decimal("2000.00"),
    )
    assert april.pipeline_quotes == 1


def _url(lang="en", **params):
    with translation.override(lang):
        base = reverse("operations:reports")
    return base + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def test_the_page_charts_and_csv_for_finance_and_ops_only(client, demo):
    users = get_user_model().objects
    client.force_login(users.get(username="finance"))
    page = client.get(_url(first="2026-12-01", last="2026-12-07"))
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count("<svg") >= 2 and "cdn" not in html.lower()
    download = client.get(_url(first="2026-12-01", last="2026-12-07", csv="utilisation"))
    assert download["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(download.content.decode("utf-8-sig"))))
    expected = reports.utilisation(first=date(2026, 12, 1), last=date(2026, 12, 7), by="day")
    assert len(rows) == len(expected) > 0
    first = expected[0]
    assert rows[0]["available_node_hours"] == str(first.available_hours)
    assert rows[0]["reserved_node_hours"] == str(first.reserved_hours)
    money = client.get(_url(first="2026-12-01", last="2026-12-31", by="month", csv="revenue"))
    assert money.content.decode("utf-8-sig").splitlines()[0].startswith("month,currency,booked")
    assert client.get(_url(first="2026-12-09", last="2026-12-01")).status_code == 400
    client.force_login(users.get(username="ops"))
    assert client.get(_url()).status_code == 200
    for username in ("sales", "customer"):
        client.force_login(users.get(username=username))
        assert client.get(_url()).status_code == 403


def test_the_chinese_page_titles_its_charts_in_chinese(client, demo):
    """The reviewer saw "reserved / available node-hours" and "CNY: revenue per month"
    on the Chinese page: the titles were gettext calls inside f-strings, which
    ``makemessages`` never extracts."""
    client.force_login(get_user_model().objects.get(username="finance"))
    order = make_order(demo, term="month", duration=1)  # months with revenue to chart
    first = order.created_at.date().replace(day=1)
    period = {"first": first.isoformat(), "last": (first + timedelta(days=62)).isoformat()}
    html = client.get(_url("zh-hans", by="month", **period)).content.decode()
    assert "：已预订节点小时 / 可用节点小时</text>" in html
    assert "CNY：每月收入</text>" in html
    assert "node-hours" not in html and "revenue per month" not in html
    assert re.search(r"<title>\d{4}-\d{2} · 已签订：", html)  # a bar: period · series：value
    en = client.get(_url("en", by="month", **period)).content.decode()
    assert "CNY: revenue per month</text>" in en
