"""The reservation calendar (issue 22, point 1): one selector for the visible window whose
query count does not grow with the nodes shown; bars of every kind with the order,
customer and contract on hover and a link to the order; conflicts stand out; the page
answers staff with the permission only, in both languages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation

from accounts.models import Organisation
from billing.orders import services as orders
from billing.quotes import services as qs
from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from inventory.models import Reservation
from portal.operations import calendar
from portal.operations.calendar import bars, conflicts
from portal.operations.calendar.bars import Booking, Frame, Slot, StatusChange
from portal.operations.calendar.texts import Texts
from portal.operations.selectors import Owner
from provisioning.models import HealthIncident, NodeSwap
from provisioning.models.health import HealthAction, IncidentStatus
from tests import factories
from tests.billing.test_contracts import make_order
from tests.zh_text import TECHNICAL, english_words

pytestmark = pytest.mark.django_db


def _window(days: int = 90) -> tuple[datetime, datetime]:
    start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=days)


def _queries(**kwargs) -> tuple[int, calendar.Calendar]:
    with CaptureQueriesContext(connection) as ctx:
        cal = calendar.calendar_window(**kwargs)
    return len(ctx.captured_queries), cal


def test_the_selector_makes_as_many_queries_for_200_nodes_as_for_20(db):
    start, end = _window()
    small = factories.operations_fleet(20, start=start, prefix="small", site_code="SM")
    large = factories.operations_fleet(200, start=start, prefix="large", site_code="LG")
    n_small, cal_small = _queries(start=start, end=end, site_id=small[0].site_id)
    n_large, cal_large = _queries(start=start, end=end, site_id=large[0].site_id)
    assert len(cal_small.rows) == 20 and len(cal_large.rows) == 200
    assert n_small == n_large
    # Every kind of bar is drawn; each firm booking has its cleaning after it.
    kinds = {b.kind for row in cal_large.rows for b in row.bars}
    assert kinds == {"firm", "hold", "cleaning", "maintenance", "faulty"}
    row = cal_large.rows[0]
    firm = next(b for b in row.bars if b.kind == "firm")
    cleaning = next(b for b in row.bars if b.kind == "cleaning")
    assert cleaning.start == firm.end and cleaning.end == firm.end + timedelta(hours=8)
    # Bars sit inside the window at their share of it.
    assert 0 <= firm.left < 100 and 0 < firm.width <= 100
    assert firm.left == pytest.approx(
        100 * (firm.start - start).total_seconds() / (end - start).total_seconds(), abs=0.01
    )
    # A page of the same window costs the same too, plus the count.
    n_page, page = _queries(start=start, end=end, site_id=large[0].site_id, page=2, page_size=50)
    assert n_page == n_large + 1 and page.pages == 4 and len(page.rows) == 50
    assert page.rows[0].hostname == "large-00050"


def test_conflicts_stand_out_with_order_customer_and_contract_on_hover(demo):
    now = timezone.now()
    start, end = _window(90)
    order = make_order(demo, term="month", duration=1)  # held until paid
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-1", actor=demo["admin"]
    )
    firm = list(Reservation.objects.filter(group=order.reservation_group).select_related("node"))
    faulty_node = firm[0].node
    inventory_services.node_mark_faulty(node=faulty_node, actor=demo["admin"], reason="XID 79")
    # A hold that expires in two hours, while another customer asks for H100 nodes.
    spare = inventory_selectors.free_nodes(
        site=demo["sz"], node_type=demo["h100"], start_at=order.start_at, end_at=order.end_at
    ).first()
    inventory_services.reservation_hold(
        nodes=[spare],
        start_at=order.start_at,
        end_at=order.end_at,
        owner_ref=f"order:{order.number}",
        expires_at=now + timedelta(hours=2),
    )
    other = Organisation.objects.create(name="Asking Lab", legal_name="Asking Lab Ltd.")
    qs.quote_create(
        site=demo["sz"],
        organisation=other,
        contact_name="Zhang San",
        contact_email="zhang@asking.example",
        term="month",
        duration=1,
        start_date=order.start_at.date(),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    # Maintenance over the other firm node, by override.
    inventory_services.maintenance_plan_create(
        title="Cable",
        scope="nodes",
        node_ids=[firm[1].node_id],
        start_at=order.start_at + timedelta(days=1),
        end_at=order.start_at + timedelta(days=1, hours=2),
        override_reason="cable cut",
        actor=demo["admin"],
    )
    cal = calendar.calendar_window(start=start, end=end, site_id=demo["sz"].pk)
    rows = {row.hostname: row for row in cal.rows}
    under_faulty = next(b for b in rows[faulty_node.hostname].bars if b.kind == "firm")
    assert "faulty under a firm booking" in under_faulty.conflict
    assert order.number in under_faulty.title and demo["org"].name in under_faulty.title
    contract = order.contracts.order_by("pk").last()
    assert contract is not None and contract.number in under_faulty.title
    assert under_faulty.url == reverse("admin:billing_order_change", args=[order.pk])
    hold = next(b for b in rows[spare.hostname].bars if b.kind == "hold")
    assert "Asking Lab" in hold.conflict and "hold expires" in hold.title
    window = next(b for b in rows[firm[1].node.hostname].bars if b.kind == "maintenance")
    assert order.number in window.conflict
    assert cal.conflicts == 3
    # The customer filter keeps only that customer's nodes.
    mine = calendar.calendar_window(start=start, end=end, organisation_id=demo["org"].pk)
    assert {r.hostname for r in mine.rows} == {
        faulty_node.hostname,
        firm[1].node.hostname,
        spare.hostname,
    }


def test_swaps_show_on_both_nodes_and_an_open_incident_marks_the_firm_booking(demo):
    now = timezone.now()
    start, end = now - timedelta(days=1), now + timedelta(days=89)
    order = make_order(demo, term="month", duration=1)
    orders.invoice_mark_paid_by_transfer(
        invoice=order.invoices.get(), reference="T-2", actor=demo["admin"]
    )
    firm = list(
        Reservation.objects.filter(group=order.reservation_group)
        .select_related("node")
        .order_by("node__hostname")
    )
    sick, failed = firm[0].node, firm[1].node
    spare = inventory_selectors.free_nodes(
        site=demo["sz"], node_type=demo["h100"], start_at=order.start_at, end_at=order.end_at
    ).first()
    HealthIncident.objects.create(
        order=order,
        node=sick,
        rule="gpu_temperature",
        action=HealthAction.NOTIFY,
        status=IncidentStatus.OPEN,
        metric="DCGM_FI_DEV_GPU_TEMP",
        value=95.0,
        observed_at=now,
    )
    NodeSwap.objects.create(
        order=order,
        failed_node=failed,
        spare_node=spare,
        reason="XID 79 " * 20,
        failed_at=now - timedelta(hours=3),
    )
    NodeSwap.objects.create(  # no spare, delivered the moment it failed: a minute long
        order=order,
        failed_node=failed,
        reason="cable",
        failed_at=now - timedelta(hours=2),
        restored_at=now - timedelta(hours=2),
    )
    cal = calendar.calendar_window(start=start, end=end, site_id=demo["sz"].pk, now=now)
    rows = {row.hostname: row for row in cal.rows}
    assert rows[sick.hostname].unhealthy and not rows[failed.hostname].unhealthy
    under = next(b for b in rows[sick.hostname].bars if b.kind == "firm")
    assert under.conflict == f"{sick.hostname} is unhealthy under a firm booking"
    assert rows[sick.hostname].conflicts == [under.conflict]
    # The open swap runs until now, on the failed node's row and on the spare's.
    title = f"Swap {failed.hostname} → {spare.hostname}: " + ("XID 79 " * 20)[:80]
    on_failed = [b for b in rows[failed.hostname].bars if b.kind == "swap"]
    on_spare = [b for b in rows[spare.hostname].bars if b.kind == "swap"]
    assert [(b.title, b.end) for b in on_spare] == [(title, now)]
    assert [b.title for b in on_failed] == [title, f"Swap {failed.hostname} → —: cable"]
    assert on_failed[1].end - on_failed[1].start == timedelta(minutes=1)
    # Swaps come last in their rows (the order of the legend), by start.
    assert rows[failed.hostname].bars[-2:] == on_failed
    # Another site's page shows none of them.
    hk = calendar.calendar_window(start=start, end=end, site_id=demo["hk"].pk, now=now)
    assert not [b for row in hk.rows for b in row.bars if b.kind == "swap"]


def _at(hours: float) -> datetime:
    return datetime(2026, 3, 1, tzinfo=UTC) + timedelta(hours=hours)


def test_faulty_periods_come_from_the_node_history_and_the_faulty_nodes_now():
    changes = [
        StatusChange(1, "available", "faulty", _at(1)),
        StatusChange(1, "faulty", "maintenance", _at(3)),
        StatusChange(1, "maintenance", "faulty", _at(5)),  # faulty again, and still
        StatusChange(2, "faulty", "available", _at(2)),  # no record of when it went faulty
    ]
    periods = bars.faulty_periods(changes, {1: _at(6), 3: _at(4)}, _at(8))
    assert dict(periods) == {1: [(_at(1), _at(3)), (_at(5), _at(8))], 3: [(_at(4), _at(8))]}


def test_a_faulty_bar_reads_open_ended_while_it_lasts_past_the_window():
    frame = Frame(_at(0), _at(24), _at(12), ZoneInfo("Asia/Shanghai"))
    with translation.override("en"):
        texts = Texts.translated()
    over = bars.faulty_bar(_at(1), _at(3), frame, texts)
    lasting = bars.faulty_bar(_at(-5), _at(24), frame, texts)
    assert over is not None and over.title == "Faulty 2026-03-01 09:00 – 2026-03-01 11:00"
    assert lasting is not None and lasting.title == "Faulty 2026-03-01 03:00 – …"
    assert (lasting.left, lasting.width) == (0.0, 100.0)
    assert bars.faulty_bar(_at(24), _at(30), frame, texts) is None


def test_maintenance_conflicts_with_an_active_booking_or_its_cleaning_not_an_ended_one():
    slot = Slot(1, _at(10), _at(12), "fans", None, None)
    owners = {ref: Owner(ref=ref, kind="order", number=ref[6:]) for ref in ("order:A", "order:B")}
    owners["order:C"] = Owner(ref="order:C", kind="order", number="C")
    cleaning_over = Booking(1, 1, _at(0), _at(9), _at(11), "firm", None, "order:A")
    ended = Booking(2, 1, _at(0), _at(11), _at(12), "ended", None, "order:B")
    after = Booking(3, 1, _at(12), _at(20), _at(21), "hold", _at(11), "order:C")
    with translation.override("en"):
        texts = Texts.translated()
    rule = conflicts.maintenance_over_bookings
    assert rule(slot, [cleaning_over, ended, after], owners, texts) == (
        "Maintenance over the booking of A"
    )
    assert rule(slot, [ended, after], owners, texts) == ""


def _url(lang="en", **params):
    with translation.override(lang):
        base = reverse("operations:calendar")
    return base + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def test_the_page_for_ops_in_both_languages_and_refused_to_others(
    client, demo, django_assert_max_num_queries
):
    start, _end = _window()
    factories.operations_fleet(120, start=start, prefix="page", site_code="PG")
    client.force_login(get_user_model().objects.get(username="ops"))
    site = demo["sz"].__class__.objects.get(code="PG")
    with django_assert_max_num_queries(22):
        page = client.get(_url(zoom="quarter", site=site.pk))
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('class="gantt-row') == 101  # the head and 100 rows: page 1 of 2
    assert "page-SU00" in html and "page-R000" in html  # grouped by unit and rack
    assert 'id="page-next"' in html
    page2 = client.get(_url(zoom="quarter", site=site.pk, page=2))
    assert page2.content.decode().count('data-node="page-') == 20
    zh = client.get(_url("zh-hans", zoom="month", site=site.pk))
    assert zh.status_code == 200
    typed = ("order:page-", "quote:page-", "page-", "Fleet PG", "fleet maintenance")
    assert not english_words(
        zh.content.decode(),
        data=(*typed, "Asia/Shanghai", "ops"),  # the user name
        allowed=TECHNICAL | {"SU", "PG", "SZ"},  # site codes
    )
    bad = client.get(_url(zoom="decade"))
    assert bad.status_code == 400
    for username in ("finance", "customer"):
        client.force_login(get_user_model().objects.get(username=username))
        assert client.get(_url()).status_code == 403
