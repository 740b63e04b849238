"""Issue 25, point 15: the demo customer is a Shenzhen company, named as a Chinese
customer writes it; its Chinese pages show no English demo names."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.translation import override

from billing.demo import DEMO_CUSTOMER_NAME, DEMO_ORGANISATION_NAME

pytestmark = pytest.mark.django_db


def test_the_demo_customer_sees_chinese_names_on_chinese_pages(client, demo):
    assert demo["org"].name == DEMO_ORGANISATION_NAME == "珠江智算实验室"
    assert demo["customer"].get_full_name() == DEMO_CUSTOMER_NAME == "李伟"
    client.force_login(demo["customer"])
    with override("zh-hans"):
        html = client.get(reverse("dashboard")).content.decode()
    assert DEMO_ORGANISATION_NAME in html
    for english in ("Pearl River", "Li Wei"):
        assert english not in html
