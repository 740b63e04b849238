"""Benchmark of the reservation calendar's selector (issue 22).

Builds two fleets in a throw-away database (``portal_bench_operations``) with
``tests.factories.operations_fleet`` (bulk_create: per node an ended booking, a firm one
with its cleaning, a hold expiring within a day; every 25th node a maintenance window,
every 40th faulty): 200 nodes at one site and 2,000 at another. Then:

- ``queries_200`` / ``queries_2000``: the queries ``portal.operations.calendar.
  calendar_window`` makes for all the nodes of each site over 90 days (they must be
  equal: the count does not grow with the nodes shown);
- ``selector_ms_p50``: its time for 2,000 nodes × 90 days (every row and bar built);
- ``count_ms_p50``: a plain ``COUNT(*)`` of the same reservations (the 2,000 nodes'
  bookings that meet the 90 days), timed alternately with it in the same run;
- ``selector_over_count``: the ratio of the two medians (the floor is the database's own
  cost of finding those rows).

Usage, from the repository root::

    .venv/bin/python bench/operations.py            # a minute or two
    .venv/bin/python bench/operations.py --runs 5 --keep

The last line printed is one JSON object (see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in {None, ""}:  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    bench_database,
    bench_database_url_for,
    median,
    stopwatch,
    summary,
    vacuum_analyze,
)

DAYS = 90


def measure(*, small: int, large: int, runs: int, warmup: int) -> dict[str, Any]:
    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from inventory.models import Reservation
    from portal.operations.calendar import calendar_window
    from portal.operations.selectors import SHOWN_RESERVATION_STATUSES
    from tests.factories import operations_fleet

    start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    end = start + timedelta(days=DAYS)
    timings: dict[str, float] = {}
    with stopwatch("build", timings):
        few = operations_fleet(small, start=start, prefix="bsmall", site_code="BS")
        many = operations_fleet(large, start=start, prefix="blarge", site_code="BL")
    vacuum_analyze("inventory_node", "inventory_reservation", "inventory_maintenancewindow")
    small_site, large_site = few[0].site_id, many[0].site_id

    def calendar(site_id: int) -> Any:
        return calendar_window(start=start, end=end, site_id=site_id)

    counted: list[int] = []
    with CaptureQueriesContext(connection) as ctx:
        calendar(small_site)
    queries_small = len(ctx.captured_queries)
    with CaptureQueriesContext(connection) as ctx:
        cal = calendar(large_site)
    queries_large = len(ctx.captured_queries)
    rows, bars = len(cal.rows), sum(len(r.bars) for r in cal.rows)

    def count() -> int:
        return Reservation.objects.filter(
            node__site_id=large_site,
            status__in=SHOWN_RESERVATION_STATUSES,
            held_from__lt=end,
            held_until__gt=start,
        ).count()

    for _ in range(warmup):
        calendar(large_site)
        counted.append(count())
    selector_ms: list[float] = []
    count_ms: list[float] = []
    for _ in range(runs):  # alternated, so drift on the machine hits both alike
        t0 = time.perf_counter_ns()
        calendar(large_site)
        selector_ms.append((time.perf_counter_ns() - t0) / 1e6)
        t0 = time.perf_counter_ns()
        counted.append(count())
        count_ms.append((time.perf_counter_ns() - t0) / 1e6)
    print(f"  calendar_window, {large:,} nodes × {DAYS} days: {summary(selector_ms)}")
    print(f"  COUNT(*) of the same reservations: {summary(count_ms)}")
    return {
        "queries_200": queries_small,
        "queries_2000": queries_large,
        "queries_equal": queries_small == queries_large,
        "nodes_small": small,
        "nodes_large": large,
        "days": DAYS,
        "rows": rows,
        "bars": bars,
        "reservations_counted": counted[-1],
        "selector_ms_p50": round(median(selector_ms), 2),
        "count_ms_p50": round(median(count_ms), 3),
        "selector_over_count": round(median(selector_ms) / median(count_ms), 1),
        "build_s": round(timings["build"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=200, help="nodes of the small site")
    parser.add_argument("--large", type=int, default=2000, help="nodes of the large site")
    parser.add_argument("--runs", type=int, default=10, help="timed calls of each")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
    started = time.perf_counter()
    out: dict[str, Any] = {}
    with bench_database(bench_database_url_for("operations"), keep=args.keep):
        print(f"[calendar] {args.small:,} and {args.large:,} nodes × {DAYS} days", flush=True)
        out.update(measure(small=args.small, large=args.large, runs=args.runs, warmup=args.warmup))
    out["total_s"] = round(time.perf_counter() - started, 1)
    out["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    out["goal_met"] = out["queries_equal"]
    print("goals:")
    print(
        f"  queries at {args.small} and {args.large} nodes equal: "
        f"{out['queries_200']} and {out['queries_2000']} {'ok' if out['goal_met'] else 'MISSED'}"
    )
    print(json.dumps(out))
    return 0 if out["goal_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
