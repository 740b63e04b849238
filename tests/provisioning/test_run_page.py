"""The staff run page in Chinese: its history names each status in Chinese (not the
codes), and it links to the order in the back office and to the order's other runs."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import translation

from billing.orders.services import order_mark_paid
from provisioning import runs
from tests.billing.test_payments import make_order

pytestmark = pytest.mark.django_db


def test_the_run_page_history_names_statuses_in_the_readers_language(demo, admin_client):
    order, _ = order_mark_paid(order=make_order(demo, nodes=1))
    run = runs.provisioning_begin(order_id=order.pk)
    with translation.override("zh-hans"):
        url = reverse("provisioning_run", args=[run.pk])
        admin_url = reverse("admin:billing_order_change", args=[order.pk])
        runs_url = reverse("admin:provisioning_provisioningrun_changelist")
    page = admin_client.get(url).content.decode()
    history = page.split('<ol class="timeline">', 1)[1].split("</ol>", 1)[0]
    assert "待处理 → <strong>运行中</strong>" in history, history
    assert "pending" not in history and "running" not in history
    assert "正在部署节点" in page  # staff: the nodes, not "your" nodes
    assert f'href="{admin_url}"' in page
    assert f'href="{runs_url}?q={order.number}"' in page
    # The back office lists the run with a link back to this page.
    listing = admin_client.get(runs_url, {"q": order.number}).content.decode()
    assert f'href="{url}"' in listing
