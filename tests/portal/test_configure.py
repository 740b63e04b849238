"""Configure → instant quote → accept: the full bill, GPU rounding, clear field errors,
placement or alternatives, a fixed query count, and an order holding the nodes."""

import re
import uuid
from datetime import date, datetime, time, timedelta
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.shortcuts import resolve_url
from django.test.utils import CaptureQueriesContext
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.translation import override

from accounts import selectors as accounts_selectors
from accounts.models import CustomerProfile, Membership, Organisation
from billing.models import (
    AddonPrice,
    NodePrice,
    Order,
    OrderStatus,
    PriceBook,
    Quote,
    QuoteStatus,
)
from billing.pricing.periods import rental_period, site_today
from billing.pricing.selectors import price_book_in_force
from billing.pricing.terms import PAYMENT_GRACE
from billing.quotes.services import quote_price_preview
from billing.shop.selfservice import Configuration, configuration_items
from billing.templatetags.billing_tags import money
from inventory import availability_generation, selectors, services
from inventory.models import (
    Node,
    NodeType,
    Rack,
    Reservation,
    ReservationStatus,
    Site,
    Switch,
    SwitchRole,
)
from tests import factories

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("online_payments")]

# Session, user, the availability search and one more (a multi-NIC placement's scalable
# units, or the capacity of every site and type when the count cannot be placed); sites,
# node types and price books are kept in the process (``billing.pricing.shop_data``).
MAX_QUERIES = 5


@pytest.fixture(autouse=True)
def private_cache(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"configure-{uuid.uuid4()}",
        }
    }


@pytest.fixture
def customer(demo_sz):
    return get_user_model().objects.get(username="customer")


def url(name="configure"):
    with override("en"):
        return reverse(name)


def params(site="SZ", node_type="h100-8x-nvlink", **kw):
    start = site_today(Site.objects.get(code=site)) + timedelta(days=7)
    data = {
        "site": site,
        "node_type": node_type,
        "node_count": "2",
        "term": "month",
        "duration": "1",
        "start_date": start.isoformat(),
    }
    data.update(kw)
    return {k: v for k, v in data.items() if v is not None}


def field_block(html: str, name: str) -> str:
    """The field's own ``<div class="field field-NAME …">`` in the form."""
    i = html.index(f'class="field field-{name}')
    return html[i : html.index("</div>", i)]


# --- The instant quote ---------------------------------------------------------------------


def test_instant_quote_shows_the_full_bill_with_every_add_on(client, demo_sz):
    response = client.get(
        url(),
        params(**{"addon_checkpoint-storage": "10", "addon_egress": "2.5", "term": "quarter"}),
    )
    assert response.status_code == 200
    html = response.content.decode()
    priced = response.context["priced"]
    # The total is the engine's, for the same items, through the ordinary preview.
    config = response.context["config"]
    _snapshot, expected = quote_price_preview(
        site=demo_sz,
        term="quarter",
        duration=1,
        start_date=config.start_date,
        items=configuration_items(config),
    )
    assert priced.gross_total == expected.gross_total
    assert priced.lines == expected.lines
    assert money(expected.gross_total, "CNY") in html
    # Every add-on of the price book is visible: ordered, included free, or priced to add.
    bill = {line.code for line in priced.lines}
    assert {"checkpoint-storage", "egress", "cross-node-traffic", "ddos-20g"} <= bill
    for addon in AddonPrice.objects.filter(price_book__site=demo_sz):
        assert addon.name in html, addon.name
    not_ordered = {a.code for a in response.context["not_ordered"]}
    assert not_ordered == {"extra-ip", "ddos-100g", "burn-in-24h"}
    # The free ones are lines of the bill at zero, not hidden.
    free_lines = [ln for ln in priced.lines if ln.code in ("cross-node-traffic", "ddos-20g")]
    assert all(ln.net == 0 for ln in free_lines)
    assert "Snapshots" in html
    # The placement preview: two H100 nodes under one leaf switch, InfiniBand.
    # The 8-NIC H100 nodes sit in a rail-optimised scalable unit: the page says so.
    assert "in 1 scalable unit, 8 rail switches" in html
    assert "InfiniBand NDR 400G" in html
    assert 'action="/en/configure/accept"' not in html  # anonymous: a log-in link instead
    assert "Log in to order" in html


