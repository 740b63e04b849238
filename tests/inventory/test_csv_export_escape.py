"""Exported CSV cells never start a spreadsheet formula (CSV injection), and still import
back unchanged."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from core.csv import escape_formula, unescape_formula
from inventory.models import Node, NodeEvent, NodeType, Site, Switch, SwitchRole
from tests import factories
from tests.inventory.test_csv_import import (
    NODE_COLUMNS,
    SWITCH_COLUMNS,
    confirm,
    export,
    page,
    upload,
)

EVIL_SERIAL = '=HYPERLINK("http://evil.example","x")'


def exported_rows(client: Client, model: str, resource: str, columns: list[str]) -> list[dict]:
    response = export(client, model, resource, columns)
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == columns
    return [dict(zip(columns, r, strict=True)) for r in rows[1:]]


# --- The rule, without a database ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("=1+2", "'=1+2"),
        ("+1", "'+1"),
        ("-cmd", "'-cmd"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("sz-gpu-001", "sz-gpu-001"),
        ("'quoted", "'quoted"),
        ("", ""),
        (400, 400),
        (None, None),
    ],
)
def test_formula_triggers_get_a_quote_in_front_and_nothing_else_changes(value, escaped):
    assert escape_formula(value) == escaped
    if isinstance(value, str):
        assert unescape_formula(escaped) == value


def test_a_quote_before_ordinary_text_is_kept_on_import():
    assert unescape_formula("'quoted") == "'quoted"
    assert unescape_formula("'") == "'"


# --- Through the admin --------------------------------------------------------------------


@pytest.fixture
def inventory(sz: Site, h100: NodeType) -> Site:
    factories.rack(sz, "R01")
    factories.leaf(sz, "leaf-1")
    return sz


@pytest.mark.django_db
def test_node_serial_formula_exports_neutralised(admin_client, inventory, h100):
    factories.node(inventory, h100, hostname="sz-gpu-001", serial=EVIL_SERIAL)

    response = export(admin_client, "node", "noderesource", NODE_COLUMNS)

    text = response.content.decode()
    # The exact cell as written to the file: a quote in front, CSV-quoted.
    assert '"\'=HYPERLINK(""http://evil.example"",""x"")"' in text
    assert ',"=HYPERLINK' not in text
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert row["serial"] == "'" + EVIL_SERIAL
    assert row["hostname"] == "sz-gpu-001", "ordinary cells are left alone"
    assert row["site"] == "SZ"


@pytest.mark.django_db
@pytest.mark.parametrize("hostname", ["-sz-gpu-1", "+sz-gpu-1", "@sz-gpu-1"])
def test_hostname_starting_with_a_formula_trigger_exports_neutralised(
    admin_client, inventory, h100, hostname
):
    factories.node(inventory, h100, hostname=hostname)

    [row] = exported_rows(admin_client, "node", "noderesource", NODE_COLUMNS)

    assert row["hostname"] == "'" + hostname


@pytest.mark.django_db
def test_tab_and_carriage_return_at_the_start_are_escaped(admin_client, inventory, h100):
    factories.node(inventory, h100, hostname="sz-gpu-001", bmc_address="\t=1+1")
    factories.node(inventory, h100, hostname="sz-gpu-002", bmc_address="\r=1+1")

    rows = {
        r["hostname"]: r for r in exported_rows(admin_client, "node", "noderesource", NODE_COLUMNS)
    }

    assert rows["sz-gpu-001"]["bmc_address"] == "'\t=1+1"
    assert rows["sz-gpu-002"]["bmc_address"] == "'\r=1+1"


@pytest.mark.django_db
def test_switch_export_escapes_names_racks_and_uplinks(admin_client, inventory):
    factories.rack(inventory, "@rack")
    spine = Switch.objects.create(
        site=inventory, name="=spine", role=SwitchRole.SPINE, fabric="ib_ndr", port_speed_gbps=400
    )
    leaf = Switch.objects.create(
        site=inventory,
        name="+leaf",
        role=SwitchRole.LEAF,
        fabric="ib_ndr",
        port_speed_gbps=400,
        rack=factories.rack(inventory, "@rack"),
    )
    leaf.uplinks.add(spine)

    rows = {
        r["name"]: r
        for r in exported_rows(admin_client, "switch", "switchresource", SWITCH_COLUMNS)
    }

    assert set(rows) == {"'=spine", "'+leaf", "leaf-1"}
    assert rows["'+leaf"]["rack"] == "'@rack"
    assert rows["'+leaf"]["uplinks"] == "'=spine"
    assert rows["'+leaf"]["port_speed_gbps"] == "400"


@pytest.mark.django_db
def test_escaping_follows_the_import_export_setting(admin_client, inventory, h100, settings):
    assert settings.IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT is True, "on in the project"
    factories.node(inventory, h100, hostname="sz-gpu-001", serial=EVIL_SERIAL)
    settings.IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT = False

    [row] = exported_rows(admin_client, "node", "noderesource", NODE_COLUMNS)

    assert row["serial"] == EVIL_SERIAL


@pytest.mark.django_db
def test_escaped_export_imports_back_unchanged(admin_client, inventory, h100):
    factories.node(inventory, h100, hostname="sz-gpu-001", serial=EVIL_SERIAL)
    factories.node(inventory, h100, hostname="-sz-gpu-002", serial="SN-2")
    factories.node(inventory, h100, hostname="sz-gpu-003", serial="SN-3")
    exported = export(admin_client, "node", "noderesource", NODE_COLUMNS).content

    preview = upload(admin_client, "node", exported)
    assert "Confirm import" in page(preview)
    confirm(admin_client, "node", preview)

    assert set(Node.objects.values_list("hostname", "serial")) == {
        ("sz-gpu-001", EVIL_SERIAL),
        ("-sz-gpu-002", "SN-2"),
        ("sz-gpu-003", "SN-3"),
    }
    assert NodeEvent.objects.count() == 0, "nothing changed, so nothing was recorded"
