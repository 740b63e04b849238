"""The configure page keeps sites, node types and price books in the process
(``billing.pricing.shop_data``): a warm page runs few queries, and a change shows at once."""

import uuid
from datetime import timedelta
from decimal import Decimal
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from billing.models import NodePrice
from billing.pricing import shop_data
from billing.pricing.periods import site_today
from billing.pricing.services import price_book_create, price_entry_save
from inventory import availability_generation
from inventory.models import NodeType

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_cache(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"shop-data-{uuid.uuid4()}",
        }
    }


def _get(client, sz, **kw):
    start = site_today(sz) + timedelta(days=7)
    query = {
        "site": "SZ",
        "node_type": "h100-8x-nvlink",
        "node_count": "2",
        "term": "month",
        "duration": "1",
        "start_date": start.isoformat(),
        **kw,
    }
    with override("en"):
        path = reverse("configure")
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path, query)
    assert response.status_code == 200
    return response, len(ctx)


def _node_line(response):
    return next(ln for ln in response.context["priced"].lines if ln.kind == "node")


def test_a_warm_instant_quote_runs_at_most_five_queries_logged_in(client, demo):
    client.force_login(get_user_model().objects.get(username="customer"))
    _cold, cold_queries = _get(client, demo["sz"])
    # The quote computed again (not its parts kept for the configuration): the shop data
    # comes from the process's memo.
    availability_generation.forget()
    response, warm_queries = _get(client, demo["sz"])
    # Session, user, the availability search and the placement's scalable units.
    assert warm_queries <= 5, warm_queries
    assert cold_queries > warm_queries  # the first request loaded the price book
    assert response.context["placement"]["groups"][0]["count"] == 2


def test_a_changed_node_price_shows_on_the_next_instant_quote(client, demo):
    sz = demo["sz"]
    before, _n = _get(client, sz)
    entry = NodePrice.objects.get(
        price_book=before.context["snapshot"].book, node_type__code="h100-8x-nvlink"
    )
    old = _node_line(before).unit_price
    entry.monthly = entry.monthly + Decimal("1000.00")
    price_entry_save(instance=entry, actor=get_user_model().objects.get(username="admin"))
    after, _n = _get(client, sz)
    assert _node_line(after).unit_price > old


def test_a_renamed_node_type_shows_on_the_next_instant_quote(client, demo):
    sz = demo["sz"]
    _get(client, sz)
    node_type = NodeType.objects.get(code="h100-8x-nvlink")
    node_type.name = "H100 renamed for the test"
    node_type.save()
    after, _n = _get(client, sz)
    assert "H100 renamed for the test" in after.content.decode()


def test_a_price_book_coming_into_force_replaces_the_kept_one_from_its_start(demo):
    sz = demo["sz"]
    current = shop_data.shop_data().snapshot(sz).book
    starts = timezone.now() + timedelta(hours=1)
    future = price_book_create(
        site=sz,
        name="From next hour",
        effective_from=starts,
        actor=get_user_model().objects.get(username="admin"),
        copy_from=current,
    )
    kept = shop_data.shop_data()
    assert kept.snapshot(sz).book == current
    assert kept.valid_until == starts
    # The next read after the start loads the new book, with no change signalled.
    with mock.patch.object(shop_data.timezone, "now", return_value=starts + timedelta(seconds=1)):
        assert shop_data.shop_data().snapshot(sz).book == future


def test_an_unsignalled_change_shows_within_the_memo_lifetime(demo):
    sz = demo["sz"]
    book = shop_data.shop_data().snapshot(sz).book
    NodePrice.objects.filter(price_book=book).update(monthly=Decimal("1.00"))  # no signal
    assert shop_data.shop_data().snapshot(sz).engine.nodes["h100-8x-nvlink"].monthly != 1
    later = shop_data.time.monotonic() + shop_data.MEMO_SECONDS + 1
    with mock.patch.object(shop_data.time, "monotonic", return_value=later):
        assert shop_data.shop_data().snapshot(sz).engine.nodes["h100-8x-nvlink"].monthly == 1