def test_a_bare_configure_url_shows_a_priced_default(client, demo_sz):
    response = client.get(url())
    assert response.status_code == 200
    assert response.context["priced"].gross_total > 0
    assert "Size it with the wizard" in response.content.decode()


def test_htmx_gets_the_partial(client, demo_sz):
    response = client.get(url(), params(), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert html.lstrip().startswith('<div id="configure"')
    assert "HX-Request" in response["Vary"]


@pytest.mark.parametrize(
    ("gpus", "nodes", "note"),
    [
        ("24", 3, "24 GPUs → 3 nodes of 8"),
        ("20", 3, "20 GPUs → 3 nodes of 8 — nodes are rented whole, so you get 24 GPUs"),
        ("1", 1, "1 GPU → 1 node of 8"),
    ],
)
def test_gpu_count_is_rounded_up_to_whole_nodes(client, demo_sz, gpus, nodes, note):
    response = client.get(url(), params(node_count=None, gpu_count=gpus))
    assert response.context["config"].node_count == nodes
    assert response.context["priced"].lines[0].quantity == nodes
    assert note in response.content.decode()


def test_gpu_count_on_a_server_with_cards_counts_the_cards(client, demo_sz):
    e5 = NodeType.objects.get(code="e5-baremetal")
    card = e5.optional_gpu_models.get(name="RTX 3090 24G")
    response = client.get(
        url(),
        params(
            node_type="e5-baremetal",
            node_count=None,
            gpu_count="10",
            card=f"gpu{card.pk}",
            cards_per_node="4",
        ),
    )
    assert "10 GPUs → 3 nodes of 4" in response.content.decode()
    kinds = [ln.kind for ln in response.context["priced"].lines]
    assert kinds[:2] == ["node", "card"]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"node_count": "0"}, "node_count", "Order at least one node."),
        ({"node_count": "-2"}, "node_count", "Order at least one node."),
        ({"node_count": "129"}, "node_count", "One order takes at most 128 nodes."),
        ({"node_count": ""}, "node_count", "How many nodes?"),
        ({"node_count": None, "gpu_count": "2000"}, "gpu_count", "That is 250 nodes"),
        ({"node_count": None, "gpu_count": "0"}, "gpu_count", "at least one GPU"),
        ({"start_date": "2020-01-01"}, "start_date", "The start date is in the past"),
        ({"term": "month", "duration": "37"}, "duration", "runs from 1 to 36 months"),
        ({"term": "day", "duration": "90"}, "duration", "runs from 1 to 89 days"),
        ({"term": "year", "duration": "0"}, "duration", "runs from 1 to 5 years"),
        ({"addon_checkpoint-storage": "-1"}, "addon_checkpoint-storage", "Cannot be negative"),
        ({"node_type": "nope"}, "node_type", "Select a valid choice"),
        (
            {"node_type": "e5-baremetal", "node_count": None, "gpu_count": "8"},
            "gpu_count",
            "has no GPUs built in",
        ),
    ],
)
def test_bad_input_gets_a_clear_message_next_to_its_field(client, demo_sz, changes, field, message):
    response = client.get(url(), params(**changes))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert field in errors, errors
    assert message in " ".join(errors[field])
    block = field_block(response.content.decode(), field)
    assert "has-error" in block and "errorlist" in block
    assert "priced" not in response.context  # no quote for a bad configuration


def test_cards_per_node_out_of_range(client, demo_sz):
    e5 = NodeType.objects.get(code="e5-baremetal")
    card = e5.optional_gpu_models.get(name="V100S 32G PCIe")
    response = client.get(
        url(), params(node_type="e5-baremetal", card=f"gpu{card.pk}", cards_per_node="5")
    )
    assert "From 1 to 4 cards per node." in field_block(response.content.decode(), "cards_per_node")


