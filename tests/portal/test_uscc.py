"""Issue 9, point 13: the 统一社会信用代码 is checked with its GB 32100-2015 check character."""

from __future__ import annotations

import pytest

from accounts.models import tax_id_problem, uscc_check_character
from billing.demo import DEMO_ORGANISATION_TAX_IDS


@pytest.mark.parametrize(
    "code",
    [
        "91350100M000100Y43",  # a published example
        "91440300MA5D1234X7",
        "91110108MA0123456G",
    ],
)
def test_valid_codes_pass(code):
    assert uscc_check_character(code[:17]) == code[17]
    assert tax_id_problem(country="CN", tax_id=code) is None


@pytest.mark.parametrize(
    "code",
    [
        "91350100M000100Y44",  # last character mistyped
        "91350100M000100Y34",  # two characters swapped
        "91440300MA5DEM0001",
    ],
)
def test_mistyped_codes_are_refused(code):
    assert "typing error" in tax_id_problem(country="CN", tax_id=code)


def test_other_countries_are_taken_as_given():
    assert tax_id_problem(country="SG", tax_id="201912345K") is None


def test_the_demo_data_uses_valid_codes():
    for code in DEMO_ORGANISATION_TAX_IDS:
        assert tax_id_problem(country="CN", tax_id=code) is None, code
