"""The 24-hour burn-in (issue 20, point 7): an add-on on the price book, per node and
free from ``BURN_IN_FREE_FROM_NODES`` nodes; the agent's ``burn_in`` profile runs rounds
of sustained GEMM and all-reduce with clocks, temperature and power sampled; a node that
slows or throttles fails, a burn-in cut short fails, and its rules apply only where the
order has one. The agent runs for real (GPU path against the fake tools of
``test_validation_e2e``, CPU path as simulated nodes run it)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from decimal import Decimal as D

import pytest
from django.core.management import call_command
from django.template.loader import render_to_string
from django.utils import translation

from billing.models import Order, QuoteItem
from billing.orders.selectors import order_burn_in
from billing.orders.services import order_mark_paid
from billing.pricing.engine import (
    BURN_IN_CODE,
    BURN_IN_FREE_FROM_NODES,
    AddonPrice,
    AddonRequest,
    AddonUnit,
    NodeRequest,
    PricingError,
)
from inventory.models import HardwareDriverKind
from provisioning import runs
from provisioning.models import (
    ProvisioningRun,
    RunKind,
    RunStatus,
    ValidationProfile,
    ValidationRun,
)
from provisioning.runs import run_burn_in_seconds, validate_limit_s
from provisioning.runs.plan import STEP_LIMIT_S
from provisioning.validation import report
from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.evaluation import evaluate_node
from provisioning.validation.metrics import derive
from tests.billing.test_payments import make_order
from tests.billing.test_pricing import ADDONS, H100, quote, sz_book
from tests.provisioning.test_runs import drive
from tests.provisioning.test_validation_e2e import (
    NODES,
    REPO,
    _node_files,
    node_types,  # noqa: F401 (the fixture)
)

BURN_IN = AddonPrice(BURN_IN_CODE, "24-hour burn-in", AddonUnit.ONCE, D("800.00"))
BURN_IN_RULES = [r for r in DEFAULT_RULES if r.check == "burn_in"]


def test_the_burn_in_is_priced_per_node_once_and_free_for_large_clusters():
    book = sz_book(addons={**ADDONS, BURN_IN_CODE: BURN_IN})
    small = quote(
        book,
        nodes=(NodeRequest(H100.node_type, 4),),
        addons=(AddonRequest(BURN_IN_CODE, D("1")),),  # the quantity asked is not the rule
    )
    [line] = [ln for ln in small.lines if ln.code == BURN_IN_CODE]
    assert line.quantity == 4 and line.unit_price == D("800.00")
    assert line.list_amount == D("3200.00") and line.period_unit == "once"
    large = quote(
        book,
        nodes=(NodeRequest(H100.node_type, BURN_IN_FREE_FROM_NODES),),
        addons=(AddonRequest(BURN_IN_CODE, D("1")),),
    )
    [line] = [ln for ln in large.lines if ln.code == BURN_IN_CODE]
    assert line.quantity == BURN_IN_FREE_FROM_NODES and line.list_amount == D("0.00")
    with pytest.raises(PricingError, match="per node"):
        quote(book, addons=(AddonRequest(BURN_IN_CODE, D("1")),))


@pytest.mark.django_db
def test_an_order_gets_the_burn_in_when_bought_or_large_and_its_run_waits_for_it(demo, settings):
    settings.PORTAL_SIMULATED_TIME_SCALE = 0.0001
    order = make_order(demo, nodes=2)
    assert order_burn_in(order) is False
    run = ProvisioningRun.objects.create(
        order=order, kind=RunKind.PROVISION, driver=HardwareDriverKind.SIMULATED
    )
    assert run_burn_in_seconds(run) == 0
    assert validate_limit_s(run) == STEP_LIMIT_S["validate"]
    QuoteItem.objects.create(quote=order.quote, kind="addon", addon_code=BURN_IN_CODE, quantity=1)
    assert order_burn_in(order) is True
    # Simulated hardware: the 24 hours at the simulated time scale (8.64 s), and the
    # validate step's lease and task limit cover it.
    assert run_burn_in_seconds(run) == 9
    assert validate_limit_s(run) == STEP_LIMIT_S["validate"] + 9
    # Real hardware: the whole 24 hours.
    run.driver = HardwareDriverKind.REDFISH
    settings.PORTAL_REDFISH_IN_BAND = ""
    assert run_burn_in_seconds(run) == 86400
    # A replacement's spare gets the quick check, never the burn-in.
    replace = ProvisioningRun.objects.create(order=order, kind=RunKind.REPLACE)
    assert run_burn_in_seconds(replace) == 0
    big = make_order(demo, nodes=1)
    QuoteItem.objects.filter(quote=big.quote, kind="node").update(quantity=BURN_IN_FREE_FROM_NODES)
    assert order_burn_in(Order.objects.get(pk=big.pk)) is True


# --- the rounds, as the agent writes them: derive → rules → verdict ---------------------


def _nccl(busbw: float) -> str:
    """An all_reduce_perf output (the 8×A100 sample's shape) at ``busbw`` GB/s."""
    return (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong\n"
        f"  8589934592    2147483648     float     sum      -1    74000   116.1  {busbw:.2f}"
        f"      0    74000   116.1  {busbw:.2f}      0\n"
        "# Out of bounds values : 0 OK\n"
        f"# Avg bus bandwidth    : {busbw:.2f}\n"
    )


def _sample(t: float, reasons: str = "0x0000000000000000") -> dict:
    header = "index, clocks.sm [MHz], temperature.gpu, power.draw [W], clocks_event_reasons.active"
    rows = [f"{i}, 1980 MHz, {62 + i}, 690.50 W, {reasons if i == 1 else '0x0'}" for i in (0, 1)]
    return {"t": t, "return_code": 0, "csv": "\n".join([header, *rows])}


def burn_in_document(
    tflops: list[list[float]], busbw: list[float], *, seconds: float, reasons: str = "0x0"
) -> dict:
    rounds = [
        {"t": i * 1800.0, "tflops": t, "dtype": "bf16", "allreduce_status": "completed",
         "allreduce_return_code": 0, "allreduce_raw": _nccl(b)}
        for i, (t, b) in enumerate(zip(tflops, busbw, strict=True))
    ]  # fmt: skip
    raw = {
        "seconds": seconds,
        "planned_seconds": 86400.0,
        "rounds": rounds,
        "samples": [_sample(0), _sample(seconds / 2, reasons), _sample(seconds)],
        "sample_fields": "index,clocks.sm,temperature.gpu,power.draw,clocks_event_reasons.active",
    }
    check = {"name": "burn_in", "device": "cuda", "status": "completed", "return_code": 0,
             "raw": json.dumps(raw)}  # fmt: skip
    return {"host": {"device": "cuda"}, "checks": [check], "planned": ["burn_in"]}


def failed_burn_in_rules(document: dict, *, hours: float | None = 24.0) -> set[str]:
    expected = {"gpu_count": 2} | ({"burn_in_hours": hours} if hours is not None else {})
    m = derive(document, node="n1", gpu_model="H100", expected=expected)
    verdict = evaluate_node(m, BURN_IN_RULES)
    return {r.rule.metric for r in verdict.results if r.status == "fail"}


STEADY = [[790.0, 795.0]] * 6
DAY = 86400.0


def test_a_steady_day_passes_every_burn_in_rule():
    doc = burn_in_document(STEADY, [230.0] * 6, seconds=DAY + 5)
    assert failed_burn_in_rules(doc) == set()
    m = derive(doc, node="n1", gpu_model="H100", expected={"burn_in_hours": 24.0})
    assert m.metrics["burn_in_gemm_slowdown"] == [0.0, 0.0]
    assert m.metrics["burn_in_throttled_gpus"] == 0
    assert m.metrics["burn_in_gpu_temperature_max_c"] == [62.0, 63.0]


def test_a_gpu_that_slows_fails_and_so_does_a_slower_all_reduce():
    # GPU 1 loses 10 % over the day (first third 795, last third 715): over the 5 %.
    slowing = [[790.0, 795.0]] * 2 + [[790.0, 760.0]] * 2 + [[790.0, 715.0]] * 2
    doc = burn_in_document(slowing, [230.0] * 6, seconds=DAY + 5)
    assert failed_burn_in_rules(doc) == {"burn_in_gemm_slowdown"}
    m = derive(doc, node="n1", gpu_model="H100", expected={"burn_in_hours": 24.0})
    assert m.metrics["burn_in_gemm_slowdown"] == [0.0, pytest.approx(0.1006, abs=1e-3)]
    doc = burn_in_document(STEADY, [230.0, 230.0, 225.0, 220.0, 210.0, 205.0], seconds=DAY + 5)
    assert failed_burn_in_rules(doc) == {"burn_in_allreduce_slowdown"}


def test_a_throttled_gpu_a_short_burn_in_and_a_missing_one_fail_and_no_order_asks_none():
    hw_slowdown = "0x0000000000000008"  # DCGM/NVML HW_SLOWDOWN
    doc = burn_in_document(STEADY, [230.0] * 6, seconds=DAY + 5, reasons=hw_slowdown)
    assert failed_burn_in_rules(doc) == {"burn_in_throttled_gpus"}
    short = burn_in_document(STEADY, [230.0] * 6, seconds=20 * 3600)
    assert failed_burn_in_rules(short) == {"burn_in_hours"}
    missing = {"host": {"device": "cuda"}, "checks": [], "planned": []}
    assert failed_burn_in_rules(missing) >= {"burn_in_hours", "burn_in_gemm_slowdown"}
    # An order without the burn-in: none of its rules applies (nothing to fail).
    m = derive(missing, node="n1", gpu_model="H100", expected={"gpu_count": 2})
    assert evaluate_node(m, BURN_IN_RULES).results == []


# --- the real agent ---------------------------------------------------------------------


def run_burn_in_agent(tmp_path, node: dict, seconds: int) -> str:
    env = _node_files(tmp_path, node)
    out = tmp_path / "agent.jsonl"
    agent = [sys.executable, "-m", "provisioning.agent", "--profile", "burn_in", "--device"]
    proc = subprocess.run(
        [*agent, "cuda", "--gemm-seconds", "0.1", "--sizes", f"burn_in={seconds}",
         "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return str(out)


@pytest.mark.django_db
def test_the_agent_s_burn_in_of_a_healthy_node_passes_and_a_throttling_one_fails(
    node_types,  # noqa: F811
    tmp_path,
):
    hours = 3 / 3600
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    path = run_burn_in_agent(healthy, NODES["h100"], 3)
    code, judged = judge_burn_in(node_types["h100"], path, hours)
    assert code == 0 and judged["accepted"], judged["reasons"]
    burn_in = {r["metric"]: r for r in judged["results"] if r["metric"].startswith("burn_in")}
    assert set(burn_in) == {r.metric for r in BURN_IN_RULES if r.gpu_model == "*"}
    assert all(r["status"] == "pass" and r["source"] for r in burn_in.values())
    assert judged["metrics"]["burn_in_hours"] >= hours
    assert len(judged["metrics"]["burn_in_gpu_power_max_w"]) == 8
    # Judged as an order that asked for a longer burn-in: cut short, rejected.
    code, judged = judge_burn_in(node_types["h100"], path, 1.0)
    assert code == 1 and ("below_threshold", "burn_in_hours") in {
        (r["code"], r["params"].get("metric")) for r in judged["reasons"]
    }
    throttling = tmp_path / "throttling"
    throttling.mkdir()
    node = {**NODES["h100"], "throttle": {"5": "0x0000000000000040"}}  # HW_THERMAL
    code, judged = judge_burn_in(node_types["h100"], run_burn_in_agent(throttling, node, 2), hours)
    assert code == 1
    failed = {r["metric"] for r in judged["results"] if r["status"] == "fail"}
    assert "burn_in_throttled_gpus" in failed


def judge_burn_in(node_type, path: str, hours: float) -> tuple[int, dict]:
    stdout = io.StringIO()
    try:
        call_command(
            "validation_judge", "--node-type", node_type.code, "--burn-in-hours", str(hours),
            path, stdout=stdout,
        )  # fmt: skip
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(stdout.getvalue())


@pytest.mark.django_db
def test_an_order_with_the_burn_in_is_burnt_in_before_hand_over_and_the_report_says_so(
    demo, settings
):
    """A paid order that bought the add-on, provisioned on the simulated driver and
    validated by the real agent on the CPU path (as simulated nodes are): the validation
    run is the burn-in profile, its rounds ran, its rules passed and the acceptance report
    lists them with their sources, in both languages."""
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0
    settings.PORTAL_SIMULATED_FAIL = {}
    order = make_order(demo, nodes=1)
    QuoteItem.objects.create(quote=order.quote, kind="addon", addon_code=BURN_IN_CODE, quantity=1)
    order, _ = order_mark_paid(order=order)
    run = drive(runs.provisioning_begin(order_id=order.pk))
    assert run.status == RunStatus.DELIVERED, run.message
    check = ValidationRun.objects.get(order=order)
    assert check.profile == ValidationProfile.BURN_IN and check.status == "passed"
    [result] = check.results.all()
    judged = {r["metric"]: r for r in result.rule_results if r["metric"].startswith("burn_in")}
    assert set(judged) == {"burn_in_hours", "burn_in_gemm_slowdown", "burn_in_allreduce_slowdown"}
    assert all(r["status"] == "pass" for r in judged.values())
    [burn_in] = [c for c in result.report["checks"] if c["name"] == "burn_in"]
    assert burn_in["status"] == "completed" and json.loads(burn_in["raw"])["rounds"]
    for language, title in (("en", "burn_in_hours"), ("zh-hans", "burn_in_hours")):
        with translation.override(language):
            html = render_to_string(
                report.TEMPLATE, report.acceptance_report_context(check, language=language)
            )
            profile = str(ValidationProfile.BURN_IN.label)  # the profile, translated
        assert title in html and profile in html
        if language == "en":  # the rule's source (Chinese pages give their own wording)
            assert "24-hour stability" in html