@pytest.fixture
def h200(demo_sz):
    """A node type with nodes in Shenzhen only, priced in both sites."""
    nt = NodeType.objects.create(
        code="h200-8x",
        name="H200 8-GPU",
        cpu="2× Xeon 8480+",
        ram_gb=2048,
        gpu_model=factories.gpu_model("H200 141G SXM"),
        gpu_count=8,
        interconnect="nvswitch",
        nic_count=8,
        nic_speed_gbps=400,
        fabric="ib_ndr",
        storage="NVMe",
    )
    for _ in range(2):
        factories.node(demo_sz, nt, leaf_name="sz-ib-leaf-09", rack_name="SZ-H01")
    for book in PriceBook.objects.all():
        NodePrice.objects.create(
            price_book=book,
            node_type=nt,
            category="gpu",
            basis="node",
            monthly=Decimal("150000"),
            daily=Decimal("6000"),
        )
    return nt


def test_a_node_type_with_no_nodes_at_the_site_is_not_offered_there(client, h200):
    response = client.get(url(), params(site="HK", node_type="h200-8x"))
    assert "Not offered at that site (Hong Kong)" in field_block(
        response.content.decode(), "node_type"
    )
    assert "priced" not in response.context
    ok = client.get(url(), params(site="SZ", node_type="h200-8x"))
    assert ok.context["priced"].gross_total > 0


def test_a_node_type_without_a_price_at_the_site_is_not_offered_there(client, h200):
    NodePrice.objects.filter(node_type=h200, price_book__site__code="SZ").delete()
    response = client.get(url(), params(site="SZ", node_type="h200-8x"))
    assert "Not offered at that site (Shenzhen)" in field_block(
        response.content.decode(), "node_type"
    )


def test_not_enough_nodes_shows_free_count_earliest_start_and_alternatives(client, demo_sz):
    hk = Site.objects.get(code="HK")
    h100 = NodeType.objects.get(code="h100-8x-nvlink")
    start = site_today(hk) + timedelta(days=7)
    at = datetime.combine(start, time.min, tzinfo=hk.tzinfo)
    services.reservation_hold(  # 10 of Hong Kong's 16 H100 nodes, for the first 20 days
        nodes=list(Node.objects.filter(site=hk, node_type=h100).order_by("hostname")[:10]),
        start_at=at - timedelta(days=2),
        end_at=at + timedelta(days=20),
        owner_ref="order:other",
        firm=True,
    )
    response = client.get(url(), params(site="HK", node_count="8", start_date=start.isoformat()))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Only 6 nodes of this type are free for the whole period, 8 asked for." in html
    # Free once the other order's nodes are cleaned and provisioned again: its end, the
    # site's cleaning time, then the lead time before the new start.
    buffers = timedelta(hours=hk.cleaning_hours + hk.lead_time_hours)
    free_at = (at + timedelta(days=20) + buffers).astimezone(hk.tzinfo)
    assert f"The full count is free from {free_at:%Y-%m-%d %H:%M}" in html
    # The later start offered is the first whole day from then (rentals start at midnight).
    first_day = free_at.date() + timedelta(days=0 if free_at.time() == time.min else 1)
    later = first_day.isoformat()
    links = {item["alt"].kind: item["url"] for item in response.context["alternatives"]}
    # 8 H100 nodes are 64 GPUs: 16 A100 4-GPU nodes, and Hong Kong has only 8 of them, so
    # no other node type here; a later start, or Shenzhen.
    assert set(links) == {"later", "site"}
    assert f"start_date={later}" in links["later"]
    assert "site=SZ" in links["site"]
    assert f'href="{links["site"].replace("&", "&amp;")}"' in html
    for link in links.values():  # following an alternative gives a placeable quote
        follow = client.get(link)
        assert follow.context.get("placement"), follow.context["form"].errors
    assert "Log in to order" not in html  # nothing to order until an alternative is chosen


