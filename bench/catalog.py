"""Benchmark of the landing page (the catalog) with a 10,000-node inventory: cold cache
against warm, now that the 13-week availability calendar is computed off the request.

Builds the fleet of ``bench/ordering.py`` (the demo data, then generated nodes and about
8 reservations per node over the year around now, by COPY) in a throw-away database
(``portal_bench_catalog``), then times ``GET /en/`` through Django's test client with the
project's cache (Redis at ``REDIS_URL``; only this database's keys are touched):

- ``warm_ms``: the calendar stored by the beat job and the minute's prices cached;
- ``cold_ms``: the cache emptied before each GET (after a flush or a restart): the page
  computes the prices, shows the calendar as being computed and asks for a refresh;
- ``expired_ms``: the minute's prices expired, the calendar stored (every minute);
- ``refresh_ms``: the beat job itself (``billing.pricing.catalog.calendar_refresh``), which a
  cold visitor used to wait for.

Cold, expired and warm GETs alternate, so drift on the machine hits them alike.

Usage, from the repository root::

    .venv/bin/python bench/catalog.py            # about a minute
    .venv/bin/python bench/catalog.py --keep     # keep the database afterwards

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
    bench_database_url_for,
    drop_database,
    median,
    percentile,
    recreate_database,
    setup_django,
    stopwatch,
    summary,
)

COLD_OVER_WARM_GOAL = 3.0


def _clear_this_database_keys() -> None:
    """Empty the cache of this database's shop keys only (the Redis database may be
    shared with a development server)."""
    from django.core.cache import cache

    from billing.pricing import catalog

    prefix = catalog._cache_prefix()
    client = getattr(cache, "_cache", None)
    if client is not None and hasattr(client, "get_client"):  # Django's Redis cache
        redis = client.get_client(write=True)
        keys = list(redis.scan_iter(match=f"*{prefix}*", count=1000))
        if keys:
            redis.delete(*keys)
    else:
        cache.clear()


def measure(*, runs: int, warmup: int) -> dict[str, Any]:
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.urls import reverse
    from django.utils import translation

    from billing.pricing import catalog

    client = Client()
    with translation.override("en"):
        url = reverse("catalog")

    def get() -> tuple[float, str]:
        t0 = time.perf_counter_ns()
        response = client.get(url)
        dt = (time.perf_counter_ns() - t0) / 1e6
        if response.status_code != 200:
            raise SystemExit(f"GET {url} answered {response.status_code}")
        return dt, response.content.decode()

    refresh_ms = []
    for _ in range(3):
        t0 = time.perf_counter_ns()
        stored_pairs = catalog.calendar_refresh()
        refresh_ms.append((time.perf_counter_ns() - t0) / 1e6)
    stored = cache.get(catalog._calendar_key())
    if stored is None:
        raise SystemExit("calendar_refresh stored nothing")

    cold_ms: list[float] = []
    expired_ms: list[float] = []
    warm_ms: list[float] = []
    checked = False
    for i in range(warmup + runs):
        _clear_this_database_keys()
        cold, html = get()
        if "being computed" not in html:
            raise SystemExit("a cold page did not say the calendar is being computed")
        _clear_this_database_keys()
        cache.set(catalog._calendar_key(), stored, catalog.CALENDAR_KEEP_SECONDS)
        expired, html = get()
        warm, html = get()
        if not checked:
            if 'data-calendar="' not in html or "being computed" in html:
                raise SystemExit("a warm page shows no calendar")
            checked = True
        if i >= warmup:
            cold_ms.append(cold)
            expired_ms.append(expired)
            warm_ms.append(warm)

    def queries_of_one_get() -> list[str]:
        """Every statement the GET sends (an execute wrapper: it sees the on-commit
        outbox publish too)."""
        sent: list[str] = []

        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            sent.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            get()
        return sent

    _clear_this_database_keys()
    cold_q = queries_of_one_get()
    cache.set(catalog._calendar_key(), stored, catalog.CALENDAR_KEEP_SECONDS)
    get()
    warm_q = queries_of_one_get()

    for label, sent in (("cold", cold_q), ("warm", warm_q)):
        print(f"  {label} page's queries:")
        for sql in sent:
            print(f"    {sql[:110]}…")
    print(f"  calendar_refresh (the beat job): {summary(refresh_ms)}; {stored_pairs} calendars")
    print(f"  cold (empty cache):              {summary(cold_ms)}; {len(cold_q)} queries")
    print(f"  expired prices, calendar stored: {summary(expired_ms)}")
    print(f"  warm:                            {summary(warm_ms)}; {len(warm_q)} queries")
    cold, warm = median(cold_ms), median(warm_ms)
    return {
        "cold_ms": round(cold, 2),
        "cold_p90_ms": round(percentile(cold_ms, 90), 2),
        "expired_ms": round(median(expired_ms), 2),
        "warm_ms": round(warm, 2),
        "warm_p90_ms": round(percentile(warm_ms, 90), 2),
        "refresh_ms": round(median(refresh_ms), 1),
        "cold_over_warm": round(cold / warm, 2),
        "expired_over_warm": round(median(expired_ms) / warm, 2),
        "cold_queries": len(cold_q),
        "warm_queries": len(warm_q),
        "calendars": stored_pairs,
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000, help="nodes in all")
    parser.add_argument("--runs", type=int, default=20, help="timed GETs of each kind")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args(argv)

    # A cold page asks for a calendar refresh: to an in-memory broker with no worker.
    os.environ["CELERY_BROKER_URL"] = "memory://localhost/"
    os.environ["CELERY_RESULT_BACKEND"] = "cache+memory://"
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")

    url = bench_database_url_for("catalog")
    started = time.perf_counter()
    print(f"bench database: {url.rsplit('@', 1)[-1]}", flush=True)
    recreate_database(url)
    out: dict[str, Any] = {}
    try:
        setup_django(url)
        from django.conf import settings
        from django.core.management import call_command
        from django.db import connections

        from bench.ordering import build_fleet

        if "redis" not in settings.CACHES["default"]["BACKEND"].lower():
            print("  note: no Redis cache configured (REDIS_URL): a local-memory cache is used")
        timings: dict[str, float] = {}
        with stopwatch("migrate", timings):
            call_command("migrate", verbosity=0)
        with stopwatch("build", timings):
            fleet = build_fleet(total_nodes=args.nodes, seed=args.seed)
        print(
            f"  {fleet.nodes:,} nodes, {fleet.reservations:,} reservations; "
            f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
            flush=True,
        )
        print(f"[landing page] {fleet.nodes:,} nodes", flush=True)
        out.update(measure(runs=args.runs, warmup=args.warmup))
        _clear_this_database_keys()
        out.update(
            nodes=fleet.nodes,
            reservations=fleet.reservations,
            build_s=round(timings["build"], 2),
        )
        connections.close_all()
    finally:
        if args.keep:
            print(f"kept database {url.rsplit('/', 1)[-1]}")
        else:
            drop_database(url)
    out["total_s"] = round(time.perf_counter() - started, 1)
    out["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    out["goal_met"] = out["cold_over_warm"] <= COLD_OVER_WARM_GOAL
    print("goals:")
    print(
        f"  cold_ms / warm_ms: {out['cold_over_warm']:g} (goal ≤ {COLD_OVER_WARM_GOAL:g}) "
        f"{'ok' if out['goal_met'] else 'MISSED'}"
    )
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
