"""The health rules as data: each has a source and an action; its PromQL is well formed
(checked by promtool's parser through a real Prometheus in tests/integration) and
transient noise sits under every threshold by construction."""

from __future__ import annotations

import re

from provisioning.health.rules import RULES, RULES_BY_CODE
from provisioning.health.utilisation import classify
from provisioning.telemetry.prometheus import node_selector


def test_every_rule_has_a_source_an_action_and_the_nvidia_xid_classes():
    assert {f"xid_{n}" for n in (48, 63, 64, 74, 79, 94, 95, 119, 120)} <= set(RULES_BY_CODE)
    for code in ("ecc_uncorrectable", "row_remap_failure", "nvlink_down", "ib_port_down",
                 "ib_link_flapping", "gpu_missing", "hw_slowdown", "thermal_throttle",
                 "node_silent"):  # fmt: skip
        assert code in RULES_BY_CODE
    for rule in RULES:
        assert rule.action in ("notify", "revalidate", "replace")
        assert len(rule.source) > 30, rule.code
    assert RULES_BY_CODE["xid_79"].action == "replace"
    assert RULES_BY_CODE["xid_79"].source.startswith("NVIDIA XID Errors catalogue")


def test_queries_select_only_the_given_nodes_and_scale_with_the_scrape_interval():
    sel = node_selector(["sz-h100-001"])
    for rule in RULES:
        q = rule.query(selector=sel, scrape_s=15)
        assert "{sel}" not in q and "{w}" not in q
        # every selector in the query is the nodes' selector
        for braces in re.findall(r"\{([^{}]*)\}", q):
            assert braces == sel, (rule.code, q)
    assert "[120s]" in RULES_BY_CODE["node_silent"].query(selector=sel, scrape_s=15)
    assert "[8s]" in RULES_BY_CODE["node_silent"].query(selector=sel, scrape_s=1)


def test_noise_is_under_every_threshold():
    # One correctable error: the storm rule wants more than 100 in an hour.
    assert "> 100" in RULES_BY_CODE["ecc_correctable_storm"].expr
    # A scrape gap: silence only when every scrape of the window failed.
    assert RULES_BY_CODE["node_silent"].window_scrapes >= 4
    assert "max_over_time(up" in RULES_BY_CODE["node_silent"].expr
    # A flap once is noise; three in 30 minutes is not.
    assert ">= 3" in RULES_BY_CODE["ib_link_flapping"].expr


def test_low_utilisation_says_what_the_metrics_point_at():
    assert classify(util=0.0, sm=0.0, fb_frac=0.01, ib_gbps=0, nic_gbps=400) == "idle"
    assert classify(util=0.5, sm=0.4, fb_frac=0.5, ib_gbps=300, nic_gbps=400) == "network_bound"
    assert classify(util=0.5, sm=0.3, fb_frac=0.95, ib_gbps=10, nic_gbps=400) == "memory_bound"
    assert classify(util=0.6, sm=0.55, fb_frac=0.5, ib_gbps=10, nic_gbps=400) == "input_bound"
