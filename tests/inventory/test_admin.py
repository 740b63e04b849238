"""The inventory admin: changelists that stay fast as the inventory grows, node bulk
actions through the state machine, and forms that turn refusals into messages."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from inventory import services
from inventory.models import (
    Fabric,
    GPUModel,
    Interconnect,
    MaintenanceWindow,
    Node,
    NodeEvent,
    NodeStatus,
    NodeType,
    Switch,
    SwitchRole,
)
from tests import factories

pytestmark = pytest.mark.django_db

# Queries one changelist page may run, whatever the number of rows: session and user, the
# counts, the page of rows with their related rows, the choices of its filters (5 to 8).
CHANGELIST_QUERY_BOUND = 8


def admin_url(name, *args):
    with translation.override("en"):
        return reverse(name, args=args)


def build_inventory(count, actor):
    """``count`` of everything a changelist shows, spread over two sites, each row with
    its own related rows so that a missing ``select_related`` costs a query per row."""
    sites = [factories.site("SZ"), factories.site("HK", name="Hong Kong", city="Hong Kong")]
    start = timezone.now() + timedelta(days=30)
    for i in range(count):
        site = sites[i % 2]
        gpu = GPUModel.objects.create(
            name=f"GPU {i}",
            memory_gb=80,
            memory_bandwidth_tbs=Decimal("3.35"),
            reference_tflops=Decimal("700"),
            reference_source="test",
        )
        node_type = NodeType.objects.create(
            code=f"type-{i}",
            name=f"Type {i}",
            cpu="2× CPU",
            ram_gb=512,
            gpu_model=gpu,
            gpu_count=8,
            interconnect=Interconnect.NVSWITCH,
            nic_count=8,
            nic_speed_gbps=400,
            fabric=Fabric.IB_NDR,
            storage="NVMe",
        )
        rack = factories.rack(site, f"R{i:03d}")
        leaf = factories.leaf(site, f"leaf-{i:03d}")
        leaf.rack = rack
        leaf.save()
        node = factories.node(
            site, node_type, rack_name=rack.name, leaf_name=leaf.name, hostname=f"node-{i:03d}"
        )
        services.reservation_hold(
            nodes=[node],
            start_at=start,
            end_at=start + timedelta(days=30),
            owner_ref=f"order:{i}",
            firm=True,
            actor=actor,
        )
        services.maintenance_window_create(
            node=node,
            start_at=start + timedelta(days=40),
            end_at=start + timedelta(days=41),
            reason="firmware",
            actor=actor,
        )
        services.node_transition(
            node=node, to_status=NodeStatus.MAINTENANCE, actor=actor, reason="burn-in"
        )
    return sites


CHANGELISTS = [
    "node",
    "reservation",
    "reservationevent",
    "switch",
    "rack",
    "nodetype",
    "gpumodel",
    "maintenancewindow",
    "nodeevent",
]


@pytest.mark.parametrize("count", [5, 60])
@pytest.mark.parametrize("model", CHANGELISTS)
def test_changelist_runs_a_fixed_number_of_queries(
    admin_client, admin_user, django_assert_max_num_queries, model, count
):
    build_inventory(count, admin_user)
    url = admin_url(f"admin:inventory_{model}_changelist")

    with django_assert_max_num_queries(CHANGELIST_QUERY_BOUND):
        response = admin_client.get(url)

    assert response.status_code == 200
    assert response.context["cl"].result_count >= count


def test_node_changelist_filters_by_leaf_switch_with_its_site(admin_client, admin_user):
    build_inventory(4, admin_user)
    leaf = Switch.objects.get(name="leaf-001")

    response = admin_client.get(
        admin_url("admin:inventory_node_changelist"), {"leaf_switch__id__exact": leaf.pk}
    )

    assert [n.hostname for n in response.context["cl"].result_list] == ["node-001"]
    assert "HK/leaf-001" in response.content.decode()


def test_node_search_finds_hostname_and_serial(admin_client, sz, h100):
    factories.node(sz, h100, hostname="sz-gpu-001", serial="SN-FIND-ME")
    factories.node(sz, h100, hostname="sz-gpu-002")
    url = admin_url("admin:inventory_node_changelist")

    by_serial = admin_client.get(url, {"q": "SN-FIND"})
    by_host = admin_client.get(url, {"q": "sz-gpu-002"})

    assert [n.hostname for n in by_serial.context["cl"].result_list] == ["sz-gpu-001"]
    assert [n.hostname for n in by_host.context["cl"].result_list] == ["sz-gpu-002"]


# --- Bulk actions -----------------------------------------------------------------------


def run_action(client, action, nodes):
    return client.post(
        admin_url("admin:inventory_node_changelist"),
        {"action": action, "_selected_action": [n.pk for n in nodes]},
        follow=True,
    )


def shown_messages(response):
    return [str(m) for m in response.context["messages"]]


def test_mark_faulty_moves_the_nodes_and_records_who(admin_client, admin_user, sz, h100):
    a = factories.node(sz, h100)
    b = factories.node(sz, h100, status=NodeStatus.IN_SERVICE)
    untouched = factories.node(sz, h100)

    response = run_action(admin_client, "mark_faulty", [a, b])

    assert response.status_code == 200
    assert shown_messages(response) == ["2 nodes moved to “faulty”."]
    statuses = dict(Node.objects.values_list("hostname", "status"))
    assert statuses == {a.hostname: "faulty", b.hostname: "faulty", untouched.hostname: "available"}
    events = NodeEvent.objects.order_by("node__hostname")
    assert [(e.node_id, e.from_status, e.to_status) for e in events] == [
        (a.pk, "available", "faulty"),
        (b.pk, "in_service", "faulty"),
    ]
    assert all(e.actor == admin_user for e in events)
    assert all(e.reason for e in events)


def test_back_to_available_refuses_a_retired_node_and_moves_the_rest(admin_client, sz, h100):
    retired = factories.node(sz, h100, status=NodeStatus.RETIRED)
    in_maintenance = factories.node(sz, h100, status=NodeStatus.MAINTENANCE)

    response = run_action(admin_client, "back_to_available", [retired, in_maintenance])

    assert response.status_code == 200
    messages = shown_messages(response)
    assert "1 node moved to “available”." in messages
    assert (
        f"Node {retired.hostname} cannot go from “retired” to “available”. "
        "Allowed from here: none (final state)." in messages
    )
    retired.refresh_from_db()
    in_maintenance.refresh_from_db()
    assert retired.status == NodeStatus.RETIRED
    assert in_maintenance.status == NodeStatus.AVAILABLE
    assert not NodeEvent.objects.filter(node=retired).exists()


def test_back_to_available_on_only_a_retired_node_changes_nothing(admin_client, sz, h100):
    retired = factories.node(sz, h100, status=NodeStatus.RETIRED)

    response = run_action(admin_client, "back_to_available", [retired])

    assert response.status_code == 200
    messages = shown_messages(response)
    assert len(messages) == 1
    assert "cannot go from “retired” to “available”" in messages[0]
    retired.refresh_from_db()
    assert retired.status == NodeStatus.RETIRED
    assert NodeEvent.objects.count() == 0


def test_to_maintenance_moves_an_available_node(admin_client, sz, h100):
    node = factories.node(sz, h100)

    run_action(admin_client, "to_maintenance", [node])

    node.refresh_from_db()
    assert node.status == NodeStatus.MAINTENANCE


# --- Node forms -------------------------------------------------------------------------


def node_form_data(node, **changes):
    data = {
        "hostname": node.hostname,
        "serial": node.serial,
        "bmc_address": node.bmc_address,
        "site": node.site_id,
        "node_type": node.node_type_id,
        "rack": node.rack_id,
        "leaf_switch": node.leaf_switch_id,
        "notes": node.notes,
    }
    for prefix in ("reservations", "events"):
        data.update(
            {
                f"{prefix}-TOTAL_FORMS": "0",
                f"{prefix}-INITIAL_FORMS": "0",
                f"{prefix}-MIN_NUM_FORMS": "0",
                f"{prefix}-MAX_NUM_FORMS": "0",
            }
        )
    data.update(changes)
    return data


def test_status_is_read_only_on_the_change_form(admin_client, sz, h100):
    node = factories.node(sz, h100)
    url = admin_url("admin:inventory_node_change", node.pk)

    response = admin_client.post(
        url, node_form_data(node, status="retired", bmc_address="https://10.9.9.9")
    )

    assert response.status_code == 302
    node.refresh_from_db()
    assert node.bmc_address == "https://10.9.9.9"
    assert node.status == NodeStatus.AVAILABLE
    assert not NodeEvent.objects.exists()


def test_node_change_page_shows_bookings_and_status_history(admin_client, admin_user, sz, h100):
    node = factories.node(sz, h100)
    start = timezone.now() + timedelta(days=3)
    services.reservation_hold(
        nodes=[node],
        start_at=start,
        end_at=start + timedelta(days=30),
        owner_ref="order:4711",
        firm=True,
    )
    services.node_transition(
        node=node, to_status=NodeStatus.FAULTY, actor=admin_user, reason="GPU 3 fell off the bus"
    )

    html = admin_client.get(admin_url("admin:inventory_node_change", node.pk)).content.decode()

    assert "order:4711" in html
    assert "GPU 3 fell off the bus" in html


def test_adding_a_node_in_the_admin_records_its_first_event(admin_client, admin_user, sz, h100):
    template = factories.node(sz, h100)
    form_page = admin_client.get(admin_url("admin:inventory_node_add")).content.decode()
    assert "SZ/leaf-1" in form_page, "leaf switches are named with their site"
    data = node_form_data(template, hostname="sz-new-001", serial="SN-NEW-001", status="available")

    response = admin_client.post(admin_url("admin:inventory_node_add"), data)

    assert response.status_code == 302
    node = Node.objects.get(hostname="sz-new-001")
    event = NodeEvent.objects.get(node=node)
    assert event.to_status == NodeStatus.AVAILABLE
    assert event.actor == admin_user


# --- Maintenance windows ----------------------------------------------------------------


def window_form_data(node, start, end, reason="firmware upgrade"):
    tz = timezone.get_current_timezone()
    s, e = start.astimezone(tz), end.astimezone(tz)
    return {
        "node": node.pk,
        "start_at_0": s.strftime("%Y-%m-%d"),
        "start_at_1": s.strftime("%H:%M:%S"),
        "end_at_0": e.strftime("%Y-%m-%d"),
        "end_at_1": e.strftime("%H:%M:%S"),
        "reason": reason,
    }


def test_maintenance_window_over_a_booking_is_a_form_error(admin_client, sz, h100):
    node = factories.node(sz, h100)
    start = (timezone.now() + timedelta(days=10)).replace(microsecond=0, second=0)
    services.reservation_hold(
        nodes=[node],
        start_at=start,
        end_at=start + timedelta(days=5),
        owner_ref="order:9",
        firm=True,
    )

    response = admin_client.post(
        admin_url("admin:inventory_maintenancewindow_add"),
        window_form_data(node, start + timedelta(days=1), start + timedelta(days=2)),
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert f"Node {node.hostname} is booked from" in html
    assert "order:9" in html
    assert not MaintenanceWindow.objects.exists()


def test_maintenance_window_on_a_free_node_is_planned_by_the_user(
    admin_client, admin_user, sz, h100
):
    node = factories.node(sz, h100)
    start = (timezone.now() + timedelta(days=10)).replace(microsecond=0, second=0)

    response = admin_client.post(
        admin_url("admin:inventory_maintenancewindow_add"),
        window_form_data(node, start, start + timedelta(hours=4)),
    )

    assert response.status_code == 302
    window = MaintenanceWindow.objects.get()
    assert (window.node, window.start_at, window.created_by) == (node, start, admin_user)


# --- Read-only history ------------------------------------------------------------------


@pytest.mark.parametrize("model", ["nodeevent", "reservationevent", "reservation"])
def test_history_and_bookings_cannot_be_added_here(admin_client, model):
    response = admin_client.get(admin_url(f"admin:inventory_{model}_add"))

    assert response.status_code == 403


def test_spine_switches_are_the_only_uplink_choices(admin_client, sz):
    factories.leaf(sz, "leaf-1")
    Switch.objects.create(
        site=sz, name="spine-1", role=SwitchRole.SPINE, fabric="ib_ndr", port_speed_gbps=400
    )

    response = admin_client.get(admin_url("admin:inventory_switch_add"))

    choices = [str(c) for c in response.context["adminform"].form.fields["uplinks"].queryset]
    assert choices == ["spine-1"]