def test_fewer_gpus_on_another_node_type_are_offered(client, demo_sz):
    """2 H100 nodes (16 GPUs) at Hong Kong, all taken: 4 A100 4-GPU nodes there instead."""
    hk = Site.objects.get(code="HK")
    h100 = NodeType.objects.get(code="h100-8x-nvlink")
    start = site_today(hk) + timedelta(days=7)
    at = datetime.combine(start, time.min, tzinfo=hk.tzinfo)
    services.reservation_hold(
        nodes=list(Node.objects.filter(site=hk, node_type=h100)),
        start_at=at,
        end_at=at + timedelta(days=400),
        owner_ref="order:all",
        firm=True,
    )
    response = client.get(url(), params(site="HK", node_count="2", start_date=start.isoformat()))
    alts = {item["alt"].kind: item for item in response.context["alternatives"]}
    assert "later" not in alts  # not within a year
    assert "The full count is not free within a year here." in response.content.decode()
    assert alts["node_type"]["alt"].node_type.code == "a100-40g-4x"
    assert alts["node_type"]["alt"].node_count == 4
    assert "node_count=4" in alts["node_type"]["url"]
    assert "node_type=a100-40g-4x" in alts["node_type"]["url"]


def test_cards_on_a_node_type_without_cards(client, demo_sz):
    rtx = NodeType.objects.get(code="e5-baremetal").optional_gpu_models.get(name="RTX 3090 24G")
    response = client.get(url(), params(card=f"gpu{rtx.pk}", cards_per_node="2"))
    assert "takes no optional GPU cards of this kind" in field_block(
        response.content.decode(), "card"
    )


# --- Query count -------------------------------------------------------------------------


def _grow(site: Site, node_type: NodeType, count: int) -> None:
    """``count`` more nodes in bulk, 40 per leaf switch."""
    racks, leaves = {}, {}
    nodes = []
    for i in range(count):
        leaf_name, rack_name = f"big-leaf-{i // 40:03d}", f"BIG-{i // 10:04d}"
        if leaf_name not in leaves:
            leaves[leaf_name] = Switch.objects.create(
                site=site,
                name=leaf_name,
                role=SwitchRole.LEAF,
                fabric="ib_ndr",
                port_speed_gbps=400,
            )
        if rack_name not in racks:
            racks[rack_name] = Rack.objects.create(site=site, name=rack_name)
        nodes.append(
            Node(
                site=site,
                node_type=node_type,
                hostname=f"big-{site.code.lower()}-{i:05d}",
                serial=f"BIG-{site.code}-{i:05d}",
                rack=racks[rack_name],
                leaf_switch=leaves[leaf_name],
            )
        )
    Node.objects.bulk_create(nodes, batch_size=2000)


def _count(client, query) -> int:
    """Queries of computing the page (not served from the parts kept for it)."""
    availability_generation.forget()
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url(), query)
    assert response.status_code == 200
    return len(ctx)


def test_instant_quote_queries_stay_at_5_or_fewer_whatever_the_fleet(client, demo_sz, customer):
    h100 = NodeType.objects.get(code="h100-8x-nvlink")
    hk = Site.objects.get(code="HK")
    placeable = params(**{"addon_checkpoint-storage": "5"})
    # Hong Kong has 16 H100 nodes: the earliest start is looked for, alternatives offered.
    short = params(site="HK", node_count="40")
    gpus = params(node_count=None, gpu_count="100")

    client.get(url(), placeable)  # the first request loads the sites and price books

    def measure():
        counts = {}
        client.logout()
        for name, query in (("placeable", placeable), ("short", short), ("gpus", gpus)):
            counts[f"anonymous-{name}"] = _count(client, query)
        client.force_login(customer)
        for name, query in (("placeable", placeable), ("short", short), ("gpus", gpus)):
            counts[f"customer-{name}"] = _count(client, query)
        return counts

    small = measure()
    _grow(demo_sz, h100, 6000)
    _grow(hk, NodeType.objects.get(code="a100-40g-4x"), 3000)
    assert Node.objects.count() > 9000
    large = measure()
    assert small == large, (small, large)
    assert max(large.values()) <= MAX_QUERIES, large


# --- Accept ---------------------------------------------------------------------------------


def _accept(client, **kw):
    data = params(**kw)
    data.setdefault("payment_method", "card")
    return client.post(url("configure_accept"), data)


def _pay_url(order):
    try:
        return reverse("order_pay", args=[order.number])
    except NoReverseMatch:
        return url("catalog")


