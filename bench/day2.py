"""Benchmark of day two: fault to spare handed over, on real components.

A web server (the portal's telemetry endpoints: service discovery and the simulated
exporters), Debian's Prometheus scraping them every ``--scrape`` seconds, a Celery worker
over Redis against PostgreSQL running the health evaluation (enqueued every
``--evaluate`` seconds, as beat does), the replacement runs and the quick validation
(the real agent, CPU path), with the simulated driver's realistic step times replayed at
``--scale``.

1. A delivered order of ``--nodes`` H100 nodes; ``--trials`` times an XID 79 on one of its
   serving nodes: ``detection_s`` (fault in the exporter → incident opened, real seconds)
   and ``replacement_minutes`` (fault → spare handed over on the simulated clock: real
   time with each hardware step's replayed time replaced by the hardware time it stands
   for; detection, queueing, validation and hand-over as they ran). p95 of each; goals:
   detection ≤ 60 s, replacement ≤ 10 min.
   Then ``--pairs`` times two faults at once: XID 79 on one serving node and
   ``--pair-gap`` seconds later on another of the same order; both replaced in parallel
   (``pair_replacement_minutes``, each on the simulated clock; goal: each ≤ 10 min) and
   ``pairs_overlapped``: how many pairs had the second replacement run started before
   the first was handed over (goal: every pair).
2. ``false_replacements_24h``: the noise of a simulated day replayed on every serving
   node (one correctable ECC error, one missed scrape, a 30-second utilisation dip) under
   ``--noise-evaluations`` evaluations: replacements opened (goal 0). The day itself is not
   waited for: the rules look at windows of minutes, and the noise of a day is these events.
3. ``portal_cpu_ms_per_1k_samples``: the worker's CPU time spent evaluating the rules
   (user + system, /proc) per thousand samples Prometheus scraped meanwhile, over
   ``--cpu-window`` seconds (what a deployment pays: real nodes serve their own exporters);
   ``floor_cpu_ms_per_1k_samples``: the floor measured in the same run, the same rules'
   PromQL asked as many times by a bare standard-library loop (urllib and json: no
   Django, no database), and ``cpu_ratio`` = portal / floor (what the portal's own
   bookkeeping costs over the queries any evaluator must make);
   ``simulated_exporter_cpu_ms_per_1k_samples``: the web server's CPU for serving the
   simulated exporters (only simulated nodes cost this).

A dedicated PostgreSQL database (``portal_bench_day2``, dropped and created) and a Redis
database (the one after ``REDIS_URL``'s + 3, emptied first). Usage::

    .venv/bin/python bench/day2.py                 # 4 nodes, 5 trials, scrape 5 s
    .venv/bin/python bench/day2.py --trials 3 --scrape 15 --evaluate 15

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import timedelta
from pathlib import Path

if __package__ in {None, ""}:  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, percentile, recreate_database, setup_django
from bench.provisioning import (
    add_nodes,
    bench_database_url_for,
    default_broker,
    provision,
    tree_cpu_seconds,
)

TOKEN = "bench-day2-token"  # noqa: S105 (a throw-away local token)
GOAL_DETECTION_S = 60.0
GOAL_REPLACEMENT_MIN = 10.0


def floor_cpu_seconds(prom_url: str, evaluations: int, scrape_s: float) -> float:
    """CPU seconds of asking every health rule's PromQL ``evaluations`` times with the
    standard library alone: what any evaluator must pay, whatever it is written in."""
    from provisioning.health.rules import RULES

    queries = [
        prom_url
        + "/api/v1/query?"
        + urllib.parse.urlencode({"query": rule.query(selector='node=~".+"', scrape_s=scrape_s)})
        for rule in RULES
    ]
    t0 = time.process_time()
    for _ in range(evaluations):
        for url in queries:
            with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (local)
                json.loads(response.read())
    return time.process_time() - t0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait(predicate, timeout: float, what: str, interval: float = 0.2):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise SystemExit(f"timed out waiting for {what}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=1, help="two faults at once, times")
    parser.add_argument("--pair-gap", type=float, default=10.0, help="between them (s)")
    parser.add_argument("--scrape", type=float, default=5.0, help="scrape interval (s)")
    parser.add_argument("--evaluate", type=float, default=5.0, help="evaluation interval (s)")
    parser.add_argument("--scale", type=float, default=0.01, help="simulated time scale")
    parser.add_argument("--noise-evaluations", type=int, default=12)
    parser.add_argument("--cpu-window", type=float, default=30.0)
    args = parser.parse_args(argv)

    url = bench_database_url_for("day2")
    broker = default_broker()
    tmp = Path(tempfile.mkdtemp(prefix="bench-day2-"))
    web_port = free_port()
    prom_port = free_port()
    prom_url = f"http://127.0.0.1:{prom_port}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings.test",
        "DATABASE_URL": url,
        "REDIS_URL": broker,
        "CELERY_BROKER_URL": broker,
        "PORTAL_VAR_DIR": str(tmp / "var"),
        "DJANGO_MEDIA_ROOT": str(tmp / "media"),
        "DJANGO_LOG_LEVEL": "WARNING",
        "PORTAL_HARDWARE_DRIVER": "simulated",
        "PORTAL_SIMULATED_FAILURE_RATE": "0",
        "PORTAL_SIMULATED_TIME_SCALE": str(args.scale),
        "PORTAL_PROVISIONING_AUTOSTART": "1",
        "PORTAL_OUTBOX_RELAY_EVERY": "1",
        "PORTAL_PROMETHEUS_URL": prom_url,
        "PORTAL_PROMETHEUS_SCRAPE_INTERVAL_S": str(args.scrape),
        "PORTAL_TELEMETRY_TOKEN": TOKEN,
        "PORTAL_TELEMETRY_SIMULATED_TARGET": f"127.0.0.1:{web_port}",
    }
    os.environ.update(env)
    import redis

    redis.Redis.from_url(broker).flushdb()
    recreate_database(url)
    setup_django(url)
    from django.core.management import call_command
    from django.db import transaction
    from django.utils import timezone

    import bench.provisioning as bench_provisioning
    from billing.orders import acceptance
    from core import jobs
    from inventory.models import Reservation
    from provisioning.health import selectors as health_selectors
    from provisioning.models import HealthIncident, IncidentStatus, RunNode, RunNodeState
    from provisioning.telemetry import prometheus, simulated

    # bench/provisioning.py names ``acceptance`` only for type checking; its paid_order
    # reads the module global at run time.
    bench_provisioning.acceptance = acceptance  # type: ignore[attr-defined]
    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=io.StringIO())
    add_nodes(args.nodes + args.trials + 2 * args.pairs + 8)

    from core.queues import ALL as QUEUES

    procs: list[subprocess.Popen[bytes]] = []
    web_log, worker_log = open(tmp / "web.log", "wb"), open(tmp / "worker.log", "wb")
    web = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{web_port}"],
        cwd=ROOT, env=env, stdout=web_log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    procs.append(web)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "-Q", ",".join(QUEUES),
         "-P", "threads", "-c", "4", "-n", f"bench-day2-{os.getpid()}@%h",
         "--loglevel=WARNING", "--without-mingle", "--without-gossip", "--without-heartbeat"],
        cwd=ROOT, env=env, stdout=worker_log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    procs.append(worker)
    prom = prometheus.prometheus_start(
        workdir=tmp / "prometheus",
        port=prom_port,
        discovery_url=f"http://127.0.0.1:{web_port}/telemetry/targets?status=in_service",
        token=TOKEN,
        scrape_s=args.scrape,
        retention="1d",
    )
    procs.append(prom)

    def evaluate() -> None:
        with transaction.atomic():
            jobs.enqueue("provisioning.tasks.health_evaluate_task")

    result: dict[str, object] = {
        "nodes": args.nodes,
        "scrape_s": args.scrape,
        "evaluate_s": args.evaluate,
        "scale": args.scale,
    }
    try:
        _elapsed, run = provision(args.nodes, timeout=600)
        order = run.order
        start = timezone.now() - timedelta(hours=1)
        type(order).objects.filter(pk=order.pk).update(start_at=start)
        Reservation.objects.filter(group=order.reservation_group).update(
            start_at=start, held_from=start
        )

        def serving() -> list:
            return list(
                RunNode.objects.filter(run=run, state=RunNodeState.ACTIVE).select_related("node")
            )

        def all_up() -> bool:
            hosts = [rn.node.hostname for rn in serving()]
            try:
                rows = prometheus.query(f"up{{{prometheus.node_selector(hosts)}}} == 1")
            except prometheus.PrometheusUnavailable:
                return False
            return len(rows) == len(hosts)

        wait(all_up, 120, "the order's nodes scraped", interval=1)

        # 1. XID 79 trials.
        detections: list[float] = []
        replacements: list[float] = []
        for trial in range(args.trials):
            victim = serving()[trial % args.nodes].node
            fault = simulated.fault_inject(node=victim, kind="xid", gpu=trial % 8, value=79)

            def opened(victim=victim):  # noqa: ANN001, ANN202
                found = HealthIncident.objects.filter(node=victim, rule="xid_79").first()
                if found is None:
                    evaluate()
                    time.sleep(args.evaluate)
                return found

            incident = wait(opened, 300, f"trial {trial}: detection", interval=0)
            detections.append((incident.detected_at - fault.start_at).total_seconds())
            done = wait(
                lambda pk=incident.pk: HealthIncident.objects.filter(
                    pk=pk, status=IncidentStatus.REPLACED
                ).first(),
                600,
                f"trial {trial}: replacement",
            )
            sim = health_selectors.replacement_simulated_seconds(done, time_scale=args.scale)
            replacements.append((sim or 0.0) / 60)
            print(
                f"trial {trial}: {victim.hostname} detected in {detections[-1]:.1f} s, "
                f"replaced in {replacements[-1]:.2f} simulated min",
                flush=True,
            )
            wait(all_up, 120, "the spare scraped", interval=1)
        result["detection_s_p95"] = round(percentile(detections, 95), 2)
        result["replacement_minutes_p95"] = round(percentile(replacements, 95), 2)
        result["detection_s"] = [round(d, 2) for d in detections]
        result["replacement_minutes"] = [round(r, 2) for r in replacements]

        # 1b. Two faults of the order at once: healed in parallel, each within the budget.
        pair_minutes: list[float] = []
        overlapped = 0
        for pair in range(args.pairs):
            victims = [rn.node for rn in serving()[:2]]
            simulated.fault_inject(node=victims[0], kind="xid", gpu=pair % 8, value=79)
            time.sleep(args.pair_gap)
            simulated.fault_inject(node=victims[1], kind="xid", gpu=pair % 8, value=79)

            def both_opened(victims=victims):  # noqa: ANN001, ANN202
                found = list(HealthIncident.objects.filter(node__in=victims, rule="xid_79"))
                if len(found) < 2:
                    evaluate()
                    time.sleep(args.evaluate)
                    return None
                return sorted(found, key=lambda incident: incident.observed_at)

            pks = [i.pk for i in wait(both_opened, 300, f"pair {pair}: detection", interval=0)]

            def both_done(pks=pks):  # noqa: ANN001, ANN202
                done = list(
                    HealthIncident.objects.filter(pk__in=pks, status=IncidentStatus.REPLACED)
                    .select_related("replacement_run")
                    .order_by("observed_at")
                )
                return done if len(done) == 2 else None

            first, second = wait(both_done, 600, f"pair {pair}: replacements")
            for done in (first, second):
                sim = health_selectors.replacement_simulated_seconds(done, time_scale=args.scale)
                pair_minutes.append((sim or 0.0) / 60)
            runs = (first.replacement_run, second.replacement_run)
            if runs[0] and runs[1] and runs[1].started_at and runs[0].finished_at:
                overlapped += runs[1].started_at < runs[0].finished_at
            print(
                f"pair {pair}: {victims[0].hostname} and {victims[1].hostname} replaced in "
                f"{pair_minutes[-2]:.2f} and {pair_minutes[-1]:.2f} simulated min",
                flush=True,
            )
            wait(all_up, 120, "the spares scraped", interval=1)
        result["pair_replacement_minutes"] = [round(m, 2) for m in pair_minutes]
        result["pairs_overlapped"] = overlapped

        # 2. A day's noise.
        before = HealthIncident.objects.filter(action="replace").count()
        for rn in serving():
            simulated.fault_inject(node=rn.node, kind="ecc_sbe", gpu=0, value=1)
            simulated.fault_inject(node=rn.node, kind="node_silent", seconds=args.scrape)
            simulated.fault_inject(node=rn.node, kind="util_dip", value=0.1, seconds=30)
        for _ in range(args.noise_evaluations):
            evaluate()
            time.sleep(args.evaluate)
        result["false_replacements_24h"] = (
            HealthIncident.objects.filter(action="replace").count() - before
        )

        # 3. CPU per thousand samples, and its floor: the same rules' PromQL asked by a
        # bare loop (urllib and json, no Django, no database) as often, in this process.
        time.sleep(args.scrape * 2)
        worker_cpu0, web_cpu0, t0 = (
            tree_cpu_seconds(worker.pid),
            tree_cpu_seconds(web.pid),
            time.time(),
        )
        evaluations = 0
        deadline = time.monotonic() + args.cpu_window
        while time.monotonic() < deadline:
            evaluate()
            evaluations += 1
            time.sleep(args.evaluate)
        time.sleep(1)
        worker_cpu = tree_cpu_seconds(worker.pid) - worker_cpu0
        web_cpu = tree_cpu_seconds(web.pid) - web_cpu0
        window = int(time.time() - t0)
        floor_cpu = floor_cpu_seconds(prom_url, evaluations, args.scrape)
        samples = prometheus.query(f"sum(sum_over_time(scrape_samples_scraped[{window}s]))")
        scraped = samples[0].value if samples else 0.0
        result["samples_scraped"] = int(scraped)
        result["evaluations"] = evaluations
        if not scraped:
            raise SystemExit("no samples scraped during the CPU window")
        per_1k = 1e6 / scraped  # seconds → milliseconds, per thousand samples
        result["portal_cpu_ms_per_1k_samples"] = round(worker_cpu * per_1k, 3)
        result["floor_cpu_ms_per_1k_samples"] = round(floor_cpu * per_1k, 3)
        result["cpu_ratio"] = round(worker_cpu / floor_cpu, 2) if floor_cpu else None
        result["simulated_exporter_cpu_ms_per_1k_samples"] = round(web_cpu * per_1k, 3)
        result["goals_met"] = {
            "detection_s_p95": result["detection_s_p95"] <= GOAL_DETECTION_S,  # type: ignore[operator]
            "replacement_minutes_p95": result["replacement_minutes_p95"]  # type: ignore[operator]
            <= GOAL_REPLACEMENT_MIN,
            "false_replacements_24h": result["false_replacements_24h"] == 0,
            "pair_replacement_minutes": all(m <= GOAL_REPLACEMENT_MIN for m in pair_minutes),
            "pairs_overlapped": overlapped == args.pairs,
        }
    except BaseException:
        for log in (web_log, worker_log):
            log.flush()
            tail = Path(log.name).read_bytes()[-3000:].decode(errors="replace")
            print(f"--- {Path(log.name).name} (last lines)\n{tail}", file=sys.stderr)
        raise
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
