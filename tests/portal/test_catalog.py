"""The public catalog: live free-node counts, both languages, fixed query count."""

import re
import uuid
from datetime import datetime, time, timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from billing.models import DiscountRule, NodePrice, PriceBook
from billing.pricing import catalog
from billing.quotes.services import ItemSpec, quote_price_preview
from billing.tasks.pricing import catalog_calendar_refresh_task
from billing.templatetags.billing_tags import money
from core.models import OutboxMessage
from inventory import services
from inventory.models import NodeStatus, NodeType, Site
from tests import factories

pytestmark = pytest.mark.django_db


def catalog_url(lang: str) -> str:
    with override(lang):
        return reverse("catalog")


def free_cell(html: str, site: str, node_type: str) -> str:
    marker = f'data-site="{site}" data-node-type="{node_type}">'
    i = html.index(marker) + len(marker)
    return html[i : html.index("<", i)]


def test_catalog_shows_live_free_counts(client, sz, h100):
    nodes = [factories.node(sz, h100) for _ in range(5)]
    now = timezone.now()
    services.reservation_hold(
        nodes=nodes[:2],
        start_at=now - timedelta(days=1),
        end_at=now + timedelta(days=1),
        owner_ref="order:1",
        firm=True,
    )
    services.reservation_hold(  # a future booking does not take a node away today
        nodes=nodes[2:3],
        start_at=now + timedelta(days=5),
        end_at=now + timedelta(days=9),
        owner_ref="order:2",
        firm=True,
    )
    services.node_mark_faulty(node=nodes[4], reason="PSU")
    html = client.get(catalog_url("en")).content.decode()
    assert free_cell(html, "SZ", h100.code) == "2"
    assert "H100 8-GPU NVLink" in html
    assert "2× Xeon Platinum 8480+" in html
    assert "InfiniBand NDR 400G" in html


@pytest.mark.parametrize(
    ("lang", "heading"), [("en", "GPU servers and clusters"), ("zh-hans", "GPU 服务器与集群")]
)
def test_catalog_in_both_languages(client, sz, h100, lang, heading):
    factories.node(sz, h100)
    response = client.get(catalog_url(lang))
    assert response.status_code == 200
    html = response.content.decode()
    assert f'lang="{lang}"' in html
    assert heading in html


