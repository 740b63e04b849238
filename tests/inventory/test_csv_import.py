"""CSV import and export of nodes and switches, through the admin as operations use it.

Lines are the lines of the file: the header is line 1, the first node line 2.
"""

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation

from inventory.models import Node, NodeEvent, NodeStatus, Switch, SwitchRole
from tests import factories

pytestmark = pytest.mark.django_db

NODE_HEADER = "hostname,serial,bmc_address,site,rack,leaf_switch,node_type,status"
SWITCH_HEADER = "site,name,role,fabric,port_speed_gbps,port_count,rack,uplinks"


def admin_url(name, *args):
    with translation.override("en"):
        return reverse(name, args=args)


def upload(client, model, content, name="inventory.csv"):
    data = content.encode() if isinstance(content, str) else content
    return client.post(
        admin_url(f"admin:inventory_{model}_import"),
        {
            "resource": "0",
            "format": "0",
            "import_file": SimpleUploadedFile(name, data, content_type="text/csv"),
        },
    )


def confirm(client, model, preview):
    """Post the confirm step of a previewed import, as the preview page's button does."""
    form = preview.context["confirm_form"]
    return client.post(admin_url(f"admin:inventory_{model}_process_import"), form.initial)


def page(response):
    return response.content.decode()


@pytest.fixture
def inventory(sz, h100):
    factories.rack(sz, "R01")
    factories.rack(sz, "R02")
    factories.leaf(sz, "leaf-1")
    factories.leaf(sz, "leaf-2")
    Switch.objects.create(
        site=sz, name="spine-1", role=SwitchRole.SPINE, fabric="ib_ndr", port_speed_gbps=400
    )
    return sz


def nodes_csv(*rows):
    return "\n".join([NODE_HEADER, *rows]) + "\n"


GOOD_NODES = nodes_csv(
    "sz-gpu-001,SN-A001,https://10.1.0.1,SZ,R01,leaf-1,h100-8x,available",
    "sz-gpu-002,SN-A002,https://10.1.0.2,SZ,R02,leaf-2,h100-8x,maintenance",
    "sz-gpu-003,SN-A003,,SZ,R02,leaf-2,h100-8x,",
)


# --- Nodes: the happy path --------------------------------------------------------------


def test_good_node_file_is_previewed_then_imported_on_confirm(admin_client, admin_user, inventory):
    preview = upload(admin_client, "node", GOOD_NODES, name="rack-build.csv")

    assert preview.status_code == 200
    html = page(preview)
    for hostname in ("sz-gpu-001", "sz-gpu-002", "sz-gpu-003"):
        assert hostname in html
    assert "Confirm import" in html
    assert Node.objects.count() == 0, "the preview writes nothing"

    done = confirm(admin_client, "node", preview)

    assert done.status_code == 302
    assert done["Location"] == admin_url("admin:inventory_node_changelist")
    nodes = {n.hostname: n for n in Node.objects.select_related("rack", "leaf_switch")}
    assert set(nodes) == {"sz-gpu-001", "sz-gpu-002", "sz-gpu-003"}
    assert nodes["sz-gpu-002"].rack.name == "R02"
    assert nodes["sz-gpu-002"].leaf_switch.name == "leaf-2"
    assert nodes["sz-gpu-002"].status == NodeStatus.MAINTENANCE
    assert nodes["sz-gpu-003"].status == NodeStatus.AVAILABLE, "a blank status starts available"
    assert nodes["sz-gpu-001"].bmc_address == "https://10.1.0.1"
    events = NodeEvent.objects.filter(node__hostname__startswith="sz-gpu-")
    assert events.count() == 3, "every new node gets its first event row"
    event = events.get(node__hostname="sz-gpu-002")
    assert event.actor == admin_user
    assert event.to_status == NodeStatus.MAINTENANCE
    assert "rack-build.csv" in event.reason
    assert "line 3" in event.reason


def test_header_case_spaces_bom_and_blank_lines_are_tolerated(admin_client, inventory):
    content = (
        "\ufeffHostname , Serial,BMC_Address,Site,Rack,Leaf_Switch,Node_Type,Status\r\n"
        "\r\n"
        "sz-gpu-010 , SN-B010,,SZ,R01,leaf-1,h100-8x,Available\r\n"
    )
    preview = upload(admin_client, "node", content)
    assert "Confirm import" in page(preview)

    confirm(admin_client, "node", preview)

    node = Node.objects.get()
    assert (node.hostname, node.serial, node.status) == ("sz-gpu-010", "SN-B010", "available")


# --- Nodes: bad rows --------------------------------------------------------------------


