"""Issue 9, point 16: zh-hans pages contain no English. Site and node-type names in
selects, add-on notes, bank details, time zones and the price book are shown in Chinese;
what is left is product and technical names (GPU, NVLink, SWIFT …) and data."""

from __future__ import annotations

import re

import pytest

from tests.zh_text import english_words, visible_text

pytestmark = pytest.mark.django_db


def _options(html: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S).group(1)
    return re.findall(r"<option[^>]*>([^<]*)</option>", select)


def test_the_configure_page_in_chinese_has_no_english(demo, client):
    html = client.get("/zh-hans/configure/?site=HK&node_type=e5-baremetal").content.decode()
    assert _options(html, "site") == ["香港", "深圳"]
    assert "E5 裸金属服务器" in _options(html, "node_type")
    assert (
        "整个租期的预付流量额度，随首期付款通知书收取；超出部分按月按实际用量后付" in html
    )  # the egress add-on's note
    assert "Hong Kong" not in html and "Asia/" not in html
    assert english_words(html) == []


def test_the_catalog_in_chinese_has_no_english(demo, client):
    html = client.get("/zh-hans/").content.decode()
    assert "北京时间，UTC+08:00" in html and "香港时间，UTC+08:00" in html
    assert "Asia/" not in html
    assert english_words(html, data=("SZ", "HK")) == []  # site codes beside the names


# Point 9 of the click-through: "当前空闲: 8", "最便宜方案: …", "(所有者, 您)": a colon or
# comma after Chinese text is the full-width one, on the customer's pages too (the
# punctuation written in templates, not only in the catalogue: tests/core/test_zh_punctuation).
HALF_WIDTH_AFTER_CJK = re.compile(r"[\u3400-\u9fff\u3001-\u3011\uff01-\uff5e][:,;]")


def half_width_after_chinese(html: str) -> list[str]:
    text = visible_text(html)
    return [
        text[max(m.start() - 12, 0) : m.end() + 12] for m in HALF_WIDTH_AFTER_CJK.finditer(text)
    ]


def test_customer_pages_in_chinese_use_full_width_colons_and_commas(demo, client):
    from billing.pricing import catalog

    catalog.calendar_refresh()  # the catalogue's 13 weeks, with "当前空闲：" beside them
    start = (demo["start"]).isoformat()
    wizard = (
        f"/zh-hans/wizard/?params_billion=&arch=qwen2-72b&precision=bf16&optimizer=adamw"
        f"&zero_stage=3&site={demo['sz'].pk}&start_date={start}"
    )
    pages = {
        "catalogue": "/zh-hans/",
        "wizard": wizard,
        "configure": "/zh-hans/configure/?site=SZ&node_type=h100-8x-nvlink",
    }
    for name, url in pages.items():
        page = client.get(url)
        assert page.status_code == 200, name
        html = page.content.decode()
        assert half_width_after_chinese(html) == [], (name, half_width_after_chinese(html))
    html = client.get("/zh-hans/").content.decode()
    assert "当前空闲：" in html
    html = client.get(wizard).content.decode()
    assert "最便宜方案：" in html or "最快方案：" in html
    client.force_login(demo["customer"])
    dashboard = client.get("/zh-hans/account/").content.decode()
    assert half_width_after_chinese(dashboard) == []
    assert "（所有者，您）" in dashboard
    for url in ("/zh-hans/account/support/", "/zh-hans/account/support/new"):
        page = client.get(url)
        assert page.status_code == 200, url
        assert half_width_after_chinese(page.content.decode()) == [], url