def test_accept_makes_an_order_holding_the_nodes_for_30_minutes(client, demo_sz, customer):
    client.force_login(customer)
    before = timezone.now()
    response = _accept(client, node_count="4", **{"addon_extra-ip": "2"})
    order = Order.objects.get()
    assert response.status_code == 302
    assert response["Location"] == _pay_url(order)
    assert order.status == OrderStatus.AWAITING_PAYMENT
    assert order.organisation == Membership.objects.get(user=customer).organisation
    assert before + timedelta(minutes=29) < order.payment_due_at
    assert order.payment_due_at <= timezone.now() + timedelta(minutes=30)
    held = list(Reservation.objects.filter(group=order.reservation_group))
    assert len(held) == 4
    assert {r.status for r in held} == {ReservationStatus.HOLD}
    assert {r.expires_at for r in held} == {order.payment_due_at + PAYMENT_GRACE}
    assert {r.owner_ref for r in held} == {f"order:{order.number}"}
    quote = order.quote
    assert quote.status == QuoteStatus.ACCEPTED
    assert quote.created_by == customer
    assert quote.contact_email == customer.email
    assert quote.language == "en"
    assert quote.gross_total == order.gross_total
    assert {i.addon_code for i in quote.items.all()} >= {"extra-ip", "cross-node-traffic"}


def test_accept_by_bank_transfer_holds_for_two_days_at_most(client, demo_sz, customer):
    # A self-service order paid by transfer holds its nodes for the quote's validity, but
    # two days at most: nobody blocks capacity for weeks without paying.
    client.force_login(customer)
    _accept(client, payment_method="bank_transfer")
    order = Order.objects.get()
    assert order.payment_due_at <= order.quote.expires_at
    assert (
        timedelta(days=2) - timedelta(minutes=1)
        < order.payment_due_at - timezone.now()
        <= timedelta(days=2)
    )
    assert set(
        Reservation.objects.filter(group=order.reservation_group).values_list(
            "expires_at", flat=True
        )
    ) == {order.payment_due_at + PAYMENT_GRACE}


def test_anonymous_accept_goes_to_log_in_and_comes_back(client, demo_sz):
    response = _accept(client)
    assert response.status_code == 302
    login = resolve_url(django_settings.LOGIN_URL)
    assert response["Location"].startswith(login)
    assert "next=" in response["Location"] and "configure" in response["Location"]
    assert not Order.objects.exists() and not Quote.objects.exists()


def test_a_user_without_an_organisation_is_told_so(client, demo_sz):
    user = get_user_model().objects.create_user("loner", "loner@example.com", "pw-12345678")
    client.force_login(user)
    response = _accept(client)
    assert response.status_code == 302
    assert "/configure/?" in response["Location"]
    page = client.get(response["Location"])
    assert "does not belong to a customer organisation" in page.content.decode()
    assert not Order.objects.exists()


def test_accept_with_bad_input_shows_the_errors(client, demo_sz, customer):
    client.force_login(customer)
    response = _accept(client, node_count="0")
    assert response.status_code == 200
    assert "Order at least one node." in field_block(response.content.decode(), "node_count")
    assert not Order.objects.exists()