def test_one_unknown_rack_imports_nothing_and_names_the_line(admin_client, inventory):
    content = nodes_csv(
        "sz-gpu-001,SN-A001,,SZ,R01,leaf-1,h100-8x,available",
        "sz-gpu-002,SN-A002,,SZ,R99,leaf-1,h100-8x,available",
        "sz-gpu-003,SN-A003,,SZ,R01,leaf-1,h100-8x,available",
    )

    response = upload(admin_client, "node", content)

    assert response.status_code == 200
    html = page(response)
    assert "Line 3" in html
    assert "Unknown rack “R99” in site “SZ”." in html
    assert "Nothing was imported" in html
    assert "Confirm import" not in html, "a file with a bad row cannot be confirmed"
    assert Node.objects.count() == 0
    assert NodeEvent.objects.count() == 0


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (
            "sz-gpu-002,SN-A002,,XX,R01,leaf-1,h100-8x,available",
            "Unknown site “XX”. Known sites: SZ.",
        ),
        (
            "sz-gpu-002,SN-A002,,SZ,R01,leaf-1,b200-8x,available",
            "Unknown node type “b200-8x”. Known node types: h100-8x.",
        ),
        (
            "sz-gpu-002,SN-A002,,SZ,R01,leaf-7,h100-8x,available",
            "Unknown leaf switch “leaf-7” in site “SZ”.",
        ),
        (
            "sz-gpu-002,SN-A002,,SZ,R01,spine-1,h100-8x,available",
            "“spine-1” in site “SZ” is a spine switch; a node hangs under a leaf.",
        ),
    ],
    ids=["unknown-site", "unknown-node-type", "unknown-leaf", "spine-as-leaf"],
)
def test_unknown_references_are_named_with_their_line(admin_client, inventory, row, reason):
    content = nodes_csv("sz-gpu-001,SN-A001,,SZ,R01,leaf-1,h100-8x,available", row)

    html = page(upload(admin_client, "node", content))

    assert "Line 3" in html
    assert reason in html
    assert Node.objects.count() == 0


def test_serial_twice_in_the_file_is_refused(admin_client, inventory):
    content = nodes_csv(
        "sz-gpu-001,SN-A001,,SZ,R01,leaf-1,h100-8x,available",
        "sz-gpu-002,SN-A002,,SZ,R01,leaf-1,h100-8x,available",
        "sz-gpu-003,SN-A001,,SZ,R01,leaf-1,h100-8x,available",
    )

    html = page(upload(admin_client, "node", content))

    assert "Line 4" in html
    assert "Duplicate serial “SN-A001”: it is also on line 2 of this file." in html
    assert Node.objects.count() == 0


def test_serial_of_another_node_in_the_inventory_is_refused(admin_client, inventory, h100):
    factories.node(inventory, h100, hostname="sz-old-001", serial="SN-A002")
    content = nodes_csv(
        "sz-gpu-001,SN-A001,,SZ,R01,leaf-1,h100-8x,available",
        "sz-gpu-002,SN-A002,,SZ,R01,leaf-1,h100-8x,available",
    )

    html = page(upload(admin_client, "node", content))

    assert "Line 3" in html
    assert "Duplicate serial “SN-A002”: node sz-old-001 already has it." in html
    assert Node.objects.count() == 1


def test_bad_status_lists_the_allowed_values(admin_client, inventory):
    content = nodes_csv(
        "sz-gpu-001,SN-A001,,SZ,R01,leaf-1,h100-8x,available",
        "sz-gpu-002,SN-A002,,SZ,R01,leaf-1,h100-8x,broken",
    )

    html = page(upload(admin_client, "node", content))

    assert "Line 3" in html
    allowed = ", ".join(NodeStatus.values)
    assert f"“broken” is not a valid node status. Allowed values: {allowed}." in html
    assert Node.objects.count() == 0


def test_every_bad_row_is_listed(admin_client, inventory):
    content = nodes_csv(
        "sz-gpu-001,SN-A001,,SZ,R77,leaf-1,h100-8x,available",
        "sz-gpu-002,SN-A002,,SZ,R01,leaf-1,h100-8x,available",
        "sz-gpu-003,SN-A003,,SZ,R01,leaf-1,h100-8x,sleeping",
    )

    html = page(upload(admin_client, "node", content))

    assert "2 rows have errors" in html
    assert "Line 2: column “rack”: Unknown rack “R77”" in html
    assert "Line 4: column “status”: “sleeping” is not a valid node status" in html


# --- Nodes: updates and statuses -------------------------------------------------------


