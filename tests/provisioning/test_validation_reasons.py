"""Rejection reasons shown from their code and parameters, translated: the acceptance report
PDF, the customer's order page and the staff run page in zh-Hans carry no stored English
reason text. A real provisioning run (simulated driver) whose validation, with the rules
from the database, rejects one node: it is swapped and the spare passes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import translation

from billing.orders.services import order_mark_paid
from provisioning import runs
from provisioning.models import (
    NodeSwap,
    ProvisioningRun,
    RunNode,
    RunNodeState,
    RunStatus,
    ValidationNodeResult,
    ValidationReport,
    ValidationRun,
    ValidationRunStatus,
)
from provisioning.validation import report, tasks
from provisioning.validation.interface import NodeTarget
from provisioning.validation.reasons import MESSAGES, reason_message
from tests.billing.test_payments import make_order
from tests.provisioning.test_validation_services import cpu_report, pdf_text

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def test_every_reason_code_the_code_base_makes_has_a_message():
    made = set()
    names = ("rules", "evaluation", "default_rules", "ssh", "interface", "services", "metrics")
    paths = []
    for name in (*names, "cluster"):  # a module, or a package of modules
        module = ROOT / "provisioning/validation" / f"{name}.py"
        paths += [module] if module.exists() else sorted((module.parent / name).glob("*.py"))
    assert len(paths) > len(names) + 1  # metrics and services are packages
    for path in (
        *paths,
        ROOT / "provisioning/agent/checks.py",
        ROOT / "provisioning/agent/runner.py",
    ):
        text = path.read_text()
        made |= set(re.findall(r'_reason\(\s*"([a-z_]+)"', text))
        made |= set(re.findall(r'"reason_code": "([a-z_]+)"', text))
        made |= set(re.findall(r'code="([a-z_]+)"', text))
        made |= set(re.findall(r'"code": "([a-z_]+)"', text))
        made |= set(re.findall(r'"(below_threshold|not_equal|check_skipped|check_failed)"', text))
    assert made and made <= set(MESSAGES), made - set(MESSAGES)


GEMM_LOW = {
    "code": "below_threshold",
    "params": {"metric": "gemm_tflops_bf16", "gpu": 3, "measured": 600.5, "unit": "TFLOPS",
               "expected": ">= 711 (790 -10%)", "source": "GEMM TFLOPS: torch.matmul ..."},
    "text": "gemm_tflops_bf16 on GPU 3: measured 600.5 TFLOPS, expected >= 711 (790 -10%) TFLOPS",
}  # fmt: skip


def test_a_reason_is_rendered_from_its_code_in_the_active_language():
    with translation.override("en"):
        assert reason_message(GEMM_LOW) == GEMM_LOW["text"]
        assert reason_message({"code": "no_such_code", "params": {}}) == (
            "Rejected for the reason “no_such_code”"
        )
    with translation.override("zh-hans"):
        zh = reason_message(GEMM_LOW)
    assert zh == "gemm_tflops_bf16（GPU 3）：实测 600.5 TFLOPS，要求 >= 711 (790 -10%) TFLOPS"


# --- A run whose validation rejects a node ------------------------------------------------


def _runner(bad_hostname: str):
    def run(target: NodeTarget, profile: str) -> dict[str, Any]:
        if target.hostname == bad_hostname:
            return cpu_report(gemm=0.0)  # the CPU GEMM rule wants more than 0 GFLOPS
        return cpu_report()

    return run


def _drive(run: ProvisioningRun, runner) -> ProvisioningRun:
    names = runs.steps_for(run.kind)
    for _round in range(5):
        run.refresh_from_db()
        if not run.is_active:
            break
        slots = RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE)
        for slot in list(slots.values_list("slot", flat=True)):
            runs.slot_advance(run_id=run.pk, slot=slot, upto=names[-2])
        if runs.run_validate(run_id=run.pk, runner=runner) == "validated":
            runs.run_deliver(run_id=run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def swapped(demo, settings, media):
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0
    settings.PORTAL_SIMULATED_FAIL = {}
    order, _ = order_mark_paid(order=make_order(demo, nodes=2))
    run = runs.provisioning_begin(order_id=order.pk)
    bad = RunNode.objects.get(run=run, slot=1).node
    run = _drive(run, _runner(bad.hostname))
    assert run.status == RunStatus.DELIVERED
    rejected = ValidationNodeResult.objects.get(node=bad, accepted=False)
    return {"order": order, "run": run, "bad": bad, "rejected": rejected}


def test_rejections_are_shown_translated_in_the_report_and_on_the_pages(
    swapped, tmp_path, client, demo, admin_user
):
    """One scenario for the PDF and both pages (a provisioning run costs seconds)."""
    failed_run = swapped["rejected"].run
    assert failed_run.status == ValidationRunStatus.FAILED
    stored = swapped["rejected"].reasons
    assert [r["code"] for r in stored] == ["below_threshold"]

    # The acceptance report in zh-Hans: the reasons translated, none of the stored English.
    text = pdf_text(report.render_acceptance_report(run=failed_run, language="zh-hans"), tmp_path)
    flat = " ".join(text.split())
    assert "gemm_gflops_cpu：实测 0 GFLOPS，要求 > 0 GFLOPS" in flat
    assert f"节点 {swapped['bad'].hostname} 未通过验收" in flat  # the cluster's reason
    for reason in stored + failed_run.cluster_reasons:
        assert reason["text"] not in flat
    # (The rules' sources are citations kept as written; the reasons carry no English.)
    assert "expected" not in flat and "not accepted" not in flat

    # The customer's order page and the staff run page (their live provisioning section).
    order, bad = swapped["order"], swapped["bad"]
    swap = NodeSwap.objects.get(order=order)
    assert "measured 0" in swap.reason  # what the run stored, in English
    client.force_login(demo["customer"])
    client.get(reverse("dashboard"))  # the session remembers the active organisation
    with translation.override("zh-hans"):
        order_url = reverse("dashboard_order", args=[order.number])
        staff_url = reverse("provisioning_run", args=[swapped["run"].pk])
    page = client.get(order_url).content.decode()
    client.force_login(admin_user)
    staff = client.get(staff_url).content.decode()
    for html in (page, staff):
        section = html[html.index('<section id="provisioning"') :]
        section = section[: section.index("</section>")]
        assert bad.hostname in section
        assert "gemm_gflops_cpu：实测 0 GFLOPS，要求 &gt; 0 GFLOPS" in section
        assert "measured 0" not in section and "Failed validation" not in section

    # The reports the documents worker renders by itself list the swap: the run that
    # passed after it (the spare) names the replaced node, its spare and why, translated;
    # the run that rejected the node ended before the swap.
    passed = ValidationRun.objects.get(order=order, status=ValidationRunStatus.PASSED)
    assert tasks.document_render_acceptance_report(passed.pk, "zh-hans")
    stored = ValidationReport.objects.get(run=passed, language="zh-hans")
    with stored.file.open("rb") as fh:
        text = " ".join(pdf_text(fh.read(), tmp_path).split())
    swaps = text[text.index("节点更换") :]  # "Node swaps"
    assert f"{bad.hostname} {swap.spare_node.hostname}" in swaps
    assert "gemm_gflops_cpu：实测 0" in swaps and "要求 > 0 GFLOPS" in swaps  # a wrapped cell
    assert tasks.document_render_acceptance_report(failed_run.pk, "en")
    stored = ValidationReport.objects.get(run=failed_run, language="en")
    with stored.file.open("rb") as fh:
        english = " ".join(pdf_text(fh.read(), tmp_path).split())
    assert "gemm_gflops_cpu: measured 0 GFLOPS, expected > 0 GFLOPS" in english
    assert "No node was swapped." in english


def test_a_per_nic_reason_names_the_nic_in_both_languages():
    reason = {
        "code": "below_threshold",
        "params": {"metric": "ib_write_bw_gbps", "gpu": None, "nic": "mlx5_6",
                   "measured": 301.2, "unit": "Gb/s", "expected": ">= 380"},
        "text": "",
    }  # fmt: skip
    with translation.override("en"):
        assert reason_message(reason) == (
            "ib_write_bw_gbps on NIC mlx5_6: measured 301.2 Gb/s, expected >= 380 Gb/s"
        )
    with translation.override("zh-hans"):
        text = reason_message(reason)
    assert "mlx5_6" in text and "301.2 Gb/s" in text and "NIC" not in text.replace("mlx5", "")
