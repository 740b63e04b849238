"""Issue 9, point 16: zh-hans pages contain no English. Site and node-type names in
selects, add-on notes, bank details, time zones and the price book are shown in Chinese;
what is left is product and technical names (GPU, NVLink, SWIFT …) and data."""

from __future__ import annotations

import re

import pytest

from tests.zh_text import english_words

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
