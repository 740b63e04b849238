"""The public catalog: live free-node counts, both languages, fixed query count."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from inventory import services
from inventory.models import NodeStatus
from tests import factories

pytestmark = pytest.mark.django_db


def catalog_url(lang: str) -> str:
    with override(lang):
        return reverse("catalog")


def free_cell(html: str, site: str, node_type: str) -> str:
    marker = f'data-site="{site}" data-node-type="{node_type}">'
    i = html.index(marker) + len(marker)
    return html[i : html.index("<", i)]


def test_catalog_shows_live_free_counts(client, sz, h100):
    nodes = [factories.node(sz, h100) for _ in range(5)]
    now = timezone.now()
    services.reservation_hold(
        nodes=nodes[:2],
        start_at=now - timedelta(days=1),
        end_at=now + timedelta(days=1),
        owner_ref="order:1",
        firm=True,
    )
    services.reservation_hold(  # a future booking does not take a node away today
        nodes=nodes[2:3],
        start_at=now + timedelta(days=5),
        end_at=now + timedelta(days=9),
        owner_ref="order:2",
        firm=True,
    )
    services.node_mark_faulty(node=nodes[4], reason="PSU")
    html = client.get(catalog_url("en")).content.decode()
    assert free_cell(html, "SZ", h100.code) == "2"
    assert "H100 8-GPU NVLink" in html
    assert "2× Xeon Platinum 8480+" in html
    assert "InfiniBand NDR 400G" in html


@pytest.mark.parametrize(
    ("lang", "heading"), [("en", "GPU servers and clusters"), ("zh-hans", "GPU 服务器与集群")]
)
def test_catalog_in_both_languages(client, sz, h100, lang, heading):
    factories.node(sz, h100)
    response = client.get(catalog_url(lang))
    assert response.status_code == 200
    html = response.content.decode()
    assert f'lang="{lang}"' in html
    assert heading in html


def test_root_redirects_to_a_language(client):
    response = client.get("/", HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 302
    assert response["Location"].startswith("/en/")


def test_language_switcher_changes_language(client, sz, h100):
    factories.node(sz, h100)
    response = client.post(
        "/i18n/setlang/", {"language": "zh-hans", "next": catalog_url("en")}, follow=True
    )
    assert "GPU 服务器与集群" in response.content.decode()


@pytest.mark.parametrize("per_leaf", [3, 40])
def test_catalog_query_count_does_not_grow_with_the_fleet(
    client, sz, h100, per_leaf, django_assert_max_num_queries
):
    hk = factories.site("HK", name="Hong Kong", city="Hong Kong", currency="HKD")
    e5 = factories.node_type("e5", name="E5", gpu_model=None, gpu_count=0, fabric="ethernet")
    for s in (sz, hk):
        for nt in (h100, e5):
            for leaf in ("leaf-1", "leaf-2"):
                for _ in range(per_leaf):
                    node = factories.node(s, nt, leaf_name=f"{s.code}-{leaf}")
        services.node_transition(node=node, to_status=NodeStatus.MAINTENANCE, reason="x")
    with django_assert_max_num_queries(5):
        response = client.get(catalog_url("en"))
    assert response.status_code == 200
