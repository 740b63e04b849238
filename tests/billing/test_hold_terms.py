"""Issue 9, points 3–6: one rule for holds and deadlines, the payment methods that exist,
links from the configured public URL, and start dates a site can deliver."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from types import SimpleNamespace
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from billing.models import Order, PaymentMethod
from billing.pricing import terms as payment_terms
from billing.pricing.periods import earliest_start_date, latest_start_date, site_today
from billing.shop.selfservice import ConfigurationInvalid, configuration_check
from portal.management.commands.run_embedded import portal_base_url

SHANGHAI = ZoneInfo("Asia/Shanghai")


def place(lead: int = 24) -> SimpleNamespace:
    return SimpleNamespace(tzinfo=SHANGHAI, lead_time_hours=lead)


# --- Pure date rules ------------------------------------------------------------------------


def test_the_earliest_start_is_the_first_midnight_after_the_lead_time():
    # 10:00 site time + 24 h = 10:00 tomorrow: the first whole day is the day after.
    now = datetime(2026, 3, 10, 10, 0, tzinfo=SHANGHAI).astimezone(UTC)
    assert earliest_start_date(place(24), now=now) == date(2026, 3, 12)
    # Exactly midnight after the lead time: that day.
    now = datetime(2026, 3, 10, 0, 0, tzinfo=SHANGHAI).astimezone(UTC)
    assert earliest_start_date(place(24), now=now) == date(2026, 3, 11)
    assert earliest_start_date(place(0), now=now) == date(2026, 3, 10)
    assert latest_start_date(place(), months=12, now=now) == date(2027, 3, 10)


# --- One function for holds and deadlines ---------------------------------------------------


@pytest.fixture
def site(demo):
    return demo["sz"]


def test_card_holds_for_30_minutes(site):
    now = timezone.now()
    terms = payment_terms.hold_terms(
        site=site, start_date=site_today(site) + timedelta(days=7), method="card", now=now
    )
    assert terms.pay_by == now + payment_terms.CARD_HOLD
    assert terms.held_until == terms.pay_by + payment_terms.PAYMENT_GRACE
    assert terms.possible


def test_bank_transfer_holds_two_days_for_self_service_and_ends_before_the_lead_time(site):
    now = timezone.now()
    far = payment_terms.hold_terms(
        site=site,
        start_date=site_today(site) + timedelta(days=10),
        method=PaymentMethod.BANK_TRANSFER,
        now=now,
    )
    assert far.pay_by == now + payment_terms.SELF_SERVICE_TRANSFER_HOLD
    # A start three days ahead: the money must arrive a lead time before the start.
    start = site_today(site) + timedelta(days=3)
    near = payment_terms.hold_terms(
        site=site, start_date=start, method=PaymentMethod.BANK_TRANSFER, now=now
    )
    start_at = datetime.combine(start, datetime.min.time(), tzinfo=site.tzinfo)
    assert near.pay_by <= start_at - timedelta(hours=site.lead_time_hours)
    # Tomorrow: a transfer cannot arrive in time; the start moves.
    soon = payment_terms.hold_terms(
        site=site,
        start_date=site_today(site) + timedelta(days=1),
        method=PaymentMethod.BANK_TRANSFER,
        now=now,
    )
    assert not soon.possible
    assert soon.transfer_start > site_today(site) + timedelta(days=1)
    assert soon.transfer_start.isoformat() in payment_terms.transfer_refusal(soon)


def test_a_sales_quote_holds_a_transfer_until_its_real_expiry(site):
    now = timezone.now()
    expiry = now + timedelta(days=5)
    terms = payment_terms.hold_terms(
        site=site,
        start_date=site_today(site) + timedelta(days=20),
        method=PaymentMethod.BANK_TRANSFER,
        quote_expires_at=expiry,
        self_service=False,
        now=now,
    )
    assert terms.pay_by == expiry


# --- Payment methods that exist -------------------------------------------------------------


def test_only_configured_payment_methods_are_offered(settings):
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_PUBLISHABLE_KEY = ""
    assert payment_terms.payment_methods_offered() == ["bank_transfer"]
    settings.STRIPE_SECRET_KEY = "sk_test_x"
    settings.STRIPE_PUBLISHABLE_KEY = "pk_test_x"
    settings.STRIPE_PAYMENT_METHODS = ["card", "alipay"]
    assert payment_terms.payment_methods_offered() == ["card", "alipay", "bank_transfer"]
    with override("en"):
        assert payment_terms.payment_methods_text(["card", "alipay", "bank_transfer"]) == (
            "card, Alipay or bank transfer"
        )


def _configure(client, site, **extra):
    with override("en"):
        url = reverse("configure")
    data = {
        "site": site.code,
        "node_type": "h100-8x-nvlink",
        "node_count": "1",
        "term": "month",
        "duration": "1",
        "start_date": (site_today(site) + timedelta(days=7)).isoformat(),
        **extra,
    }
    return client.get(url, data)


def test_without_stripe_the_page_offers_and_preselects_bank_transfer_only(client, site, settings):
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_PUBLISHABLE_KEY = ""
    client.force_login(get_user_model().objects.get(username="customer"))
    response = _configure(client, site)
    html = response.content.decode()
    assert 'value="bank_transfer"' in html and 'value="card"' not in html
    assert 'value="alipay"' not in html and 'value="wechat_pay"' not in html
    assert response.context["form"]["payment_method"].value() == "bank_transfer"
    # The page states the deadline hold_terms computes (to the minute, site time).
    hold = response.context["holds"][0]
    when = hold["terms"].pay_by.astimezone(site.tzinfo).strftime("%Y-%m-%d %H:%M")
    assert f"held until {when}" in html
    assert "15 days" not in html


def test_an_order_by_a_method_not_configured_is_refused(client, site, settings):
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_PUBLISHABLE_KEY = ""
    client.force_login(get_user_model().objects.get(username="customer"))
    with override("en"):
        url = reverse("configure_accept")
    data = _configure(client, site).context["form"].data.dict()
    data["payment_method"] = "card"
    response = client.post(url, data)
    assert not Order.objects.exists()
    assert "payment_method" in response.context["form"].errors
    assert "Select a valid choice" in response.content.decode()


def test_the_page_the_pdf_and_the_order_state_the_same_deadline(client, site, online_payments):
    from billing.quotes.documents import quote_context

    client.force_login(get_user_model().objects.get(username="customer"))
    page = _configure(client, site)
    with override("en"):
        url = reverse("configure_accept")
    data = page.context["form"].data.dict()
    data["payment_method"] = "bank_transfer"
    client.post(url, data)
    order = Order.objects.get()
    shown = order.payment_due_at.astimezone(site.tzinfo).strftime("%Y-%m-%d %H:%M")
    context = quote_context(order.quote, language="en")
    transfer = next(h for h in context["holds"] if not h["online"])
    assert transfer["pay_by"] == shown
    assert context["expiry"] == order.quote.expires_at.astimezone(site.tzinfo).strftime(
        "%Y-%m-%d %H:%M"
    )
    with override("en"):
        pay = client.get(reverse("order_pay", args=[order.number])).content.decode()
    assert shown in pay


# --- Start dates a site can deliver ---------------------------------------------------------


def test_a_start_inside_the_lead_time_or_beyond_the_horizon_is_refused(site, settings):
    nt = site.nodes.first().node_type if hasattr(site, "nodes") else None
    from inventory.models import NodeType

    nt = NodeType.objects.get(code="h100-8x-nvlink")
    common = {"site": site, "node_type": nt, "node_count": 1, "term": "month", "duration": 1}
    with pytest.raises(ConfigurationInvalid) as caught:
        configuration_check(**common, start_date=site_today(site))
    assert "earliest start" in caught.value.errors["start_date"]
    assert earliest_start_date(site).isoformat() in caught.value.errors["start_date"]
    settings.PRICE_BOOK_HORIZON_MONTHS = 12
    with pytest.raises(ConfigurationInvalid) as caught:
        configuration_check(**common, start_date=site_today(site) + timedelta(days=400))
    assert "12 months ahead" in caught.value.errors["start_date"]
    configuration_check(**common, start_date=earliest_start_date(site))


def test_the_default_start_is_the_earliest_the_site_can_deliver(client, site):
    site.lead_time_hours = 72
    site.save(update_fields=["lead_time_hours"])
    cache.clear()  # the catalog's sites are cached for a minute
    with override("en"):
        response = client.get(reverse("configure"), {"site": site.code})
    # The site's lead time, and (bank transfer offered: no Stripe keys in tests) a transfer's
    # working day before it: never before the site's own earliest start.
    default = response.context["form"]["start_date"].value()
    assert (
        default
        == payment_terms.earliest_start_for(
            site, payment_terms.payment_methods_offered()
        ).isoformat()
    )
    assert default >= earliest_start_date(site).isoformat()
    assert response.context["priced"] is not None


# --- Links that work ------------------------------------------------------------------------


def test_make_run_on_another_port_sets_the_public_url():
    assert portal_base_url({}, addr="127.0.0.1", port="8001") == "http://127.0.0.1:8001"
    assert portal_base_url({}, addr="0.0.0.0", port="9000") == "http://127.0.0.1:9000"  # noqa: S104
    given = {"PORTAL_BASE_URL": "https://portal.example.com/"}
    assert portal_base_url(given, addr="127.0.0.1", port="8001") == "https://portal.example.com"
