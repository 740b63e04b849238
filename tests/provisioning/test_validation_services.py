"""Validation runs with rules from the database: thresholds, fail closed, stored raw
outputs with SHA-256, staff re-checks, the idle sweep, the acceptance report."""

from __future__ import annotations

import copy
import hashlib
import re
import subprocess
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from billing.models import SellerEntity
from billing.orders import acceptance
from billing.quotes import services as qs
from core.errors import DomainError
from core.models import OutboxMessage
from inventory import services as inventory_services
from inventory.models import NodeEvent, NodeStatus
from portal.celery import app
from provisioning.models import (
    ValidationArtifact,
    ValidationRule,
    ValidationRun,
    ValidationRunStatus,
    ValidationTrigger,
)
from provisioning.validation import report, services
from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.interface import NodeTarget, validate_nodes
from tests import factories
from tests.factories import run_document_renders

pytestmark = pytest.mark.django_db


def cpu_report(*, gemm: Any = 60.0, gemm_status: str = "completed") -> dict[str, Any]:
    """An agent document of the CPU path (as ``python -m provisioning.agent`` prints)."""

    def check(name: str, metric: str, unit: str, value: Any, status: str = "completed") -> dict:
        return {
            "name": name,
            "device": "cpu",
            "status": status,
            "metric": metric if status == "completed" else None,
            "unit": unit,
            "value": value if status == "completed" else None,
            "raw": f"{name}: {value} {unit}" if status == "completed" else "",
            "raw_format": None,
            "return_code": 0 if status == "completed" else None,
            "reason": "" if status == "completed" else "numpy is missing",
            "duration_s": 0.1,
            "details": {"message_size_bytes": 1 << 20} if name == "allreduce" else {},
        }

    return {
        "agent_version": "1.0",
        "profile": "quick",
        "host": {"hostname": "x", "device": "cpu", "cpu_model": "test CPU", "gpus": []},
        "checks": [
            check("gemm", "gemm_gflops_cpu", "GFLOPS", gemm, gemm_status),
            check("memory_bandwidth", "memcopy_bandwidth_gbps_cpu", "GB/s", 18.5),
            check("allreduce", "allreduce_busbw_gbps_cpu", "GB/s", 5.8),
            {
                "name": "dcgm_diag",
                "device": "cpu",
                "status": "skipped",
                "metric": None,
                "value": None,
                "raw": "",
                "reason": "no NVIDIA GPU on this host (device cpu)",
            },
        ],
    }


def fixed_runner(reports: dict[str, dict[str, Any]]):
    def run(target: NodeTarget, profile: str) -> dict[str, Any]:
        return copy.deepcopy(reports.get(target.hostname, cpu_report()))

    return run


@pytest.fixture
def nodes(db):
    s = factories.site("SZ")
    nt = factories.node_type()
    return [factories.node(s, nt) for _i in range(3)]


def gemm_rule(minimum: str) -> ValidationRule:
    rule = ValidationRule.objects.get(metric="gemm_gflops_cpu", gpu_model="cpu")
    rule.min_value = Decimal(minimum)
    rule.min_inclusive = True
    rule.save()
    return rule


def execute(nodes, reports=None, **kw) -> ValidationRun:
    run = services.validation_run_create(nodes=nodes, profile="quick", enqueue=False, **kw)
    return services.validation_run_execute(run_id=run.pk, runner=fixed_runner(reports or {}))


# --- Rules as data ----------------------------------------------------------------------


def test_the_seed_rules_are_in_the_database_and_the_seed_is_idempotent():
    stored = {r.as_rule() for r in ValidationRule.objects.all()}
    assert stored == set(DEFAULT_RULES)
    assert all(r.source for r in ValidationRule.objects.all())
    edited = ValidationRule.objects.get(metric="gemm_rel_error", gpu_model="*")
    edited.max_value = Decimal("0.02")
    edited.save()
    assert services.validation_rules_seed() == (0, len(DEFAULT_RULES))
    edited.refresh_from_db()
    assert edited.max_value == Decimal("0.02")  # staff's edit is kept


def test_an_inconsistent_rule_is_refused_by_the_admin_form_validation():
    rule = ValidationRule(metric="x", gpu_model="cpu", source="s", min_value=1, equals="0")
    with pytest.raises(Exception, match="exactly one kind of criterion"):
        rule.full_clean()