def test_status_change_on_an_existing_node_goes_through_the_state_machine(
    admin_client, admin_user, inventory, h100
):
    node = factories.node(inventory, h100, hostname="sz-gpu-001", serial="SN-A001")
    content = nodes_csv("sz-gpu-001,SN-A001,https://10.9.9.9,SZ,R02,leaf-2,h100-8x,maintenance")

    preview = upload(admin_client, "node", content)
    assert "Update" in page(preview)
    confirm(admin_client, "node", preview)

    node.refresh_from_db()
    assert node.status == NodeStatus.MAINTENANCE
    assert node.rack.name == "R02"
    assert node.bmc_address == "https://10.9.9.9"
    event = NodeEvent.objects.get(node=node)
    assert (event.from_status, event.to_status) == ("available", "maintenance")
    assert event.actor == admin_user


def test_illegal_status_change_is_a_row_error(admin_client, inventory, h100):
    factories.node(
        inventory, h100, hostname="sz-gpu-001", serial="SN-A001", status=NodeStatus.RETIRED
    )
    content = nodes_csv(
        "sz-gpu-009,SN-A009,,SZ,R01,leaf-1,h100-8x,available",
        "sz-gpu-001,SN-A001,,SZ,R01,leaf-1,h100-8x,available",
    )

    html = page(upload(admin_client, "node", content))

    assert "Line 3" in html
    assert "Node sz-gpu-001 cannot go from “retired” to “available”" in html
    assert Node.objects.get(hostname="sz-gpu-001").status == NodeStatus.RETIRED
    assert not Node.objects.filter(hostname="sz-gpu-009").exists()


def test_blank_status_leaves_an_existing_node_as_it_is(admin_client, inventory, h100):
    node = factories.node(inventory, h100, hostname="sz-gpu-001", status=NodeStatus.FAULTY)
    content = nodes_csv(f"sz-gpu-001,{node.serial},,SZ,R01,leaf-1,h100-8x,")

    preview = upload(admin_client, "node", content)
    confirm(admin_client, "node", preview)

    node.refresh_from_db()
    assert node.status == NodeStatus.FAULTY
    assert not NodeEvent.objects.filter(node=node).exists()


def test_confirm_step_is_all_or_nothing_when_data_changed_since_the_preview(
    admin_client, inventory, h100
):
    preview = upload(admin_client, "node", GOOD_NODES)
    assert "Confirm import" in page(preview)
    # Someone else takes the third serial before the confirm button is pressed.
    factories.node(inventory, h100, hostname="sz-other-001", serial="SN-A003")

    done = confirm(admin_client, "node", preview)

    assert done.status_code == 302
    assert done["Location"] == admin_url("admin:inventory_node_import")
    assert set(Node.objects.values_list("hostname", flat=True)) == {"sz-other-001"}
    shown = page(admin_client.get(done["Location"]))
    assert "Nothing was imported" in shown
    assert "Line 4" in shown
    assert "SN-A003" in shown


# --- Files that are not the expected CSV ------------------------------------------------


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6300010000000500010d0a2db40000000049454e44ae426082"
)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("photo.png", PNG, "This file is not UTF-8 text, so it cannot be read as CSV."),
        ("random.csv", bytes(range(256)) * 4, "This file is not UTF-8 text"),
        ("empty.csv", b"", "The submitted file is empty."),
        ("blank.csv", b"\r\n \n", "The file is empty."),
        (
            "prices.csv",
            b"name,price\nfoo,1\n",
            "The file lacks the columns hostname, serial, site, rack, leaf_switch, node_type.",
        ),
        (
            "typo.csv",
            (NODE_HEADER.replace("bmc_address", "bmc_adress") + "\n").encode()
            + b"sz-gpu-001,SN-A001,,SZ,R01,leaf-1,h100-8x,available\n",
            "Unknown column bmc_adress.",
        ),
        ("header-only.csv", (NODE_HEADER + "\n").encode(), "The file has a header but no rows"),
        (
            "ragged.csv",
            (NODE_HEADER + "\n").encode()
            + b"sz-gpu-001,SN-A001,,SZ,R01,leaf-1,h100-8x,available,extra\n",
            "Line 2 has 9 cells but the header names 8 columns.",
        ),
    ],
    ids=[
        "png",
        "binary",
        "empty",
        "blank",
        "missing-columns",
        "unknown-column",
        "no-rows",
        "ragged",
    ],
)
def test_a_file_that_is_not_the_expected_csv_gets_a_clear_message(
    admin_client, inventory, name, content, message
):
    response = upload(admin_client, "node", content, name=name)

    assert response.status_code == 200
    html = page(response)
    assert message in html
    assert "Traceback" not in html
    assert Node.objects.count() == 0


# --- Switches ---------------------------------------------------------------------------


