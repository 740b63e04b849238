"""Provisioning end to end: a paid order's run executed by a real Celery worker over Redis
against PostgreSQL with the simulated driver under a small time scale: delivered, a
failing node swapped for a spare, a worker killed mid-run and the run resumed, and
cleaning at the end returning the nodes to available; then the Redfish driver against
``sushy-emulator --fake``, where a node missing from its BMC fails with the reason and a
spare is swapped in."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import threading
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from billing.models import Order, OrderStatus
from billing.orders.selectors import order_nodes
from billing.orders.services import order_mark_paid
from inventory.models import ImageProfile, Node, NodeStatus, Site
from provisioning import runs
from provisioning.models import (
    NodeStep,
    NodeStepEvent,
    NodeSwap,
    ProvisioningRun,
    RunKind,
    RunNode,
    RunNodeState,
    RunStatus,
    StepName,
    StepStatus,
    ValidationCheck,
)
from tests.billing.test_payments import make_order
from tests.integration import test_redfish_driver as redfish_tests
from tests.integration.workers import Worker, scratch_broker_url
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT = 120


def worker_env(tmp_path, **extra: str) -> dict[str, str]:
    return {
        "DJANGO_MEDIA_ROOT": str(tmp_path / "media"),
        "PORTAL_PROVISIONING_AUTOSTART": "1",
        "PORTAL_HARDWARE_DRIVER": "simulated",
        # Realistic step times (an OS install 15 min) replayed at 1/1000: about 1 s.
        "PORTAL_SIMULATED_TIME_SCALE": "0.001",
        "PORTAL_SIMULATED_FAILURE_RATE": "0",
        "PORTAL_PROVISIONING_STEP_RETRIES": "1",
        "PORTAL_PROVISIONING_RETRY_BACKOFF_S": "0.1",
        **extra,
    }


def paid_order(demo, nodes: int) -> tuple[Order, list[Node]]:
    """A signed and paid order: the gate publishes provisioning_start (outbox, on commit).
    Its rental starts in a week at a site whose lead time is 8 days, so its provisioning
    time (start minus lead time) has come and the run starts at once."""
    order = make_order(demo, nodes=nodes)
    Site.objects.filter(pk=order.site_id).update(lead_time_hours=8 * 24)
    order, _ = order_mark_paid(order=order)
    booked = list(order_nodes(order))
    assert len(booked) == nodes
    return order, booked


def finished_run(order: Order, kind: str = RunKind.PROVISION) -> ProvisioningRun:
    return wait_until(
        lambda: ProvisioningRun.objects.filter(
            order=order, kind=kind, status__in=[RunStatus.DELIVERED, RunStatus.FAILED]
        ).first(),
        timeout=RUN_TIMEOUT,
        message=f"the {kind} run of {order.number} to finish",
    )


def done_once(run: ProvisioningRun) -> None:
    """Every step of the run's active nodes done, and done exactly once."""
    active = RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).values("node_id")
    steps = list(NodeStep.objects.filter(run=run, node_id__in=active))
    assert steps and {s.status for s in steps} == {StepStatus.DONE}, [
        (s.node.hostname, s.name, s.status, s.message) for s in steps if s.status != "done"
    ]
    for step in steps:
        assert NodeStepEvent.objects.filter(step=step, to_status=StepStatus.DONE).count() == 1


def test_a_paid_order_is_delivered_by_a_worker_and_cleaned_at_the_end(
    demo, settings, tmp_path, client, admin_user
):
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    order, booked = paid_order(demo, nodes=4)
    worker = Worker(broker, env=worker_env(tmp_path), threads=4)  # a node a thread
    try:
        run = finished_run(order)
        assert run.status == RunStatus.DELIVERED, (run.message, worker.stop()[-4000:])
        order.refresh_from_db()
        assert order.status == OrderStatus.READY
        # The customer's four nodes, in service, each with its SSH user and delivered.
        nodes = Node.objects.filter(run_nodes__run=run, run_nodes__state=RunNodeState.ACTIVE)
        assert sorted(n.hostname for n in nodes) == sorted(n.hostname for n in booked)
        assert {n.status for n in nodes} == {NodeStatus.IN_SERVICE}
        assert all(rn.delivered_at and rn.ssh_user for rn in RunNode.objects.filter(run=run))
        done_once(run)
        steps = NodeStep.objects.filter(run=run)
        assert steps.count() == 4 * 10
        assert set(steps.values_list("attempt", flat=True)) == {1}
        assert not NodeSwap.objects.filter(order=order).exists()
        moves = list(order.events.order_by("created_at", "id").values_list("to_status", flat=True))
        assert moves[-3:] == ["provisioning", "validating", "ready"]
        # Each agent check, written by the worker as the agent's line arrived (the CPU
        # path of simulated hardware: the GPU checks skipped, judged by no rule), and
        # shown on the staff run page.
        client.force_login(admin_user)
        page = client.get(reverse("provisioning_run", args=[run.pk])).content.decode()
        for node in nodes:
            step = NodeStep.objects.get(run=run, node=node, name=StepName.VALIDATE)
            checks = {
                c.name: (c.status, c.verdict)
                for c in ValidationCheck.objects.filter(step=step, attempt=step.attempt)
            }
            assert len(checks) == 11, checks
            for name in ("gemm", "memory_bandwidth", "allreduce"):
                assert checks[name] == ("completed", "passed"), name
            assert checks["dcgm_diag"] == ("skipped", "not_judged")
        assert page.count('data-check="gemm" data-status="completed" data-verdict="passed"') == 4

        # The rental ends: every node is wiped, checked and available again.
        Order.objects.filter(pk=order.pk).update(end_at=timezone.now() - timedelta(minutes=1))
        assert runs.orders_end_due() == 1
        clean = finished_run(order, RunKind.CLEAN)
        assert clean.status == RunStatus.DELIVERED, clean.message
        done_once(clean)
        assert set(NodeStep.objects.filter(run=clean).values_list("name", flat=True)) == {
            StepName.ERASE,
            StepName.BIOS_RESET,
            StepName.CHECK_CLEAN,
        }
        for node in booked:
            node.refresh_from_db()
            assert node.status == NodeStatus.AVAILABLE, node.hostname
        order.refresh_from_db()
        assert order.status == OrderStatus.ENDED
    finally:
        worker.stop()