def test_exactly_at_the_threshold_passes(nodes):
    gemm_rule("60")
    run = execute(nodes[:1], {nodes[0].hostname: cpu_report(gemm=60.0)})
    assert run.status == ValidationRunStatus.PASSED
    result = run.results.get()
    assert result.accepted and result.reasons == []
    row = next(r for r in result.rule_results if r["metric"] == "gemm_gflops_cpu")
    assert row["status"] == "pass" and row["expected"] == ">= 60"


def test_just_below_the_threshold_fails_with_the_reason(nodes):
    gemm_rule("60")
    run = execute(nodes[:1], {nodes[0].hostname: cpu_report(gemm=59.99)})
    assert run.status == ValidationRunStatus.FAILED
    result = run.results.get()
    assert not result.accepted
    assert [r["code"] for r in result.reasons] == ["below_threshold"]
    assert "measured 59.99 GFLOPS, expected >= 60" in result.reasons[0]["text"]


def test_a_missing_metric_fails_closed(nodes):
    run = execute(nodes[:1], {nodes[0].hostname: cpu_report(gemm=None)})
    assert run.status == ValidationRunStatus.FAILED
    assert [r["code"] for r in run.results.get().reasons] == ["missing_metric"]


def test_a_skipped_required_check_fails_closed(nodes):
    run = execute(nodes[:1], {nodes[0].hostname: cpu_report(gemm_status="skipped")})
    result = run.results.get()
    assert not result.accepted
    assert {r["code"] for r in result.reasons} == {"check_skipped"}
    assert "numpy is missing" in result.reasons[0]["text"]
    # A skipped check that no required rule needs is a note, not a pass and not a failure.
    assert any(n["params"].get("check") == "dcgm_diag" for n in result.notes)


def test_an_inactive_rule_is_not_applied(nodes):
    rule = gemm_rule("1000")
    rule.active = False
    rule.save()
    run = execute(nodes[:1], {nodes[0].hostname: cpu_report(gemm=60.0)})
    assert run.status == ValidationRunStatus.PASSED


def test_no_rules_in_the_database_rejects_every_node(nodes):
    ValidationRule.objects.all().delete()
    run = execute(nodes[:1])
    assert run.status == ValidationRunStatus.FAILED
    assert [r["code"] for r in run.results.get().reasons] == ["no_rules"]


# --- What is stored ---------------------------------------------------------------------


def test_every_raw_output_and_the_agent_document_are_stored_with_their_sha256(nodes):
    run = execute(nodes[:2])
    assert run.status == ValidationRunStatus.PASSED, run.cluster_reasons
    assert list(run.events.values_list("to_status", flat=True)) == [
        "pending",
        "running",
        "passed",
    ]
    artifacts = list(ValidationArtifact.objects.filter(run=run))
    names = {(a.node_id, a.check_name) for a in artifacts}
    for node in nodes[:2]:
        assert {(node.pk, "agent_document"), (node.pk, "gemm"), (node.pk, "dcgm_diag")} <= names
    assert (None, "cluster") in names  # two CPU nodes: a real cluster all-reduce ran
    for a in artifacts:
        assert a.sha256 == hashlib.sha256(a.content.encode()).hexdigest()
        assert a.size == len(a.content.encode())
    result = run.results.get(node=nodes[0])
    document = next(
        a for a in artifacts if (a.node_id, a.check_name) == (nodes[0].pk, "agent_document")
    )
    assert result.report_sha256 == document.sha256
    assert run.cluster_metrics["metrics"]["allreduce_throughput_scaling"] > 0


def test_execute_twice_changes_nothing(nodes):
    run = execute(nodes[:1])
    again = services.validation_run_execute(run_id=run.pk, runner=fixed_runner({}))
    assert again.status == run.status
    assert run.results.count() == 1


def test_the_provisioning_run_keeps_its_outcome_through_persist(
    demo, nodes, django_capture_on_commit_callbacks
):
    order = make_order(demo)
    with django_capture_on_commit_callbacks():
        outcome = validate_nodes(
            [services.node_target(n) for n in nodes[:1]],
            profile="acceptance",
            runner=fixed_runner({}),
            persist=services.validation_persister(order_id=order.pk),
        )
    run = ValidationRun.objects.get(pk=outcome.validation_run_id)
    assert run.order == order and run.trigger == ValidationTrigger.PROVISIONING
    assert run.status == ValidationRunStatus.PASSED
    assert {tuple(m.task_names) for m in OutboxMessage.objects.all()} >= {
        (services.RENDER_REPORT_TASK,)
    }


