"""The validation suite end to end: the node agent's real CPU run executed by a real Celery
worker (validation queue) over Redis against PostgreSQL, every raw output stored with its
SHA-256, and the acceptance report rendered on the documents queue."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from inventory.models import Node, NodeStatus
from provisioning.models import (
    ValidationArtifact,
    ValidationReport,
    ValidationRun,
    ValidationRunStatus,
    ValidationTrigger,
)
from provisioning.validation import services
from tests.integration.workers import Worker, scratch_broker_url
from tests.polling import wait_until
from tests.provisioning.test_validation_services import make_order

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_cpu_validation_run_through_a_worker_stores_outputs_and_the_report(
    demo, settings, tmp_path
):
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    order = make_order(demo)
    nodes = list(
        Node.objects.filter(node_type=demo["h100"], status=NodeStatus.AVAILABLE).order_by("pk")[:2]
    )
    run = services.validation_run_create(
        nodes=nodes, profile="acceptance", trigger=ValidationTrigger.PROVISIONING, order=order
    )
    worker = Worker(broker, env={"DJANGO_MEDIA_ROOT": str(settings.MEDIA_ROOT)})
    try:
        finished = wait_until(
            lambda: ValidationRun.objects.filter(
                pk=run.pk, status__in=(ValidationRunStatus.PASSED, ValidationRunStatus.FAILED)
            ).first(),
            timeout=180,
            message="the validation run to finish",
        )
        reports = wait_until(
            lambda: (lambda r: r if len(r) == 2 else None)(
                list(ValidationReport.objects.filter(run=run))
            ),
            timeout=180,
            message="the acceptance reports in both languages",
        )
    finally:
        log = worker.stop()
    assert finished.status == ValidationRunStatus.PASSED, (finished.cluster_reasons, log[-3000:])
    assert "provisioning.validation.tasks.validation_run_execute_task" in log
    assert "provisioning.validation.tasks.document_render_acceptance_report" in log

    # Real CPU measurements, judged by the rules in the database, for both nodes.
    results = list(finished.results.order_by("hostname"))
    assert [r.node_id for r in results] == sorted(n.pk for n in nodes)
    for result in results:
        assert result.accepted and result.device == "cpu"
        gemm = next(c for c in result.report["checks"] if c["name"] == "gemm")
        assert gemm["status"] == "completed" and gemm["value"] > 0
    assert finished.cluster_metrics["metrics"]["cluster_throughput_n_gbps"] > 0

    # Every raw output and each agent document, with its SHA-256.
    artifacts = list(ValidationArtifact.objects.filter(run=run))
    assert len([a for a in artifacts if a.check_name == "agent_document"]) == 2
    for a in artifacts:
        assert a.sha256 == hashlib.sha256(a.content.encode()).hexdigest()

    # The report: stored with its SHA-256, with the verdict, the charts and the hashes.
    english = next(r for r in reports if r.language == "en")
    with english.file.open("rb") as fh:
        data = fh.read()
    assert hashlib.sha256(data).hexdigest() == english.sha256
    path = tmp_path / "report.pdf"
    path.write_bytes(data)
    text = subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    for expected in (
        order.number,
        nodes[0].hostname,
        nodes[1].hostname,
        "Verdict: every check of the simulated run completed. No performance claim.",
        "SIMULATED HARDWARE: no performance claim",
        "GEMM throughput per GPU",
        "All-reduce bus bandwidth by message size",
        "Cluster scaling: all-reduce throughput ratio",
        "gemm_gflops_cpu",
        "Appendix: SHA-256 of every raw output",
    ):
        assert expected in text, expected
    squeezed = "".join(text.split())
    assert all(a.sha256 in squeezed for a in artifacts)
    assert b"/Subtype /Image" not in data  # the charts are vector drawings
    png = subprocess.run(
        ["pdftoppm", "-r", "40", "-png", "-f", "1", "-l", "1", str(path)],
        capture_output=True,
        check=True,
    ).stdout
    assert png.startswith(b"\x89PNG")
