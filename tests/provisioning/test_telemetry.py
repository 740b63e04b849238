"""The simulated exporters and the service discovery: dcgm-exporter's names and format,
values that follow the workload, injected faults, the bearer token."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from provisioning.health.rules import RULES
from provisioning.telemetry import exposition as m
from provisioning.telemetry import prometheus

SHAPE = m.NodeShape(hostname="sz-h100-001", gpu_count=8, nic_count=8)
NOW = 1_800_000_000.0


def values(text: str, name: str) -> dict[str, float]:
    """Per GPU (or IB device) the sample's value, read with the text format's grammar."""
    out = {}
    for labels, value in re.findall(rf"^{name}\{{(.*?)\}} (\S+)$", text, re.M):
        found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        out[found.get("gpu", found.get("device", ""))] = float(value)
    return out


def test_the_exposition_parses_and_has_every_series_the_rules_and_panel_read():
    text = m.simulated_exposition(SHAPE, at=NOW, busy=True)
    list(text_string_to_metric_families(text))  # the reference parser reads it
    names = set(re.findall(r"^(\w+)\{", text, re.M))
    wanted = {
        m.GPU_UTIL, m.SM_ACTIVE, m.FB_USED, m.FB_FREE, m.GPU_TEMP, m.POWER, m.ENERGY, m.XID,
        m.ECC_SBE, m.ECC_DBE, m.ROW_REMAP_FAILURE, m.NVLINK_BANDWIDTH, m.PCIE_REPLAY,
        m.CLOCK_EVENTS, m.IB_XMIT, m.IB_RCV, m.IB_LINK_DOWNED, m.IB_SYMBOL_ERROR, m.IB_STATE,
    }  # fmt: skip
    # prometheus_client strips a counter's _total suffix from the family, not the sample.
    assert wanted <= names, wanted - names
    for rule in RULES:
        if rule.metric != "up":
            assert rule.metric in names, rule.code
    assert len(values(text, m.SM_ACTIVE)) == 8


def test_values_follow_the_workload_and_counters_only_grow():
    busy = m.simulated_exposition(SHAPE, at=NOW, busy=True)
    idle = m.simulated_exposition(SHAPE, at=NOW, busy=False)
    assert min(values(busy, m.SM_ACTIVE).values()) > 0.75
    assert max(values(idle, m.SM_ACTIVE).values()) == 0
    assert min(values(busy, m.POWER).values()) > 400 > max(values(idle, m.POWER).values())
    later = m.simulated_exposition(SHAPE, at=NOW + 60, busy=True)
    for name in (m.ENERGY, m.NVLINK_BANDWIDTH, m.IB_XMIT):
        before, after = values(busy, name), values(later, name)
        assert all(after[k] > before[k] for k in before), name
    assert m.simulated_exposition(SHAPE, at=NOW, busy=True) == busy  # repeatable


def test_injected_faults_show_in_the_series():
    faults = [
        m.Fault("xid", NOW - 5, gpu=3, value=79),
        m.Fault("ecc_dbe", NOW - 5, gpu=1, value=2),
        m.Fault("gpu_missing", NOW - 5, gpu=7),
        m.Fault("ib_down", NOW - 5, value=2),
        m.Fault("throttle", NOW - 5, gpu=0),
    ]
    text = m.simulated_exposition(SHAPE, at=NOW, busy=True, faults=faults)
    assert values(text, m.XID)["3"] == 79 and values(text, m.XID)["2"] == 0
    assert values(text, m.ECC_DBE)["1"] == 2
    assert "7" not in values(text, m.POWER) and len(values(text, m.POWER)) == 7
    assert values(text, m.IB_STATE)["mlx5_2"] == m.IB_DOWN
    assert int(values(text, m.CLOCK_EVENTS)["0"]) & m.CLOCK_HW_SLOWDOWN
    # Over: the gauge is back, the counter keeps what it counted.
    after = m.simulated_exposition(
        SHAPE, at=NOW + 10, busy=True, faults=[m.Fault("ecc_dbe", NOW - 5, NOW, gpu=1, value=2)]
    )
    assert values(after, m.ECC_DBE)["1"] == 2
    assert (
        m.simulated_exposition(SHAPE, at=NOW, busy=True, faults=[m.Fault("node_silent", 0)]) is None
    )


def test_promql_label_values_are_escaped():
    assert prometheus.quote('a"b\\c') == '"a\\"b\\\\c"'
    sel = prometheus.node_selector(["sz-h100-001", 'x"} or up{a="'])
    assert sel.startswith('node=~"^(?:') and '\\"' in sel
    assert prometheus.node_selector([]) == 'node=~"^$"'


@pytest.mark.django_db
def test_service_discovery_and_simulated_exporters_need_the_token(demo, client, settings):
    settings.PORTAL_TELEMETRY_TOKEN = "t0ken"
    assert client.get("/telemetry/targets").status_code == 401
    assert client.get("/telemetry/targets", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    response = client.get("/telemetry/targets?site=HK", HTTP_AUTHORIZATION="Bearer t0ken")
    assert response.status_code == 200
    groups = response.json()
    assert groups and {g["labels"]["site"] for g in groups} == {"HK"}
    first = groups[0]["labels"]
    assert {"node", "site", "node_type", "rack", "leaf", "exporter"} <= set(first)
    path = first["__metrics_path__"]
    assert client.get(path).status_code == 401
    scraped = client.get(path, HTTP_AUTHORIZATION="Bearer t0ken")
    assert scraped.status_code == 200
    assert scraped["Content-Type"].startswith("text/plain; version=0.0.4")
    list(text_string_to_metric_families(scraped.content.decode()))  # parses
