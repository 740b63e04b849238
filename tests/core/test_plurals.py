"""Issue 9, point 16: plurals go through ngettext ("1 node", "2 nodes"), never "node(s)".

A guard over the translatable text of templates and Python modules, and the placement
text rendered for one rack and for two."""

from __future__ import annotations

import re
from pathlib import Path

from django.template.loader import render_to_string
from django.utils import translation

ROOT = Path(__file__).resolve().parents[2]
PURE: set[Path] = set()  # none left: inventory/sizing/'s hook has ngettext too
HAND_MADE = re.compile(r"\b[a-z]+\(s\)")


def _sources():
    for folder in (
        "templates",
        "core",
        "accounts",
        "inventory",
        "billing",
        "provisioning",
        "portal",
    ):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".html", ".txt", ".py") and path not in PURE:
                yield path


def test_no_hand_made_plurals_in_translatable_text():
    found = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        # translatable strings only: template tags and gettext calls, not comments
        for block in re.findall(r"{% blocktranslate.*?{% endblocktranslate %}", text, re.S):
            found += [f"{path.relative_to(ROOT)}: {m}" for m in HAND_MADE.findall(block)]
        for call in re.findall(r"\b_\(\s*((?:\"[^\"]*\"\s*)+)\)", text):
            found += [f"{path.relative_to(ROOT)}: {m}" for m in HAND_MADE.findall(call)]
    assert found == []


def test_placement_says_one_rack_and_two_racks():
    # stored by a Chinese page: the fabric label follows the reader's language, by its code
    group = {
        "count": 2,
        "node_type_name": "H100",
        "fabric": "以太网",
        "fabric_code": "ethernet",
        "leaves": [["l1", 2]],
    }
    with translation.override("en"):
        one = render_to_string(
            "billing/_placement.html", {"placement": {"groups": [{**group, "racks": 1}]}}
        )
        two = render_to_string(
            "billing/_placement.html", {"placement": {"groups": [{**group, "racks": 2}]}}
        )
    assert "in 1 rack, Ethernet" in one and "in 2 racks, Ethernet" in two
    assert "rack(s)" not in one + two


def test_quote_lines_say_one_node_and_two_nodes():
    from decimal import Decimal

    from billing.models import QuoteLine

    def line(n: int) -> QuoteLine:
        return QuoteLine(
            description="H100",
            quantity=Decimal(n),
            unit="node",
            unit_price=Decimal(1),
            periods=Decimal(n),
            period_unit="month",
            list_amount=Decimal(1),
            discount_amount=Decimal(0),
            net=Decimal(1),
            vat=Decimal(0),
            gross=Decimal(1),
        )

    with translation.override("en"):
        html = render_to_string(
            "billing/_quote_lines.html",
            {"lines": [line(1), line(2)], "totals": None, "currency": "CNY"},
        )
    assert ">1 node<" in html and ">2 nodes<" in html
    assert ">1 month<" in html and ">2 months<" in html