def test_tasks_are_routed_to_the_validation_and_documents_queues():
    router = app.amqp.router
    assert router.route({}, services.EXECUTE_TASK)["queue"].name == "validation"
    assert (
        router.route({}, "provisioning.validation.tasks.validation_idle_sweep_task")["queue"].name
        == "validation"
    )
    assert router.route({}, services.RENDER_REPORT_TASK)["queue"].name == "documents"


# --- Staff re-check and the idle sweep --------------------------------------------------


def book_now(node) -> None:
    now = timezone.now()
    inventory_services.reservation_hold(
        nodes=[node],
        start_at=now - timedelta(hours=1),
        end_at=now + timedelta(days=3),
        owner_ref="order:test",
        firm=True,
    )


def test_staff_recheck_refuses_a_booked_or_provisioning_node(nodes):
    booked, provisioning, idle = nodes
    book_now(booked)
    inventory_services.node_transition(node=provisioning, to_status="reserved", reason="t")
    inventory_services.node_transition(node=provisioning, to_status="provisioning", reason="t")
    with pytest.raises(DomainError, match="is booked now"):
        services.validation_node_recheck(node=booked, actor=None)
    with pytest.raises(DomainError, match="“provisioning”: validation can only be re-run"):
        services.validation_node_recheck(node=provisioning, actor=None)
    run = services.validation_node_recheck(node=idle, actor=None)
    assert run.profile == "quick" and run.trigger == ValidationTrigger.STAFF
    with pytest.raises(DomainError, match="already pending or running"):
        services.validation_node_recheck(node=idle, actor=None)
    assert not ValidationRun.objects.filter(nodes__in=[booked, provisioning]).exists()


def test_staff_recheck_accepts_an_in_service_node(nodes):
    node = nodes[0]
    for to in ("reserved", "provisioning", "validating", "in_service"):
        inventory_services.node_transition(node=node, to_status=to, reason="t")
    run = services.validation_node_recheck(node=node, actor=None)
    assert list(run.nodes.all()) == [node]


def test_the_idle_sweep_never_touches_a_booked_node_and_faults_a_failing_idle_one(nodes):
    booked, failing, healthy = nodes
    book_now(booked)
    run_ids = services.validation_idle_sweep()
    runs = ValidationRun.objects.filter(pk__in=run_ids)
    assert {n.pk for r in runs for n in r.nodes.all()} == {failing.pk, healthy.pk}
    assert all(r.profile == "quick" and r.trigger == "idle_sweep" for r in runs)
    assert services.validation_idle_sweep() == []  # already pending: not twice
    reports = {failing.hostname: cpu_report(gemm=None)}
    for run in runs:
        services.validation_run_execute(run_id=run.pk, runner=fixed_runner(reports))
    failing.refresh_from_db()
    healthy.refresh_from_db()
    booked.refresh_from_db()
    assert failing.status == NodeStatus.FAULTY
    event = NodeEvent.objects.filter(node=failing).latest("created_at")
    assert "gemm_gflops_cpu: not measured" in event.reason
    assert healthy.status == NodeStatus.AVAILABLE
    assert booked.status == NodeStatus.AVAILABLE
    assert not booked.validation_runs.exists()


def test_a_node_booked_between_the_sweep_and_the_run_is_left_alone(nodes):
    node = nodes[0]
    for other in nodes[1:]:
        book_now(other)
    (run_id,) = services.validation_idle_sweep()
    book_now(node)
    run = services.validation_run_execute(run_id=run_id, runner=fixed_runner({}))
    assert run.status == ValidationRunStatus.CANCELLED
    assert not run.results.exists()


# --- The acceptance report --------------------------------------------------------------


def make_order(demo):
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    return acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )


