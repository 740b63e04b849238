"""Benchmark of provisioning: paid → delivered through real Celery workers over Redis
against PostgreSQL, with the simulated hardware driver.

(a) Fan-out overhead: zero hardware delay (time scale 0), validation accepting at once,
    orders of 8, 64 and 256 nodes, one after the other, on one ``celery worker`` with 2
    prefork processes serving the provisioning and validation queues (the payment's
    invoice PDF and emails go to a second, one-process worker on the same machine, as in
    a deployment with a dedicated provisioning worker; ``--shared-worker``: all on one).
    Prints each time (order marked paid → run delivered) and ``ratio_64_to_8`` (goal ≤ 2);
    then 64 nodes again on one worker process: ``parallel_speedup_64``, what the second
    process gains (``--skip-parallel``: not run). Before each order the workers settle
    (idle), so what a delivered run leaves behind does not run into the next one's time.
(b) Realistic step times (``SimulatedTimings``' defaults: POST 3 min, OS install 15 min,
    ...) for 16 H100 nodes under a time scale (default 0.01: a simulated minute in 0.6 s),
    on a worker with one thread per node (the hardware waits of real BMCs overlap). Prints
    ``simulated_minutes_16`` (wall time / scale, goal ≤ 45) and ``overhead_share``: the
    portal's own time (real seconds: wall minus the longest node's hardware time as
    replayed, validation included) over the simulated hardware time (the same hardware
    time in simulated seconds), goal ≤ 1 %: what the portal adds to a real provisioning.
    ``overhead_share_of_replay`` divides by the replayed hardware time instead (as if the
    portal's own time were compressed by the scale too: stricter by 1/scale).
    Both parts also print the CPU time of the worker processes (``worker_cpu_*``), which
    other load on the machine does not inflate the way it does wall times.

**Benchmark only, not the product's behaviour**: the workers run with cluster validation
replaced by a stand-in that accepts every node (after ``--validation-s`` simulated seconds
in (b), none in (a)), because the point is the portal's overhead, not the validation
suite's CPU run (``tests/integration/test_validation_worker.py`` covers that).

A dedicated PostgreSQL database (``portal_bench_provisioning``, dropped and created; see
``bench/_common.py``) and a Redis database (``--broker``, default: the database after
``REDIS_URL``'s + 3, **emptied first**) are used. Extra H100 nodes are added to the demo
data so that every order finds free nodes.

Usage, from the repository root::

    .venv/bin/python bench/provisioning.py                # 8, 64, 256 nodes; 16 realistic
    .venv/bin/python bench/provisioning.py --sizes 8,64   # quicker
    .venv/bin/python bench/provisioning.py --scale 0.005

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

if __package__ in {None, ""}:  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    ROOT,
    bench_database_url_for,
    drop_database,
    recreate_database,
    setup_django,
    stopwatch,
)

if TYPE_CHECKING:
    from billing.models import Order
    from billing.orders import acceptance
    from provisioning.models import ProvisioningRun

GOAL_RATIO = 2.0
GOAL_SIMULATED_MINUTES = 45.0
GOAL_OVERHEAD_SHARE = 0.01
SIMULATED_LINE = re.compile(r"^\S+: ([0-9.e+-]+) s \(simulated\)", re.MULTILINE)


# --- the worker (a child process of this script) ---------------------------------------


def worker_main(validation_s: float, scale: float, celery_argv: list[str]) -> None:
    """A Celery worker whose cluster validation is the benchmark's stand-in."""
    import django

    django.setup()
    from provisioning.validation import interface

    def accept_all(  # BENCHMARK STAND-IN: no validation suite runs
        targets: list[interface.NodeTarget], **kwargs: object
    ) -> interface.ValidationOutcome:
        time.sleep(validation_s * scale)
        return interface.ValidationOutcome(
            [
                interface.NodeResult(t.node_id, t.hostname, True, [], {"bench": True})
                for t in targets
            ],
            True,
        )

    interface.validate_nodes = accept_all
    from portal.celery import app

    app.worker_main(["worker", *celery_argv])


class Workers:
    def __init__(
        self,
        env: dict[str, str],
        *,
        pool: str,
        concurrency: int,
        validation_s: float,
        queues: tuple[str, ...],
        name: str = "provisioning",
    ) -> None:
        scale = env["PORTAL_SIMULATED_TIME_SCALE"]
        args = [
            sys.executable, __file__, "--worker", str(validation_s), scale, "--",
            "-Q", ",".join(queues), "-P", pool, "-c", str(concurrency),
            "-n", f"bench-{os.getpid()}-{name}-{pool}@%h", "--loglevel=WARNING",
            "--without-mingle", "--without-gossip", "--without-heartbeat",
        ]  # fmt: skip
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self.log, stderr=self.log)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) of the worker and its pool processes so far: what the
        portal's own work costs, whatever else the machine is doing meanwhile."""
        return tree_cpu_seconds(self.proc.pid)

    def stop(self) -> str:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.seek(0)
        return self.log.read()


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its descendants, from /proc (Linux)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(cpu.get(p, 0.0) for p in tree)


