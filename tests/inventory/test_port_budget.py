"""Issue 9, point 15: a leaf group (one switch, or the rail switches of a scalable unit)
has a port budget; the admin, the CSV import and every service refuse nodes beyond it."""

from __future__ import annotations

import pytest
from django.db.models import Sum

from billing.quotes.documents import placement_texts
from core.errors import DomainError
from inventory import services
from inventory.models import Node, NodeStatus, Switch, SwitchRole
from tests import factories
from tests.inventory.test_csv_import import NODE_HEADER, page, upload

pytestmark = pytest.mark.django_db


def _node(site, nt, leaf, rack, n):
    return services.node_create(
        site_id=site.pk,
        node_type_id=nt.pk,
        rack_id=rack.pk,
        leaf_switch_id=leaf.pk,
        hostname=f"pb-{n:03d}",
        serial=f"PB{n:05d}",
    )


def test_a_leaf_takes_nodes_up_to_its_ports_for_nodes(sz, h100):
    rack = factories.rack(sz, "R01")
    leaf = factories.leaf(sz, "small-leaf", ports=32)  # 16 ports for nodes: two 8-NIC nodes
    _node(sz, h100, leaf, rack, 1)
    _node(sz, h100, leaf, rack, 2)
    with pytest.raises(DomainError) as caught:
        _node(sz, h100, leaf, rack, 3)
    assert caught.value.message.startswith(
        "Leaf group small-leaf (1 switch) has 16 ports for nodes; its nodes use 16 and this "
        "node needs 8 more."
    )
    assert Node.objects.count() == 2


def test_a_scalable_unit_of_rail_switches_is_one_leaf_group(sz, h100):
    rack = factories.rack(sz, "R01")
    rails = [factories.leaf(sz, f"su1-rail{r}", ports=8) for r in range(1, 9)]
    Switch.objects.filter(pk__in=[r.pk for r in rails]).update(scalable_unit="su-1")
    # 8 rails × 4 ports for nodes = 32: four 8-NIC nodes, one NIC on each rail.
    for n in range(4):
        _node(sz, h100, rails[0], rack, n)
    with pytest.raises(DomainError, match=r"Leaf group su-1 \(8 switches\) has 32 ports"):
        _node(sz, h100, rails[0], rack, 9)


def test_the_csv_import_refuses_nodes_beyond_the_budget(admin_client, sz, h100):
    factories.rack(sz, "R01")
    factories.leaf(sz, "leaf-1", ports=32)
    rows = [f"sz-csv-{i:03d},SN-C{i:03d},,SZ,R01,leaf-1,h100-8x," for i in range(1, 4)]
    html = page(upload(admin_client, "node", "\n".join([NODE_HEADER, *rows]) + "\n"))
    assert "Confirm import" not in html
    assert "Leaf group leaf-1 (1 switch) has 16 ports for nodes" in html
    assert not Node.objects.exists()


def test_the_demo_inventory_fits(demo):
    for leaf in Switch.objects.filter(role=SwitchRole.LEAF):
        group = services.leaf_group(leaf)
        budget = sum(s.ports_for_nodes for s in group)
        used = (
            Node.objects.filter(leaf_switch__in=group)
            .exclude(status=NodeStatus.RETIRED)
            .aggregate(n=Sum("node_type__nic_count"))["n"]
            or 0
        )
        assert used <= budget, (leaf.name, used, budget)
    units = Switch.objects.exclude(scalable_unit="").values_list("scalable_unit", flat=True)
    assert units, "the 8-NIC H100 pods are rail-optimised scalable units"
    assert all(list(units).count(u) == 8 for u in set(units))


def test_placement_texts_name_the_scalable_unit_and_its_rails():
    group = {
        "node_type": "h100",
        "count": 2,
        "fabric_code": "ib_ndr",
        "leaves": [["sz-ib-leaf-01", 2]],
        "units": 1,
        "rails": 8,
        "racks": 1,
    }
    assert placement_texts({"groups": [group]})["h100"] == (
        "2 nodes in 1 scalable unit, 8 rail switches, in 1 rack, InfiniBand NDR 400G"
    )
    plain = {**group, "units": 0, "rails": 0, "fabric_code": "roce_v2"}
    assert placement_texts({"groups": [plain]})["h100"] == (
        "2 nodes under 1 leaf switch, in 1 rack, RoCE v2"
    )