def test_switch_file_adds_spines_and_leaves_with_uplinks(admin_client, inventory):
    content = "\n".join(
        [
            SWITCH_HEADER,
            "SZ,spine-2,spine,ib_ndr,400,64,,",
            'SZ,leaf-9,leaf,ib_ndr,400,48,R01,"spine-1, spine-2"',
            "SZ,leaf-1,leaf,ib_ndr,400,32,,spine-1",
        ]
    )

    preview = upload(admin_client, "switch", content)
    html = page(preview)
    assert "Confirm import" in html
    assert "leaf-9" in html
    done = confirm(admin_client, "switch", preview)

    assert done.status_code == 302
    leaf9 = Switch.objects.select_related("rack").get(site=inventory, name="leaf-9")
    assert leaf9.role == SwitchRole.LEAF
    assert leaf9.port_count == 48
    assert leaf9.rack.name == "R01"
    assert set(leaf9.uplinks.values_list("name", flat=True)) == {"spine-1", "spine-2"}
    leaf1 = Switch.objects.get(site=inventory, name="leaf-1")
    assert leaf1.port_count == 32, "an existing switch (site + name) is updated"
    assert list(leaf1.uplinks.values_list("name", flat=True)) == ["spine-1"]
    assert Switch.objects.filter(site=inventory).count() == 5


def test_switch_file_with_an_unknown_uplink_imports_nothing(admin_client, inventory):
    content = "\n".join(
        [
            SWITCH_HEADER,
            "SZ,leaf-8,leaf,ib_ndr,400,64,,spine-1",
            "SZ,leaf-9,leaf,ib_ndr,400,64,,spine-7;spine-1",
            "SZ,leaf-10,leaf,warp_drive,400,64,,",
        ]
    )

    html = page(upload(admin_client, "switch", content))

    assert "Line 3" in html
    assert "Unknown spine switch “spine-7” in site “SZ”." in html
    assert "Line 4" in html
    assert "“warp_drive” is not a valid fabric." in html
    assert not Switch.objects.filter(name__in=["leaf-8", "leaf-9", "leaf-10"]).exists()


# --- Export -----------------------------------------------------------------------------


def export(client, model, resource_name, columns):
    data = {"resource": "0", "format": "0"}
    data.update({f"{resource_name}_{c}": "on" for c in columns})
    return client.post(admin_url(f"admin:inventory_{model}_export"), data)


NODE_COLUMNS = NODE_HEADER.split(",")
SWITCH_COLUMNS = SWITCH_HEADER.split(",")


def test_node_export_is_csv_with_the_import_columns(admin_client, inventory, h100):
    factories.node(inventory, h100, hostname="sz-gpu-001", serial="SN-A001", rack_name="R02")
    factories.node(inventory, h100, hostname="sz-gpu-002", serial="SN-A002", status="faulty")

    response = export(admin_client, "node", "noderesource", NODE_COLUMNS)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == NODE_COLUMNS
    by_host = {r[0]: dict(zip(NODE_COLUMNS, r, strict=True)) for r in rows[1:]}
    assert by_host["sz-gpu-001"]["site"] == "SZ"
    assert by_host["sz-gpu-001"]["rack"] == "R02"
    assert by_host["sz-gpu-001"]["leaf_switch"] == "leaf-1"
    assert by_host["sz-gpu-001"]["node_type"] == "h100-8x"
    assert by_host["sz-gpu-002"]["status"] == "faulty"


def test_exported_nodes_import_back_unchanged(admin_client, inventory, h100):
    for _ in range(3):
        factories.node(inventory, h100)
    exported = export(admin_client, "node", "noderesource", NODE_COLUMNS).content

    preview = upload(admin_client, "node", exported)
    html = page(preview)
    assert "Skipped" in html
    assert "Confirm import" in html
    confirm(admin_client, "node", preview)

    assert Node.objects.count() == 3
    assert NodeEvent.objects.count() == 0


def test_switch_export_lists_uplinks(admin_client, inventory):
    leaf = Switch.objects.get(name="leaf-1")
    leaf.uplinks.add(Switch.objects.get(name="spine-1"))

    response = export(admin_client, "switch", "switchresource", SWITCH_COLUMNS)

    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == SWITCH_COLUMNS
    by_name = {r[1]: dict(zip(SWITCH_COLUMNS, r, strict=True)) for r in rows[1:]}
    assert by_name["leaf-1"]["uplinks"] == "spine-1"
    assert by_name["spine-1"]["role"] == "spine"


@pytest.mark.parametrize("count", [5, 60])
def test_node_export_runs_a_fixed_number_of_queries(
    admin_client, inventory, h100, django_assert_max_num_queries, count
):
    for i in range(count):
        factories.node(inventory, h100, rack_name=f"R{i % 7:02d}", leaf_name=f"leaf-{i % 3}")

    with django_assert_max_num_queries(6):
        response = export(admin_client, "node", "noderesource", NODE_COLUMNS)

    assert len(response.content.decode().strip().splitlines()) == count + 1