def pdf_text(data: bytes, tmp_path) -> str:
    path = tmp_path / "r.pdf"
    path.write_bytes(data)
    return subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_report_has_the_verdict_tables_charts_swaps_and_hashes(demo, nodes, tmp_path, language):
    order = make_order(demo)
    gemm_rule("60")
    run = execute(
        nodes[:2],
        {nodes[1].hostname: cpu_report(gemm=59.0)},
        order=order,
    )
    swaps = [
        {
            "old": nodes[1].hostname,
            "new": nodes[2].hostname,
            "reason": "GEMM low",
            "at": timezone.now(),
        }
    ]
    data = report.render_acceptance_report(run=run, language=language, swaps=swaps)
    assert data.startswith(b"%PDF")
    text = pdf_text(data, tmp_path)
    for expected in (order.number, nodes[0].hostname, "gemm_gflops_cpu", "GEMM low"):
        assert expected in text
    # the site's seller entity names itself, as on its quotes and contracts
    seller = SellerEntity.objects.get(site=order.site)
    flat = " ".join(text.split())
    name = seller.legal_name if language == "en" else seller.legal_name_zh
    assert name and (name in flat or name in text.replace("\n", "")), name
    a = run.artifacts.filter(check_name="agent_document").first()
    assert a.sha256 in text.replace(" ", "").replace("\n", "") or a.sha256[:32] in text
    if language == "en":
        for title in (
            "GEMM throughput per GPU",
            "All-reduce bus bandwidth by message size",
            "Cluster scaling",
            "Verdict: not accepted",
            "Appendix: SHA-256 of every raw output",
            "expected >= 60",
        ):
            assert title in text, title
    else:
        # The agent's check statuses (the checks table, the appendix) in the reader's
        # language, not the agent's English keys.
        assert "已完成" in text and "已跳过" in text
        assert not re.search(r"\b(completed|skipped)\b", text), text
    # The charts are vector drawings (SVG → PDF paths), not images.
    assert b"/Subtype /Image" not in data
    # Simulated hardware (the CPU path): said in the running header of every page, and no
    # performance claim anywhere; the report is sealed like a contract (PAdES).
    pages = text.split("\f")
    label = "SIMULATED HARDWARE" if language == "en" else "模拟硬件"
    # (the first page has the provider block instead of the running header, and the
    # simulated-hardware notice above the verdict)
    missing = [page[:300] for page in pages if page.strip() and label.lower() not in page.lower()]
    assert not missing, missing
    assert "performs as sold" not in text and "Verdict: accepted" not in text
    assert b"/ByteRange" in data and b"/ETSI.CAdES.detached" in data


def test_the_stored_report_is_kept_once_per_language(demo, nodes, settings, tmp_path):
    order = make_order(demo)
    run = execute(nodes[:1], order=order)
    first = report.acceptance_report_document(run=run, language="en")
    again = report.acceptance_report_document(run=run, language="en")
    assert first.pk == again.pk
    with first.file.open("rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == first.sha256


def test_the_order_page_lists_the_report_for_download(demo, nodes, client):
    order = make_order(demo)
    client.force_login(demo["customer"])
    page = reverse("dashboard_order", kwargs={"number": order.number})
    assert "Not yet available" in client.get(page).content.decode()
    run = execute(nodes[:1], order=order)
    url = reverse("dashboard_acceptance_report", kwargs={"number": order.number, "run_id": run.pk})
    assert url in client.get(page).content.decode()
    # Never rendered in the request: "being prepared", the documents queue, a reload.
    response = client.get(url)
    assert response.status_code == 200 and "being prepared" in response.content.decode()
    assert not report.ACCEPTANCE_REPORT.stored(run, language="en")
    assert run_document_renders() >= 1
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert b"".join(response.streaming_content).startswith(b"%PDF")


def test_the_customer_downloads_each_nodes_raw_outputs_as_one_zip(demo, nodes, client):
    import io
    import zipfile

    order = make_order(demo)
    run = execute(nodes[:1], order=order)
    client.force_login(demo["customer"])
    page = client.get(reverse("dashboard_order", kwargs={"number": order.number}))
    node = nodes[0]
    url = reverse(
        "dashboard_acceptance_raw",
        kwargs={"number": order.number, "run_id": run.pk, "node_id": node.pk},
    )
    assert url in page.content.decode()
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = archive.namelist()
    folder = names[0].split("/")[0]
    sums = archive.read(f"{folder}/SHA256SUMS").decode().splitlines()
    stored = {a.sha256 for a in run.artifacts.filter(node=node)}
    listed = {line.split()[0] for line in sums}
    assert listed == stored  # the hashes the report lists, one file each
    for line in sums:
        digest, name = line.split(maxsplit=1)
        assert hashlib.sha256(archive.read(f"{folder}/{name}")).hexdigest() == digest
    # another organisation's order, or a node not in the run: nothing
    other = reverse(
        "dashboard_acceptance_raw",
        kwargs={"number": order.number, "run_id": run.pk, "node_id": nodes[2].pk},
    )
    assert client.get(other).status_code == 404
