"""One run on the test network: the cluster up, journeys and visitors against the load
balancer, and, in turn while they go on: a worker host killed in the middle of a
provisioning run, a web host restarted, a second beat started, the cache's Redis stopped
and started. Then the checks (checks.py). Used by tests/integration/test_multihost.py
(bounded) and bench/multihost.py (full)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from tests.integration.multihost import checks
from tests.integration.multihost.cluster import Abort, Cluster, wait_for
from tests.integration.multihost.driver import Driver

_SLOT_RECEIVED = re.compile(
    r"Task provisioning\.tasks\.provisioning_slot_advance\[([0-9a-f-]+)\] received"
)
_VALIDATE_RECEIVED = re.compile(
    r"Task provisioning\.tasks\.provisioning_validate\[([0-9a-f-]+)\] received"
)
_ENDED = re.compile(r"Task [\w.]+\[([0-9a-f-]+)\] (?:succeeded|retry|raised|failed)")


@dataclass
class Plan:
    journeys: int = 3
    visitors: int = 2
    concurrency: int = 3
    nodes: Callable[[int], int] = lambda n: 1 + n % 2
    cache_outage_s: float = 4.0
    # Beat's runs are checked over at least this many intervals of its most frequent job
    # after the second beat was started.
    beat_intervals_after_second: int = 8
    delivered_timeout: float = 300.0
    documents_timeout: float = 120.0
    phase_timeout: float = 240.0


def _open_tasks(log: str, received: re.Pattern[str]) -> set[str]:
    """Tasks a worker received and has not finished (its log)."""
    return set(received.findall(log)) - set(_ENDED.findall(log))


def _steps_running(database_url: str) -> int:
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM provisioning_nodestep s"
            " JOIN provisioning_provisioningrun r ON r.id = s.run_id"
            " WHERE s.status = 'running' AND r.status = 'running' AND r.kind = 'provision'"
        ).fetchone()
    return int(row[0]) if row else 0


def run(cluster: Cluster, plan: Plan, say: Callable[[str], None] = print) -> dict[str, Any]:
    """The whole run; returns the figures and ``problems`` (empty when nothing was lost)."""
    t0 = time.monotonic()
    ops = cluster.start()
    say(f"cluster up in {time.monotonic() - t0:.0f} s on {cluster.net.subnet}")
    keys = [k["key"] for k in ops["keys"]]
    organisations = [k["organisation_id"] for k in ops["keys"][: plan.journeys]]
    driver = Driver(
        cluster.addr("lb"),
        keys[: plan.journeys],
        keys[plan.journeys :],
        statement=cluster.statement,
        nodes=plan.nodes,
        concurrency=plan.concurrency,
        delivered_timeout=plan.delivered_timeout,
    ).start()
    load_from = time.time()
    events: dict[str, Any] = {}
    timeout = plan.phase_timeout

    # 1. A worker host dies while it runs a provisioning run's steps.
    def victim() -> str | None:
        if driver.journeys_done():
            raise Abort(f"the journeys ended before any run was killed:\n{_journeys(driver)}")
        for host in ("work1", "work2"):
            log = cluster.procs[host].output()
            # In a run's steps (their leases are short on simulated hardware), not in a
            # validation (its lease is the real one: half an hour).
            if (
                _open_tasks(log, _SLOT_RECEIVED)
                and not _open_tasks(log, _VALIDATE_RECEIVED)
                and _steps_running(cluster.database_url)
            ):
                return host
        return None

    host = wait_for(
        "a worker host in the middle of a provisioning run",
        victim,
        timeout,
        interval=0.2,
        detail=lambda: _journeys(driver),
    )
    cluster.hosts[host].power_off()
    events["worker_killed"] = host
    say(f"{host} killed in the middle of a provisioning run")

    # 2. A web host restarted (a deploy): stopped gracefully, started again.
    cluster.stop_web("web1")
    cluster.start_web("web1")
    cluster.web_ready("web1", timeout)
    events["web_restarted"] = "web1"
    say("web1 restarted")

    # 3. A second beat started by mistake (and left running).
    cluster.start_beat("beat2")
    wait_for(
        "the second beat",
        lambda: "beat: Starting" in cluster.procs["beat2"].output(),
        timeout,
        detail=lambda: cluster.procs["beat2"].output()[-3000:],
    )
    second_beat_from = time.time()
    say("a second beat started")

    # 4. The cache's Redis stopped, and started again.
    cluster.stop_redis("cache")
    time.sleep(plan.cache_outage_s)
    cluster.start_redis("cache")
    say(f"the cache's Redis was down for {plan.cache_outage_s:g} s")

    wait_for(
        "every journey to finish",
        driver.journeys_done,
        plan.delivered_timeout,
        interval=1,
        detail=lambda: _journeys(driver),
    )
    fastest = min(float(ops["schedule"][name]["every"]) for name in checks.BEAT_ONLY)
    settle = second_beat_from + plan.beat_intervals_after_second * fastest - time.time()
    if settle > 0:
        time.sleep(settle)
    driver.stop(30)
    until = time.time()
    load_s = until - load_from
    cluster.check_alive("beat", "work2" if host == "work1" else "work1", "lb", "db")

    # Documents are rendered after the fact (the documents queue; the acceptance report
    # after delivery): given a while to arrive before they count as missing.
    deadline = time.monotonic() + plan.documents_timeout
    while (
        time.monotonic() < deadline
        and checks.documents(
            cluster.database_url, [j.order for j in driver.journeys if j.order], cluster.media
        )["problems"]
    ):
        time.sleep(2)

    samples = list(driver.load.samples)
    journeys = driver.journeys
    delivered = [j.order for j in journeys if j.order]
    worker_logs = [cluster.procs[h].output() for h in ("work1", "work2")]
    results = {
        "orders": checks.orders(cluster.database_url, journeys, organisations),
        "runs": checks.runs(cluster.database_url, delivered),
        "documents": checks.documents(cluster.database_url, delivered, cluster.media),
        "requests": checks.requests(samples, cluster.lb_log()),
        "beat": checks.beat(
            worker_logs,
            ops["schedule"],
            since=load_from,
            second_beat_from=second_beat_from,
            until=until,
            time_zone=ops["time_zone"],
        ),
    }
    problems = [
        f"journey {j.index} ({j.order or 'no order'}): {j.error}" for j in journeys if j.error
    ]
    figures: dict[str, Any] = {
        "journeys": len(journeys),
        "journeys_delivered": sum(1 for j in journeys if j.delivered),
        "events": events,
        "load_s": round(load_s, 1),
    }
    for part in results.values():
        problems += part.pop("problems")
        figures.update(part)
    figures.update(checks.page_ratios(samples))
    figures["problems"] = problems
    return figures


def _journeys(driver: Driver) -> str:
    return "\n".join(
        f"journey {j.index}: order {j.order or '-'} {j.status or ''} {j.error}"
        for j in driver.journeys
    )
