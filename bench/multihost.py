"""Benchmark of the portal on a multi-host test network, under failures (issue 23).

Builds the hosts of tests/integration/multihost (PostgreSQL, the broker's and the cache's
Redis, HAProxy, two gunicorn web hosts, two Celery worker hosts, beat, the back office),
each in its own network namespace on a private bridge, and drives customer journeys and
visitors against the load balancer while, in turn, a worker host is killed in the middle
of a provisioning run, a web host is restarted, a second beat is started and the cache's
Redis is stopped and started. Then it checks that nothing was lost (orders, runs, steps,
documents, beat's jobs) and counts the requests that failed (only those the load
balancer could not retry may).

Needs root (``ip netns``), HAProxy, PostgreSQL 15's binaries and redis-server (``make
setup`` installs them). The namespaces and processes are removed at the end, also after
an error or Ctrl-C.

Usage, from the repository root::

    .venv/bin/python bench/multihost.py                      # 12 journeys (~5-10 min)
    .venv/bin/python bench/multihost.py --journeys 4 --schema-from postgres://.../migrated

``--schema-from`` copies the schema of an already migrated database (seconds) instead of
running ``migrate`` on the database host (minutes). The last line printed is one JSON
object: the counts, and the p50/p99 of each page as a ratio to ``/healthz`` (the trivial
view) served by the same stack in the same run (see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in {None, ""}:  # run as a script: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.integration.multihost import scenario
from tests.integration.multihost.cluster import Cluster
from tests.integration.multihost.network import Network, require_netns


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--journeys", type=int, default=12)
    parser.add_argument("--visitors", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--cache-outage", type=float, default=10.0)
    parser.add_argument("--schema-from", default=None)
    parser.add_argument("--keep-logs", type=Path, default=None)
    args = parser.parse_args()
    require_netns()
    plan = scenario.Plan(
        journeys=args.journeys,
        visitors=args.visitors,
        concurrency=args.concurrency,
        cache_outage_s=args.cache_outage,
        # One H100 node each: Shenzhen's free H100s over the demo's start (about 16) hold
        # 12 journeys of one node, not of one or two.
        nodes=lambda _n: 1,
        delivered_timeout=900.0,
        phase_timeout=600.0,
    )
    network = Network().up()
    keep = args.keep_logs or Path(tempfile.gettempdir()) / f"multihost-bench-{network.tag}"
    t0 = time.monotonic()
    try:
        cluster = Cluster(
            network,
            keys=plan.journeys + plan.visitors,
            schema_from=args.schema_from,
            startup_timeout=900.0,
        )
        figures = scenario.run(cluster, plan, say=lambda m: print(f"  {m}", flush=True))
    finally:
        network.down(keep_logs=keep)
    figures["wall_s"] = round(time.monotonic() - t0, 1)
    figures["logs"] = str(keep)
    for problem in figures["problems"]:
        print(f"  PROBLEM: {problem}", flush=True)
    for page, row in figures["pages"].items():
        print(
            f"  {page:14} n={row['n']:4}  p50 {row['p50_ms']:8.1f} ms ({row['p50_ratio']:6.2f}x)"
            f"  p99 {row['p99_ms']:8.1f} ms ({row['p99_ratio']:6.2f}x)"
        )
    print(json.dumps(figures, sort_keys=True))
    return 1 if figures["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
