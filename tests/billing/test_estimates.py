"""Issue 9, point 1: a quote PDF of the configuration on screen for anyone, without an
account: no nodes held, no gapless number, rendered by the documents queue, cached for
identical configurations and rate-limited per client."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.cache import cache
from django.urls import reverse
from django.utils.translation import override

from billing.models import Estimate, NumberSequence, Quote
from billing.pricing.periods import site_today
from billing.shop import estimates
from core.models import OutboxMessage
from inventory.models import Reservation, Site

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_cache(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "estimates-tests",
        }
    }
    cache.clear()
    yield
    cache.clear()


def params(**kw: str) -> dict[str, str]:
    sz = Site.objects.get(code="SZ")
    data = {
        "site": "SZ",
        "node_type": "h100-8x-nvlink",
        "node_count": "2",
        "term": "month",
        "duration": "1",
        "start_date": (site_today(sz) + timedelta(days=7)).isoformat(),
        "addon_extra-ip": "2",
    }
    data.update(kw)
    return data


def url(name: str, *args: str, lang: str = "en") -> str:
    with override(lang):
        return reverse(name, args=args)


def pdftotext(data: bytes, tmp_path) -> str:
    path = tmp_path / "estimate.pdf"
    path.write_bytes(data)
    return subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True, text=True
    ).stdout


def _render_pending() -> None:
    """Run the documents queue's work in place, as a worker would."""
    for message in OutboxMessage.objects.all():
        for name, args in message.steps:
            assert name == estimates.RENDER_TASK
            estimates.estimate_render(estimate_id=args[0])


def test_anyone_gets_a_quote_pdf_without_holds_or_numbers(client, demo, tmp_path):
    response = client.get(url("configure_estimate"), params())
    estimate = Estimate.objects.get()
    assert response.status_code == 302
    assert response["Location"] == url("estimate_status", estimate.key) + "?download=1"
    # Nothing binding: no quote, no hold, no number from the gapless sequence.
    assert not Quote.objects.exists()
    assert not Reservation.objects.filter(owner_ref__startswith="quote:").exists()
    assert not NumberSequence.objects.filter(kind="Q").exists()
    # Rendered by the documents queue, never in the request.
    assert [m.steps for m in OutboxMessage.objects.all()] == [
        [[estimates.RENDER_TASK, [estimate.pk]]]
    ]
    page = client.get(response["Location"]).content.decode()
    assert "being prepared" in page and 'hx-trigger="every 2s"' in page
    # The page polls its own address, so the poll keeps asking for the download.
    assert f'hx-get="{response["Location"]}"' in page
    assert "auto-download" not in page
    assert client.get(url("estimate_pdf", estimate.key)).status_code == 404

    _render_pending()
    page = client.get(url("estimate_status", estimate.key)).content.decode()
    assert url("estimate_pdf", estimate.key) in page and "hx-trigger" not in page
    assert "auto-download" not in page  # reopened later: no download by itself
    # The poll that finds it ready starts the download itself (a hidden frame fetching
    # the attachment): the visitor's click on "Quote PDF" is the last one.
    polled = client.get(response["Location"], headers={"HX-Request": "true"}).content.decode()
    frame = '<iframe class="auto-download" hidden'
    assert frame in polled and f'src="{url("estimate_pdf", estimate.key)}"' in polled
    assert "<html" not in polled  # the partial, swapped in place
    assert frame in client.get(response["Location"]).content.decode()  # ready at once
    download = client.get(url("estimate_pdf", estimate.key))
    assert download["Content-Type"] == "application/pdf"
    assert "attachment" in download["Content-Disposition"]
    text = pdftotext(b"".join(download.streaming_content), tmp_path)
    flat = " ".join(text.split())
    assert "ESTIMATE" in text and "Non-binding estimate" in flat
    assert "H100 8-GPU NVLink" in text and "Shenzhen" in text
    assert "IP address" in flat  # the add-on on screen
    assert "Included at no charge" in text and "Snapshots" in flat  # the free services
    assert "2 nodes in 1 scalable unit, 8 rail switches" in flat  # the placement preview
    # The seeds' free services: DDoS protection 5–20G free, ICP filing support listed.
    assert "DDoS protection 5–20 Gb/s" in flat
    assert "ICP filing support" in flat
    assert "Prices valid until" in text and "How to order" in text
    assert settings.PORTAL_BASE_URL + "/en/configure/?" in flat.replace(" ", "")


def test_the_chinese_page_gives_a_chinese_estimate(client, demo, tmp_path):
    response = client.get(url("configure_estimate", lang="zh-hans"), params())
    estimate = Estimate.objects.get()
    assert estimate.language == "zh-hans"
    assert response["Location"] == (
        url("estimate_status", estimate.key, lang="zh-hans") + "?download=1"
    )
    _render_pending()
    text = pdftotext(Estimate.objects.get().file.read(), tmp_path)
    assert "深圳" in text  # the site's Chinese name
    assert "圆" in text or "元" in text  # the total in 人民币大写
    assert "/zh-hans/configure/?" in text.replace(" ", "").replace("\n", "")


def test_identical_configurations_share_one_pdf_and_renders_are_rate_limited(
    client, demo, settings
):
    settings.ESTIMATE_RENDERS_PER_HOUR = 2
    first = client.get(url("configure_estimate"), params())
    again = client.get(url("configure_estimate"), params())
    assert first["Location"] == again["Location"]
    assert Estimate.objects.count() == 1
    client.get(url("configure_estimate"), params(node_count="3"))
    assert Estimate.objects.count() == 2
    refused = client.get(url("configure_estimate"), params(node_count="4"))
    assert refused.status_code == 429
    assert "2 new quote PDFs in the last hour" in refused.content.decode()
    assert Estimate.objects.count() == 2
    # A cached one is still served.
    assert client.get(url("configure_estimate"), params())["Location"] == first["Location"]


def test_an_invalid_configuration_goes_back_to_the_configure_page(client, demo):
    response = client.get(url("configure_estimate"), params(node_count="0"))
    assert response.status_code == 302
    assert response["Location"].startswith(url("configure"))
    assert not Estimate.objects.exists()


def test_the_configure_page_links_to_the_estimate(client, demo):
    html = client.get(url("configure"), params()).content.decode()
    assert url("configure_estimate") + "?" in html
    assert "Quote PDF (no account needed)" in html
