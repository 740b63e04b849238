"""The metric table (``metrics.METRICS``): every metric a rule reads is produced by a
check, every metric produced is read by a rule or marked informational, and README prints
the table as the code has it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.metrics import METRICS, metric_table_markdown, table_problems

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_seed_rules_and_the_metric_table_agree():
    assert table_problems(DEFAULT_RULES) == []


def test_a_renamed_metric_is_caught_on_either_side():
    # A rule that reads a renamed metric: no check produces it.
    renamed = [
        dataclasses.replace(r, metric="h2d_bandwidth_sum_gbps")
        if r.metric == "h2d_bandwidth_gbps"
        else r
        for r in DEFAULT_RULES
    ]
    problems = table_problems(renamed)
    assert any("h2d_bandwidth_sum_gbps" in p and "no check produces" in p for p in problems)
    # ... and the metric the check still produces is now read by no rule.
    assert any(p.startswith("metric h2d_bandwidth_gbps") for p in problems)
    # A check producing a renamed metric (the table's side).
    table = {
        ("remap_problem_gpus" if k == "remapped_rows_pending" else k): v for k, v in METRICS.items()
    }
    problems = table_problems(DEFAULT_RULES, table)
    assert any("remapped_rows_pending" in p for p in problems)
    assert any(p.startswith("metric remap_problem_gpus") for p in problems)


def test_a_rule_naming_another_check_is_caught():
    wrong = [
        dataclasses.replace(r, check="nvbandwidth") if r.metric == "gemm_rel_error" else r
        for r in DEFAULT_RULES
    ]
    assert any("gemm_rel_error" in p for p in table_problems(wrong))


def test_readme_prints_the_table_the_code_has():
    text = README.read_text()
    m = re.search(r"<!-- metric-table:start -->\n(.*?)\n<!-- metric-table:end -->", text, re.S)
    assert m, "README has no metric table"
    assert m.group(1) == metric_table_markdown(DEFAULT_RULES)


def test_readme_lists_every_check_with_tool_size_source_and_duration():
    """Every check the agent runs (and the cluster check) has a row in README's table of
    checks, each cell filled: tool, size run, the rules with their sources, duration; and
    README says how to run the judge on a file."""
    from provisioning.agent.checks import CHECKS

    text = README.read_text()
    head = "| check | tool (command) | size run | what the rules read (source) | duration |"
    assert head in text
    table = text.split(head, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    rows = {}
    for line in table:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 5 and all(cells), line
        rows[re.match(r"`([a-z_0-9]+)`", cells[0]).group(1)] = cells
    assert set(rows) == {*CHECKS, "cluster"}
    assert "python manage.py validation_judge --node-type" in text
