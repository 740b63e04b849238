"""Issue 19, point 5: the staff run page shows each validation check as it finishes.

A provisioning run's validate step runs the real agent as a process (``LocalRunner``) with
the fake GPU tools on PATH (``fakegpu/tool.py``: the real samples) on an 8×H100 node. The
moment the agent says DCGM started (``dcgmi diag -r 3`` alone takes about fifteen
minutes for real), the staff page, as its htmx poll fetches it, already shows every other
check finished, each with its own verdict and the figures derived from its raw output,
and DCGM running; afterwards DCGM too, and the node is accepted. (Through a real worker:
tests/integration/test_provisioning_worker.py.)"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from django.utils import translation

from billing.orders.services import order_mark_paid
from inventory.models import Node
from provisioning import runs
from provisioning.agent.checks import CHECKS
from provisioning.models import NodeStep, ProvisioningRun, RunNode, StepName, ValidationCheck
from provisioning.validation import services
from provisioning.validation.interface import LineSink, NodeTarget, local_runner
from provisioning.validation.reasons import CHECK_LABELS, check_label
from tests.billing.test_payments import make_order
from tests.provisioning import test_validation_e2e as e2e

pytestmark = pytest.mark.django_db
ROW = re.compile(r'<tr data-check="(\w+)" data-status="(\w+)" data-verdict="(\w*)"')
# The real agent, its sustained GEMM cut from 60 s to 0.1 s (the figures are injected).
AGENT = local_runner(timeout_s=120, extra_args=["--gemm-seconds", "0.1"])


class PageWhenDcgmStarts:
    """The real agent; when its ``check_start`` line for DCGM has been recorded (the
    agent is running ``dcgmi`` then), the staff page is fetched as the poll would."""

    streams = True

    def __init__(self, fetch: Any) -> None:
        self.fetch = fetch
        self.page = ""

    def __call__(self, target: NodeTarget, profile: str, on_line: LineSink) -> dict[str, Any]:
        def observed(line: dict[str, Any]) -> None:
            on_line(line)  # the portal's own recorder first
            if line["type"] == "check_start" and line["name"] == "dcgm_diag":
                self.page = self.fetch()

        return AGENT(target, profile, on_line=observed)


def test_the_staff_run_page_shows_each_check_as_it_finishes(
    demo, settings, tmp_path, client, admin_user, monkeypatch
):
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0
    settings.PORTAL_SIMULATED_FAIL = {}
    order, _ = order_mark_paid(order=make_order(demo, nodes=1))
    run = runs.provisioning_begin(order_id=order.pk)
    runs.slot_advance(run_id=run.pk, slot=0, upto=runs.steps_for(run.kind)[-2])
    node = RunNode.objects.get(run=run, slot=0).node
    # From here the node is a real 8×H100 behind a BMC, judged as one (not on the CPU path).
    ProvisioningRun.objects.filter(pk=run.pk).update(driver="redfish")
    Node.objects.filter(pk=node.pk).update(driver="redfish")
    settings.PORTAL_REDFISH_IN_BAND = ""
    for key, value in e2e._node_files(tmp_path, e2e.NODES["h100"]).items():
        monkeypatch.setenv(key, value)
    client.force_login(admin_user)
    url = reverse("provisioning_run", args=[run.pk])
    runner = PageWhenDcgmStarts(lambda: client.get(url, HTTP_HX_REQUEST="true").content.decode())

    assert runs.run_validate(run_id=run.pk, runner=runner) == "validated"

    rows = ROW.findall(runner.page)  # while dcgmi ran
    assert [name for name, *_ in rows] == [
        "gpu_inventory", "ecc", "ecc_remap", "nvlink", "xid", "gemm", "memory_bandwidth",
        "nvbandwidth", "allreduce", "ib_write_bw", "dcgm_diag",
    ]  # fmt: skip
    assert set(rows[:-1]) == {(name, "completed", "passed") for name, *_ in rows[:-1]}
    assert rows[-1] == ("dcgm_diag", "running", "")
    # each finished check with its figures, derived from its raw output as it arrived
    assert "<code>gemm_tflops_bf16</code> 800 ×8" in runner.page
    assert "<code>ib_nic_count</code> 8" in runner.page

    step = NodeStep.objects.get(run=run, node=node, name=StepName.VALIDATE)
    checks = list(ValidationCheck.objects.filter(step=step).order_by("position"))
    assert {c.attempt for c in checks} == {step.attempt}
    dcgm = checks[-1]
    assert (dcgm.name, dcgm.status, dcgm.verdict) == ("dcgm_diag", "completed", "passed")
    assert dcgm.started_at <= dcgm.finished_at and dcgm.finished_at >= checks[-2].finished_at
    assert dcgm.metrics == {"dcgm_fail_count": 0, "dcgm_skip_count": 0, "dcgm_warn_count": 0}
    assert len(dcgm.raw_sha256) == 64
    final = client.get(url).content.decode()
    assert ("dcgm_diag", "completed", "passed") in ROW.findall(final)


def test_a_check_the_agent_never_finished_is_shown_failed(
    demo, settings, tmp_path, monkeypatch, admin_client
):
    """The agent dies in the middle of DCGM (a stand-alone validation run): the checks it
    finished keep their verdicts, DCGM is shown as not finished, the run fails."""
    node = Node.objects.filter(node_type=demo["h100"]).order_by("pk").first()
    Node.objects.filter(pk=node.pk).update(driver="redfish")
    settings.PORTAL_REDFISH_IN_BAND = ""
    spec = {**e2e.NODES["h100"], "kill_agent": "dcgmi"}
    for key, value in e2e._node_files(tmp_path, spec).items():
        monkeypatch.setenv(key, value)
    run = services.validation_run_create(nodes=[node], profile="acceptance", enqueue=False)

    run = services.validation_run_execute(run_id=run.pk, runner=AGENT)

    assert run.status == "failed"
    assert "agent_incomplete" in {r["code"] for r in run.results.get().reasons}
    checks = {c.name: c for c in run.live_checks.filter(node=node)}
    dcgm = checks.pop("dcgm_diag")
    assert (dcgm.status, dcgm.verdict) == ("unfinished", "failed")
    assert [r["code"] for r in dcgm.reasons] == ["check_not_finished"]
    assert {(c.status, c.verdict) for c in checks.values()} == {("completed", "passed")}
    assert len(checks) == 10
    page = admin_client.get(
        reverse("admin:provisioning_validationrun_change", args=[run.pk])
    ).content.decode()
    assert "did not finish" in page and "Check dcgm_diag did not finish" in page


def test_every_agent_check_has_a_label_in_both_languages():
    """The staff run page names each check in the reader's language (the code name stays
    beside it): no check of the agent without a label, and the Chinese one is Chinese."""
    assert set(CHECKS) == set(CHECK_LABELS)
    with translation.override("zh-hans"):
        for name in CHECKS:
            assert check_label(name) != CHECK_LABELS[name], name