def settle(*group: Workers | None, quiet_s: float = 0.5, timeout: float = 60.0) -> None:
    """Wait until the workers are idle (no CPU time used for ``quiet_s``): what a delivered
    run leaves behind (its acceptance report, emails) must not run into the next order's
    time."""
    workers = [w for w in group if w is not None]
    deadline = time.perf_counter() + timeout
    last = sum(w.cpu_seconds() for w in workers)
    while time.perf_counter() < deadline:
        time.sleep(quiet_s)
        now = sum(w.cpu_seconds() for w in workers)
        if now - last < 0.02:
            return
        last = now


# --- data -------------------------------------------------------------------------------


def add_nodes(count: int) -> None:
    """``count`` more available H100 nodes at SZ, spread over the demo's leaves and racks."""
    from inventory.models import Node, NodeStatus
    from tests import factories

    demo = factories.demo_objects()
    models = list(Node.objects.filter(site=demo["sz"], node_type=demo["h100"]))
    Node.objects.bulk_create(
        [
            Node(
                site=demo["sz"],
                node_type=demo["h100"],
                hostname=f"bench-h100-{i:04d}",
                serial=f"BENCH-{i:06d}",
                rack_id=models[i % len(models)].rack_id,
                leaf_switch_id=models[i % len(models)].leaf_switch_id,
                status=NodeStatus.AVAILABLE,
            )
            for i in range(count)
        ]
    )


def paid_order(nodes: int) -> Order:
    """A signed sales quote's order for ``nodes`` H100 nodes, marked paid (the gate opens:
    provisioning_start is published after commit). Returns the order."""
    from django.utils import timezone

    from billing.quotes import services as qs
    from tests import factories

    demo = factories.demo_objects()
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(nodes), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    quote = qs.quote_send(quote=quote, actor=demo["sales"])
    order = acceptance.quote_accept(
        quote=quote, user=demo["customer"], name="Li Wei", ip="203.0.113.9"
    )
    factories.contract_signed_shortcut(order)
    return order


def provision(nodes: int, *, timeout: float) -> tuple[float, ProvisioningRun]:
    """Seconds from marking an order of ``nodes`` paid to its run delivered."""
    from billing.orders.services import order_mark_paid
    from inventory.models import Site
    from provisioning.models import ProvisioningRun, RunStatus

    order = paid_order(nodes)
    # Provisioning begins at the rental's start (a week ahead) minus the site's lead time:
    # the site needs 8 days for this payment, so that time has come when it is paid (the
    # quote was accepted under the usual 24 h, which a bank transfer a week ahead allows).
    lead = Site.objects.filter(pk=order.site_id).values_list("lead_time_hours", flat=True)[0]
    Site.objects.filter(pk=order.site_id).update(lead_time_hours=8 * 24)
    t0 = time.perf_counter()
    order_mark_paid(order=order)
    Site.objects.filter(pk=order.site_id).update(lead_time_hours=lead)
    deadline = t0 + timeout
    while time.perf_counter() < deadline:
        run = ProvisioningRun.objects.filter(
            order=order, status__in=[RunStatus.DELIVERED, RunStatus.FAILED]
        ).first()
        if run is not None:
            elapsed = time.perf_counter() - t0
            if run.status != RunStatus.DELIVERED:
                raise SystemExit(f"run of {nodes} nodes failed: {run.message}")
            return elapsed, run
        time.sleep(0.02)
    raise SystemExit(f"run of {nodes} nodes not delivered within {timeout} s")


def hardware_seconds(run: ProvisioningRun) -> float:
    """The longest node's simulated hardware time (its steps' simulated seconds)."""
    from provisioning.models import NodeStep

    per_node: dict[int, float] = {}
    for node_id, log in NodeStep.objects.filter(run=run).values_list("node_id", "log_excerpt"):
        per_node[node_id] = per_node.get(node_id, 0.0) + sum(
            float(s) for s in SIMULATED_LINE.findall(log or "")
        )
    return max(per_node.values())


# --- main -------------------------------------------------------------------------------