def test_accept_after_someone_else_took_the_nodes_offers_alternatives(client, demo_sz, customer):
    """The page showed the nodes free; by the time of the click they are gone: a clear
    message and alternatives on the configure page, never an error page."""
    hk = Site.objects.get(code="HK")
    a100 = NodeType.objects.get(code="a100-40g-4x")
    start = site_today(hk) + timedelta(days=7)
    query = params(site="HK", node_type="a100-40g-4x", node_count="8", start_date=start.isoformat())
    assert client.get(url(), query).context.get("placement")
    at = datetime.combine(start, time.min, tzinfo=hk.tzinfo)
    services.reservation_hold(
        nodes=list(Node.objects.filter(site=hk, node_type=a100)[:3]),
        start_at=at,
        end_at=at + timedelta(days=3),
        owner_ref="order:rival",
        firm=True,
    )
    client.force_login(customer)
    response = client.post(url("configure_accept"), {**query, "payment_method": "card"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Not enough nodes are free any more" in html
    assert "Nothing was booked or charged" in html
    kinds = {item["alt"].kind for item in response.context["alternatives"]}
    assert {"later", "site"} <= kinds
    assert not Order.objects.exists()
    assert not Quote.objects.exists()  # the failed tries left nothing behind


def test_the_order_is_for_the_customers_active_organisation(client, demo_sz, customer):
    pearl = Membership.objects.get(user=customer).organisation
    other = Organisation.objects.create(name="Another Lab")  # first by name
    Membership.objects.create(user=customer, organisation=other)
    client.force_login(customer)
    session = client.session
    session[accounts_selectors.SESSION_KEY] = pearl.pk  # chosen with the switcher
    session.save()
    _accept(client)
    order = Order.objects.get()
    assert order.organisation == pearl
    assert re.fullmatch(r"O-SZ-\d{4}-\d{6}", order.number)


def test_an_unverified_email_cannot_order_yet(client, demo_sz, customer):
    CustomerProfile.objects.create(user=customer, email_verified_at=None)
    client.force_login(customer)
    response = _accept(client)
    assert response.status_code == 302
    assert "/configure/?" in response["Location"]
    assert "Verify your email address first" in client.get(response["Location"]).content.decode()
    assert not Order.objects.exists()


def test_configuration_items_skip_zero_add_ons(demo_sz):
    h100 = NodeType.objects.get(code="h100-8x-nvlink")
    config = Configuration(
        site=demo_sz,
        node_type=h100,
        node_count=2,
        term="month",
        duration=1,
        start_date=timezone.localdate(),
        addons=(("egress", Decimal("0")), ("extra-ip", Decimal("3"))),
    )
    items = configuration_items(config)
    assert [(i.kind, i.addon_code, i.quantity) for i in items] == [
        ("node", "", Decimal(2)),
        ("addon", "extra-ip", Decimal(3)),
    ]


def test_the_wizard_offers_link_to_a_placeable_configuration(client, demo_sz):
    with override("en"):
        wizard_url = reverse("wizard")
    start = (site_today(demo_sz) + timedelta(days=10)).isoformat()
    response = client.get(
        wizard_url,
        {
            "params_billion": "70",
            "precision": "bf16",
            "optimizer": "adamw",
            "zero_stage": "3",
            "site": demo_sz.pk,
            "start_date": start,
        },
    )
    offer = response.context["offers"][0]
    assert offer["configure_url"] in response.content.decode().replace("&amp;", "&")
    quote = client.get(offer["configure_url"])
    assert quote.context["placement"]
    assert quote.context["config"].node_count == response.context["result"].node_count
    assert quote.context["priced"].net_total == offer["priced"].net_total


# --- The parts kept per configuration (portal.shop.instant_quote) -------------------------------


def _free(html: str) -> int:
    found = re.search(r"(\d+) nodes? of this type (?:is|are) free for the whole period", html)
    assert found, html[:3000]
    return int(found.group(1))


def _idempotency_key(html: str) -> str:
    return re.search(r'name="idempotency_key" value="([0-9a-f]+)"', html).group(1)


def test_a_configuration_asked_again_is_served_from_its_kept_parts(client, demo_sz, customer):
    query = params()
    first = client.get(url(), query).content.decode()
    with CaptureQueriesContext(connection) as ctx:
        again = client.get(url(), query).content.decode()
    assert len(ctx) == 0, [q["sql"] for q in ctx.captured_queries]  # anonymous: none
    assert _free(again) == _free(first)
    assert "Log in to order" in again and "idempotency_key" not in again
    # a customer gets the same parts with the accept card drawn for the request: a CSRF
    # token and a new idempotency key each time
    client.force_login(customer)
    with CaptureQueriesContext(connection) as ctx:
        one = client.get(url(), query).content.decode()
    assert len(ctx) <= 2  # the session and the user
    two = client.get(url(), query).content.decode()
    assert "csrfmiddlewaretoken" in one and "Log in to order" not in one
    assert _idempotency_key(one) != _idempotency_key(two)
    assert _free(one) == _free(first)
    # the other language is its own page
    with override("zh-hans"):
        chinese = client.get(reverse("configure"), query).content.decode()
    assert "此类型节点在整个租期内有" in chinese and "of this type" not in chinese


def test_the_kept_parts_show_a_booking_or_a_node_out_of_service_at_once(client, demo_sz, customer):
    query = params()
    free = _free(client.get(url(), query).content.decode())
    h100 = NodeType.objects.get(code="h100-8x-nvlink")
    start_at, end_at = rental_period(
        site=demo_sz, start_date=date.fromisoformat(query["start_date"]), term="month", duration=1
    )
    found = selectors.availability_search(
        site=demo_sz, node_type=h100, count=4, start_at=start_at, end_at=end_at
    )
    available = list(Node.objects.filter(pk__in=found.placement.node_ids).order_by("pk"))
    services.reservation_hold(
        nodes=available[:3],
        start_at=start_at,
        end_at=end_at,
        owner_ref="another customer",
        expires_at=timezone.now() + timedelta(hours=2),
    )
    assert _free(client.get(url(), query).content.decode()) == free - 3
    # a status move writes with QuerySet.update (no post_save): seen at once as well
    services.node_transition(node=available[3], to_status="faulty", reason="PSU failed")
    assert _free(client.get(url(), query).content.decode()) == free - 4


def _per_month(html: str) -> Decimal:
    found = re.search(r"([0-9][0-9,]*\.[0-9]{2}) per month before VAT", html)
    assert found, html[:3000]
    return Decimal(found.group(1).replace(",", ""))


def test_a_price_change_shows_at_once_on_a_kept_configuration(client, demo_sz):
    query = params()
    before = _per_month(client.get(url(), query).content.decode())
    assert _per_month(client.get(url(), query).content.decode()) == before  # kept
    book = price_book_in_force(site=demo_sz)
    price = NodePrice.objects.get(price_book=book, node_type__code="h100-8x-nvlink")
    price.monthly += Decimal("1000")
    price.daily += Decimal("40")
    price.save()
    assert _per_month(client.get(url(), query).content.decode()) > before


# --- The default start every offered payment method can meet (issue 25, point 11) ---------


@pytest.mark.parametrize("hour", [0, 9, 15, 23])
def test_the_earliest_start_for_bank_transfer_is_the_first_that_hold_terms_accept(demo_sz, hour):
    from billing.pricing.terms import earliest_start_for, hold_terms

    local = datetime.combine(site_today(demo_sz), time(hour, 30), tzinfo=demo_sz.tzinfo)
    now = local.astimezone(timezone.get_current_timezone())
    start = earliest_start_for(demo_sz, ["bank_transfer"], now=now)
    accepted = hold_terms(site=demo_sz, start_date=start, method="bank_transfer", now=now)
    assert accepted.possible
    sooner = hold_terms(
        site=demo_sz, start_date=start - timedelta(days=1), method="bank_transfer", now=now
    )
    assert not sooner.possible and sooner.transfer_start == start
    # Card alone needs only the site's lead time: never later than the transfer's start.
    assert earliest_start_for(demo_sz, ["card"], now=now) <= start


def test_without_stripe_keys_the_default_start_is_accepted_by_bank_transfer(
    client, demo_sz, customer, settings
):
    # The embedded default: no Stripe keys, so bank transfer is the only method offered.
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_PUBLISHABLE_KEY = ""
    client.force_login(customer)
    page = client.get(url())
    form = page.context["form"]
    assert form["payment_method"].value() == "bank_transfer"
    html = page.content.decode()
    assert "and a bank transfer needs a working day to arrive before that" in html
    assert f"The earliest start is {form['start_date'].value()}" in html
    # Accepting exactly what the page opened with makes an order, not a refusal.
    response = client.post(url("configure_accept"), dict(form.data.items()))
    order = Order.objects.get()
    assert response.status_code == 302
    assert response["Location"] == _pay_url(order)
    start_at, _end = rental_period(
        site=demo_sz, start_date=date.fromisoformat(form["start_date"].value()), term="day",
        duration=1,
    )  # fmt: skip
    assert order.payment_due_at <= start_at - timedelta(hours=demo_sz.lead_time_hours)
    assert order.payment_due_at >= timezone.now() + timedelta(hours=23, minutes=59)