def test_a_node_failing_its_install_is_swapped_for_a_spare(demo, settings, tmp_path):
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    order, booked = paid_order(demo, nodes=4)
    victim = booked[1]
    fail = json.dumps({victim.hostname: ["install_image"]})
    worker = Worker(broker, env=worker_env(tmp_path, PORTAL_SIMULATED_FAIL=fail), threads=4)
    try:
        run = finished_run(order)
    finally:
        log = worker.stop()
    assert run.status == RunStatus.DELIVERED, (run.message, log[-4000:])
    victim.refresh_from_db()
    assert victim.status == NodeStatus.FAULTY
    swap = NodeSwap.objects.get(order=order)
    assert swap.failed_node == victim and swap.spare_node is not None
    assert "install_image" in swap.reason
    spare = swap.spare_node
    assert spare not in booked and spare.node_type_id == victim.node_type_id
    spare.refresh_from_db()
    assert spare.status == NodeStatus.IN_SERVICE
    failed = NodeStep.objects.get(run=run, node=victim, name=StepName.INSTALL)
    assert failed.status == StepStatus.FAILED and "install_image" in failed.message
    # The customer gets four nodes: the three it booked and the spare, none of them faulty.
    active = {rn.node for rn in RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE)}
    assert active == (set(booked) - {victim}) | {spare}
    done_once(run)
    order.refresh_from_db()
    assert order.status == OrderStatus.READY


def test_a_worker_killed_mid_run_is_replaced_and_the_run_finishes(demo, settings, tmp_path):
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    order, _booked = paid_order(demo, nodes=4)
    # A long deadline: the reaper is called below as if two hours had passed (every lease
    # of a dead worker expired) without failing the run for its deadline.
    # At 1/500 a step lasts long enough to kill the worker in the middle of one.
    env = worker_env(
        tmp_path,
        PORTAL_PROVISIONING_DEADLINE_MIN_PER_NODE="600",
        PORTAL_SIMULATED_TIME_SCALE="0.002",
    )
    first = Worker(broker, env=env)
    total = 4 * 10
    try:
        run = wait_until(
            lambda: ProvisioningRun.objects.filter(order=order).first(),
            timeout=60,
            message="the run to be created",
        )
        # Some steps done, and the worker inside an OS install (about 2 s at this scale).
        wait_until(
            lambda: (
                NodeStep.objects.filter(run=run, status=StepStatus.DONE).count() >= 10
                and NodeStep.objects.filter(
                    run=run, status=StepStatus.RUNNING, name=StepName.INSTALL
                ).exists()
            ),
            timeout=RUN_TIMEOUT,
            message="some steps done and an install running",
        )
    finally:
        first_log = first.kill()
    done_at_kill = NodeStep.objects.filter(run=run, status=StepStatus.DONE).count()
    assert 10 <= done_at_kill < total, first_log[-3000:]
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    # Nothing moves while no worker runs; the install the worker held stays running under
    # its lease (an hour: the reaper leaves it alone until then).
    assert NodeStep.objects.filter(run=run, status=StepStatus.DONE).count() == done_at_kill
    held = list(
        NodeStep.objects.filter(run=run, status=StepStatus.RUNNING).values_list("pk", flat=True)
    )
    assert len(held) == 1, first_log[-3000:]
    assert runs.reaper()["reaped"] == 0

    second = Worker(broker, env={**env, "PORTAL_BROKER_VISIBILITY_TIMEOUT": "2"})
    try:
        # What beat's reaper does once the dead worker's leases are over.
        result = runs.reaper(now=timezone.now() + timedelta(hours=2))
        assert result["relaunched"] == 1 and result["failed"] == 0, result
        assert result["reaped"] == len(held), result
        run = finished_run(order)
    finally:
        second_log = second.stop()
    assert run.status == RunStatus.DELIVERED, (run.message, second_log[-4000:])
    done_once(run)
    assert NodeStep.objects.filter(run=run).count() == total
    # The step the killed worker held ran again (attempt 2); every other step ran once.
    attempts = dict(NodeStep.objects.filter(run=run).values_list("pk", "attempt"))
    assert {pk for pk, n in attempts.items() if n != 1} == set(held), attempts
    assert all(attempts[pk] == 2 for pk in held)
    nodes = Node.objects.filter(run_nodes__run=run)
    assert {n.status for n in nodes} == {NodeStatus.IN_SERVICE}
    assert not Node.objects.filter(
        status__in=[NodeStatus.PROVISIONING, NodeStatus.VALIDATING]
    ).exists()
    order.refresh_from_db()
    assert order.status == OrderStatus.READY