def default_broker() -> str:
    parts = urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    db = (int(parts.path.lstrip("/") or 0) + 3) % 16
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", "", ""))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        worker_main(float(argv[1]), float(argv[2]), argv[4:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="8,64,256", help="node counts of part (a)")
    parser.add_argument("--processes", type=int, default=2, help="worker processes of (a)")
    parser.add_argument("--realistic-nodes", type=int, default=16)
    parser.add_argument("--scale", type=float, default=0.01, help="time scale of part (b)")
    parser.add_argument(
        "--validation-s", type=float, default=120.0, help="simulated validation time in (b)"
    )
    parser.add_argument(
        "--skip-parallel", action="store_true", help="no 64-node run on one process"
    )
    parser.add_argument("--broker", default=None, help="Redis URL (emptied first)")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument(
        "--shared-worker",
        action="store_true",
        help="one worker for every queue (documents and billing too), as before",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]

    url = bench_database_url_for("provisioning")
    broker = args.broker or default_broker()
    tmp = Path(tempfile.mkdtemp(prefix="bench-provisioning-"))
    base_env = {
        "DJANGO_SETTINGS_MODULE": "portal.settings.test",
        "DATABASE_URL": url,
        "REDIS_URL": broker,
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": broker,
        "PORTAL_VAR_DIR": str(tmp / "var"),
        "DJANGO_MEDIA_ROOT": str(tmp / "media"),
        "DJANGO_LOG_LEVEL": "WARNING",
        "PORTAL_HARDWARE_DRIVER": "simulated",
        "PORTAL_SIMULATED_FAILURE_RATE": "0",
        "PORTAL_OUTBOX_RELAY_EVERY": "1",
    }
    os.environ.update(base_env)
    import redis

    redis.Redis.from_url(broker).flushdb()
    recreate_database(url)
    timings: dict[str, float] = {}
    result: dict[str, object] = {}
    try:
        setup_django(url)
        from django.core.management import call_command

        with stopwatch("migrate and seed", timings):
            call_command("migrate", verbosity=0)
            call_command("seed_demo", stdout=io.StringIO())
            add_nodes(sum(sizes) + args.realistic_nodes + 16)

        # The provisioning worker serves the provisioning and validation queues, as the
        # deployment's dedicated worker does (core/queues.py); the payment's invoice PDF
        # and emails go to a second worker (one process) on the same machine, so they
        # still take CPU but not a provisioning worker's slot or, in (b), its GIL.
        # --shared-worker: everything on the provisioning worker (the earlier layout).
        from core import queues

        if args.shared_worker:
            own_queues = queues.ALL
        else:
            queue = queues.CeleryQueue
            own_queues = (queue.PROVISIONING, queue.VALIDATION)
        other_queues = tuple(q for q in queues.ALL if q not in own_queues)

        def start_side_worker(env: dict[str, str]) -> Workers | None:
            if not other_queues:
                return None
            return Workers(
                env, pool="prefork", concurrency=1, validation_s=0, queues=other_queues,
                name="other",
            )  # fmt: skip

        def stop_workers(*group: Workers | None) -> None:
            for w in group:
                if w is not None:
                    log = w.stop()
                    if "Traceback" in log:
                        print(log[-3000:], file=sys.stderr)

        result["shared_worker"] = bool(args.shared_worker)

        # (a) zero delay, 2 processes
        env = {**os.environ, **base_env, "PORTAL_PROVISIONING_AUTOSTART": "1"}
        env["PORTAL_SIMULATED_TIME_SCALE"] = "0"
        print(
            f"(a) zero delay, validation stand-in accepting at once, "
            f"{args.processes} worker processes (prefork)",
            flush=True,
        )
        workers = Workers(
            env, pool="prefork", concurrency=args.processes, validation_s=0, queues=own_queues
        )
        side = start_side_worker(env)
        try:
            warm, _ = provision(2, timeout=180)  # the workers up, imports warm
            print(f"  warm-up, 2 nodes: {warm:.2f} s", flush=True)
            seconds: dict[int, float] = {}
            cpu: dict[int, float] = {}
            side_cpu: dict[int, float] = {}
            for n in sizes:
                settle(workers, side)  # the last order's report and emails are done
                before = workers.cpu_seconds()
                side_before = side.cpu_seconds() if side else 0.0
                seconds[n], _ = provision(n, timeout=600)
                cpu[n] = workers.cpu_seconds() - before
                side_cpu[n] = (side.cpu_seconds() - side_before) if side else 0.0
                print(
                    f"  {n} nodes: {seconds[n]:.2f} s ({seconds[n] / n * 1000:.1f} ms a node); "
                    f"provisioning worker CPU {cpu[n]:.2f} s ({cpu[n] / n * 1000:.1f} ms a "
                    f"node); other queues' worker CPU {side_cpu[n]:.2f} s",
                    flush=True,
                )
        finally:
            stop_workers(workers, side)
        for n, s in seconds.items():
            result[f"seconds_{n}"] = round(s, 3)
            result[f"worker_cpu_ms_per_node_{n}"] = round(cpu[n] / n * 1000, 1)
            result[f"other_worker_cpu_s_{n}"] = round(side_cpu[n], 2)
        if 8 in seconds and 64 in seconds:
            result["ratio_64_to_8"] = round(seconds[64] / seconds[8], 2)
        # The fan-out is parallel: the same order size on one worker process takes about
        # twice as long as on two (the work of each node's chain is spread over both).
        if 64 in seconds and args.processes > 1 and not args.skip_parallel:
            workers = Workers(env, pool="prefork", concurrency=1, validation_s=0, queues=own_queues)
            side = start_side_worker(env)
            try:
                provision(2, timeout=180)
                settle(workers, side)
                one, _ = provision(64, timeout=600)
            finally:
                stop_workers(workers, side)
            result["seconds_64_one_process"] = round(one, 3)
            result["parallel_speedup_64"] = round(one / seconds[64], 2)
            print(
                f"  64 nodes on 1 worker process: {one:.2f} s; "
                f"{args.processes} processes are {one / seconds[64]:.2f} times as fast",
                flush=True,
            )

        # (b) realistic step times under the time scale, a thread per node
        env["PORTAL_SIMULATED_TIME_SCALE"] = repr(args.scale)
        n = args.realistic_nodes
        print(
            f"(b) {n} H100 nodes, realistic step times at time scale {args.scale:g}, "
            f"{n} worker threads, validation stand-in {args.validation_s:g} simulated s",
            flush=True,
        )
        workers = Workers(
            env,
            pool="threads",
            concurrency=n,
            validation_s=args.validation_s,
            queues=own_queues,
        )
        side = start_side_worker(env)
        try:
            provision(1, timeout=300)  # warm-up
            settle(workers, side)
            before = workers.cpu_seconds()
            wall, run = provision(n, timeout=600)
            cpu_b = workers.cpu_seconds() - before
        finally:
            stop_workers(workers, side)
        # The hardware's time in simulated seconds, and as replayed (times the scale).
        hardware_sim = hardware_seconds(run) + args.validation_s
        hardware = hardware_sim * args.scale
        # The portal's own time: real seconds from paid to delivered that the (replayed)
        # hardware did not take. It is not compressed by the time scale.
        overhead = max(wall - hardware, 0.0)
        result["simulated_minutes_16" if n == 16 else f"simulated_minutes_{n}"] = round(
            wall / args.scale / 60, 1
        )
        result["hardware_minutes"] = round(hardware_sim / 60, 1)
        result["overhead_s"] = round(overhead, 3)
        # The definition: the portal's own time over the simulated hardware time
        # (what the portal adds to a real provisioning of these nodes).
        result["overhead_share"] = round(overhead / hardware_sim, 4)
        # Stricter: over the replayed (scaled) hardware time, i.e. as if the portal's own
        # time were also compressed by the scale (how much it slows the replay).
        result["overhead_share_of_replay"] = round(overhead / hardware, 4)
        result["worker_cpu_s_16" if n == 16 else f"worker_cpu_s_{n}"] = round(cpu_b, 2)
        print(
            f"  wall {wall:.2f} s = {wall / args.scale / 60:.1f} simulated min; "
            f"hardware {hardware_sim / 60:.1f} simulated min = {hardware:.2f} s replayed; "
            f"portal overhead {overhead:.2f} s = {overhead / hardware_sim:.2%} of the "
            f"simulated hardware time ({overhead / hardware:.1%} of the replay); "
            f"worker CPU {cpu_b:.2f} s",
            flush=True,
        )
        result["scale"] = args.scale
        result["processes"] = args.processes
        from django.conf import settings

        result["conn_max_age"] = settings.DATABASES["default"]["CONN_MAX_AGE"]
        result["goals"] = {
            "ratio_64_to_8": GOAL_RATIO,
            "simulated_minutes_16": GOAL_SIMULATED_MINUTES,
            "overhead_share": GOAL_OVERHEAD_SHARE,
        }
        for key, goal in result["goals"].items():
            if key in result:
                verdict = "ok" if result[key] <= goal else "MISSED"
                print(f"  {key} = {result[key]} (goal <= {goal}): {verdict}", flush=True)
        result["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(url)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