def test_root_redirects_to_a_language(client):
    response = client.get("/", HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 302
    assert response["Location"].startswith("/en/")


def test_language_switcher_changes_language(client, sz, h100):
    factories.node(sz, h100)
    response = client.post(
        "/i18n/setlang/", {"language": "zh-hans", "next": catalog_url("en")}, follow=True
    )
    assert "GPU 服务器与集群" in response.content.decode()


@pytest.mark.parametrize("per_leaf", [3, 40])
def test_catalog_query_count_does_not_grow_with_the_fleet(
    client, sz, h100, per_leaf, django_assert_max_num_queries
):
    hk = factories.site("HK", name="Hong Kong", city="Hong Kong", currency="HKD")
    e5 = factories.node_type("e5", name="E5", gpu_model=None, gpu_count=0, fabric="ethernet")
    for s in (sz, hk):
        for nt in (h100, e5):
            for leaf in ("leaf-1", "leaf-2"):
                for _ in range(per_leaf):
                    node = factories.node(s, nt, leaf_name=f"{s.code}-{leaf}")
        services.node_transition(node=node, to_status=NodeStatus.MAINTENANCE, reason="x")
    # Five for the catalog and counts, four for the prices of all sites, one to ask for
    # the calendar (a cold cache: the fixture gives each test its own).
    with django_assert_max_num_queries(11):
        response = client.get(catalog_url("en"))
    assert response.status_code == 200


# --- Prices per term and the availability calendar --------------------------------------


@pytest.fixture(autouse=True)
def private_cache(settings):
    """A cache of this test's own: the calendar and prices are cached for a minute."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"catalog-{uuid.uuid4()}",
        }
    }


def section(html: str, marker: str) -> str:
    """From ``marker`` to the end of its ``</table>`` (or ``</p>``)."""
    i = html.index(marker)
    end = html.index("</table>" if "calendar" in marker else "</p>", i)
    return html[i:end]


def calendar_row(html: str, site: str, node_type: str, row: str) -> list[str]:
    table = section(html, f'data-calendar="{site}/{node_type}"')
    tr = table[table.index(f'<tr class="cal-{row}">') :]
    tr = tr[: tr.index("</tr>")]
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", tr)]


def test_catalog_shows_the_price_per_term_from_the_engine(client, demo):
    html = client.get(catalog_url("en")).content.decode()
    today = timezone.localdate()
    for site in Site.objects.all():
        for nt in NodeType.objects.all():
            per_month = {}
            for term in ("month", "quarter", "year"):
                _snapshot, priced = quote_price_preview(
                    site=site,
                    term=term,
                    duration=1,
                    start_date=today,
                    items=[ItemSpec(kind="node", quantity=Decimal(1), node_type_id=nt.pk)],
                )
                per_month[term] = priced.net_per_month
            block = section(html, f'data-price="{site.code}/{nt.code}"')
            lowest = money(min(per_month.values()), site.currency)
            assert f"from <strong>{lowest}</strong> / month" in block
            terms = html[html.index(block) : html.index("</table>", html.index(block))]
            for term, amount in per_month.items():
                assert f'data-term="{term}">{money(amount, site.currency)} / month' in terms
    # The seeds' discounts show: H100 annual at 85% of ¥100,000, A100 annual at 80%.
    assert "from <strong>¥85,000.00</strong>" in section(html, 'data-price="SZ/h100-8x-nvlink"')
    assert "from <strong>¥8,960.00</strong>" in section(html, 'data-price="SZ/a100-40g-4x"')


def no_buffers(site):
    """Weeks counted on the rentals alone: the lead and cleaning time a booking also holds
    its nodes for are tested in tests/inventory/test_held_ranges.py."""
    site.lead_time_hours = site.cleaning_hours = 0
    site.save(update_fields=["lead_time_hours", "cleaning_hours"])


def test_calendar_has_13_weeks_with_free_nodes_slot_price_and_leaves(client, sz, h100):
    no_buffers(sz)
    nodes = [factories.node(sz, h100, leaf_name="leaf-1") for _ in range(2)]
    nodes.append(factories.node(sz, h100, leaf_name="leaf-2", rack_name="R02"))
    week0 = datetime.combine(timezone.now().astimezone(sz.tzinfo).date(), time.min, sz.tzinfo)
    services.reservation_hold(  # every node, all of the third week: 0 free that week
        nodes=nodes,
        start_at=week0 + timedelta(days=14),
        end_at=week0 + timedelta(days=21),
        owner_ref="order:full-week",
        firm=True,
    )
    services.reservation_hold(  # one node over the fifth and sixth weeks' boundary
        nodes=nodes[2:],
        start_at=week0 + timedelta(days=33),
        end_at=week0 + timedelta(days=36),
        owner_ref="order:straddle",
        firm=True,
    )
    services.maintenance_window_create(  # a window in the last week
        node=nodes[0],
        start_at=week0 + timedelta(days=90),
        end_at=week0 + timedelta(days=90, hours=4),
        reason="firmware",
    )
    catalog.calendar_refresh()  # the beat job
    html = client.get(catalog_url("en")).content.decode()
    free = calendar_row(html, "SZ", h100.code, "free")
    assert len(free) == 13
    assert free == ["3", "3", "0", "3", "2", "2", "3", "3", "3", "3", "3", "3", "2"]
    leaves = calendar_row(html, "SZ", h100.code, "leaves")
    # Three free nodes (fewer than a typical 8-node cluster) span both leaves; the
    # straddling weeks' two free nodes sit under leaf-1 alone; none free: no placement.
    assert leaves[0] == "2*" and leaves[4] == "1*" and leaves[2] == "—"
    assert "updated every minute" in html
    assert "Leaf switches, 8-node cluster" in html


def test_calendar_week_price_is_one_node_for_seven_days(client, demo):
    sz = Site.objects.get(code="SZ")
    e5 = NodeType.objects.get(code="e5-baremetal")
    catalog.calendar_refresh()  # the beat job
    html = client.get(catalog_url("en")).content.decode()
    prices = calendar_row(html, "SZ", e5.code, "price")
    assert len(prices) == 13
    _snapshot, priced = quote_price_preview(
        site=sz,
        term="day",
        duration=7,
        start_date=timezone.localdate(),
        items=[ItemSpec(kind="node", quantity=Decimal(1), node_type_id=e5.pk)],
    )
    assert prices[0] == money(priced.net_total)  # the currency is named once, in the label
    assert "One node for the week (CNY)" in section(html, f'data-calendar="SZ/{e5.code}"')


def _price_book(site, *node_types):
    book = PriceBook.objects.create(
        site=site,
        name=f"{site.code} test",
        currency=site.currency,
        effective_from=timezone.now() - timedelta(days=1),
    )
    for nt in node_types:
        NodePrice.objects.create(
            price_book=book,
            node_type=nt,
            category="gpu" if nt.gpu_count else "bare_metal",
            basis="node",
            monthly=Decimal("1000"),
            daily=Decimal("40"),
        )
    DiscountRule.objects.create(
        price_book=book, code="annual", name="Annual", term="year", multiplier=Decimal("0.8")
    )
    return book


def test_catalog_queries_stay_fixed_as_the_fleet_grows(client, sz, h100):
    """Small and large fleets run the same queries: 5 for the catalog and live counts,
    4 for every site's prices and, with no calendar stored, 1 to ask for it (an outbox
    row; the beat job computes it); a warm page runs 5."""
    hk = factories.site("HK", name="Hong Kong", city="Hong Kong", currency="HKD")
    e5 = factories.node_type("e5", name="E5", gpu_model=None, gpu_count=0, fabric="ethernet")
    for s in (sz, hk):
        _price_book(s, h100, e5)

    def grow(per_leaf):
        for s in (sz, hk):
            for nt in (h100, e5):
                for leaf in ("leaf-1", "leaf-2"):
                    for _ in range(per_leaf):
                        node = factories.node(s, nt, leaf_name=f"{s.code}-{leaf}")
                services.reservation_hold(
                    nodes=[node],
                    start_at=timezone.now() + timedelta(days=3),
                    end_at=timezone.now() + timedelta(days=10),
                    owner_ref=f"order:{node.pk}",
                    firm=True,
                )
            services.node_transition(node=node, to_status=NodeStatus.MAINTENANCE, reason="x")

    counts = []
    for per_leaf in (3, 40):
        grow(per_leaf)
        cache.clear()
        with CaptureQueriesContext(connection) as cold:
            response = client.get(catalog_url("en"))
        assert response.status_code == 200
        with CaptureQueriesContext(connection) as warm:
            client.get(catalog_url("en"))
        counts.append((len(cold), len(warm)))
    assert counts[0] == counts[1], counts
    assert counts[0][0] <= 11, counts
    assert counts[0][1] <= 5, counts


# --- The calendar is computed off the request --------------------------------------------

REFRESH_TASK = "billing.tasks.catalog_calendar_refresh_task"


def _refresh_requests() -> int:
    return sum(
        1 for m in OutboxMessage.objects.all() for name, _args in m.steps if name == REFRESH_TASK
    )


def test_a_cold_cache_shows_the_calendar_as_being_computed_and_asks_for_it_once(client, sz, h100):
    factories.node(sz, h100)
    html = client.get(catalog_url("en")).content.decode()
    assert 'data-calendar="SZ/' not in html
    assert f'data-calendar-pending="SZ/{h100.code}"' in html
    assert "The availability calendar for the next 13 weeks is being computed" in html
    client.get(catalog_url("en"))  # a second visitor: no second request
    assert _refresh_requests() == 1
    # The worker runs the requested refresh: the next visitor sees the calendar.
    assert catalog_calendar_refresh_task() == 1
    html = client.get(catalog_url("en")).content.decode()
    assert calendar_row(html, "SZ", h100.code, "free") == ["1"] * 13
    assert "being computed" not in html


def test_the_refresh_is_idempotent_and_shows_bookings_made_since(client, sz, h100):
    no_buffers(sz)
    nodes = [factories.node(sz, h100) for _ in range(2)]
    catalog.calendar_refresh()
    catalog.calendar_refresh()  # twice: the same calendar
    html = client.get(catalog_url("en")).content.decode()
    assert calendar_row(html, "SZ", h100.code, "free") == ["2"] * 13
    week0 = datetime.combine(timezone.now().astimezone(sz.tzinfo).date(), time.min, sz.tzinfo)
    services.reservation_hold(
        nodes=nodes[:1],
        start_at=week0 + timedelta(days=7),
        end_at=week0 + timedelta(days=8),
        owner_ref="order:later",
        firm=True,
    )
    # Until the next refresh the page shows the stored calendar (no visitor computes it).
    html = client.get(catalog_url("en")).content.decode()
    assert calendar_row(html, "SZ", h100.code, "free")[1] == "2"
    catalog.calendar_refresh()
    html = client.get(catalog_url("en")).content.decode()
    assert calendar_row(html, "SZ", h100.code, "free")[:3] == ["2", "1", "2"]


def test_the_refresh_task_is_on_the_beat_every_minute_with_its_own_limits(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["catalog-calendar-refresh"]
    assert entry["task"] == REFRESH_TASK
    assert entry["schedule"] <= 60
    assert catalog_calendar_refresh_task.time_limit <= entry["schedule"]