@pytest.fixture
def image_server(tmp_path):
    """A local HTTP server with a small "ISO": the emulator downloads an inserted image."""
    root = tmp_path / "images"
    root.mkdir()
    (root / "ubuntu.iso").write_bytes(b"\0" * 4096)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def start_bmc(folder: Path, hostnames: list[str]) -> tuple[subprocess.Popen, str]:
    """sushy-emulator --fake with one fake system per hostname (its UUID from the name)."""
    folder.mkdir(parents=True, exist_ok=True)
    systems = [
        {"uuid": str(uuid.uuid5(uuid.NAMESPACE_DNS, h)), "name": h, "power_state": "Off"}
        for h in hostnames
    ]
    config = folder / "emulator.conf"
    config.write_text(
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(folder / 'state')!r}\n"
        f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
    )
    port = redfish_tests.free_port()
    log = (folder / "emulator.log").open("w")
    proc = subprocess.Popen(
        [redfish_tests.emulator_binary(), "--fake", "-i", "127.0.0.1", "-p", str(port),
         "--config", str(config)],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/redfish/v1/", timeout=1) as rsp:  # noqa: S310
                return rsp.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return proc.poll() is not None  # died: stop waiting, the assert below says so

    wait_until(answers, timeout=20, message="sushy-emulator to answer")
    assert proc.poll() is None, (folder / "emulator.log").read_text()[-3000:]
    return proc, url


def test_a_node_missing_from_its_bmc_fails_with_the_reason_and_a_spare_is_swapped_in(
    demo, settings, tmp_path, image_server
):
    """Redfish against sushy-emulator: every H100 at SZ is driven through the emulator,
    whose fake systems lack one of the order's nodes."""
    settings.CELERY_BROKER_URL = broker = scratch_broker_url()
    order, booked = paid_order(demo, nodes=2)
    victim = booked[0]
    fleet = list(Node.objects.filter(site=demo["sz"], node_type=demo["h100"]))
    present = [n.hostname for n in fleet if n.pk != victim.pk]
    emulator, url = start_bmc(tmp_path / "bmc", present)
    for node in fleet:
        Node.objects.filter(pk=node.pk).update(
            driver="redfish",
            bmc_address=url,
            bmc_system_id=str(uuid.uuid5(uuid.NAMESPACE_DNS, node.hostname)),
        )
    ImageProfile.objects.filter(pk=order.image_profile_id).update(
        image_url=f"{image_server}/ubuntu.iso"
    )
    env = worker_env(
        tmp_path,
        PORTAL_REDFISH_IN_BAND="simulated",
        PORTAL_REDFISH_POLL_S="0.5",
        PORTAL_REDFISH_POWER_TIMEOUT_S="30",
    )
    worker = Worker(broker, env=env, threads=4)
    try:
        run = finished_run(order)
    finally:
        log = worker.stop()
        redfish_tests.stop(emulator)
    assert run.status == RunStatus.DELIVERED, (run.message, log[-4000:])
    assert run.driver == "redfish"
    victim.refresh_from_db()
    assert victim.status == NodeStatus.FAULTY
    failed = NodeStep.objects.get(run=run, node=victim, status=StepStatus.FAILED)
    # The first step that talks to the BMC says what is wrong, in words.
    assert failed.name == StepName.POWER_OFF
    assert "has no system" in failed.message and "BMC system id" in failed.message
    swap = NodeSwap.objects.get(order=order)
    assert swap.failed_node == victim and "has no system" in swap.reason
    assert swap.spare_node is not None and swap.spare_node.hostname in present
    active = [rn.node for rn in RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE)]
    assert sorted(n.pk for n in active) == sorted([booked[1].pk, swap.spare_node.pk])
    assert {n.status for n in active} == {NodeStatus.IN_SERVICE}
    done_once(run)
    order.refresh_from_db()
    assert order.status == OrderStatus.READY
