"""Benchmark of ``inventory.selectors.availability_search`` on PostgreSQL.

Builds a fleet of 10,000 nodes and 50,000 reservations in a throw-away database
(``portal_bench``), times the real selector for 16 nodes of one type at one site over a
90-day window, counts its queries, and compares it with a floor: one indexed SQL
``COUNT(*)`` of the free nodes for the same type, site and window. Then rebuilds at ten
times the size (100,000 nodes, 500,000 reservations) and times the selector again.

Usage, from the repository root::

    .venv/bin/python bench/availability.py            # 10k, then 100k
    .venv/bin/python bench/availability.py --quick    # 10k only
    .venv/bin/python bench/availability.py --explain  # also EXPLAIN ANALYZE both queries

The last line printed is one JSON object (see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in {None, ""}:  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    bench_database_url,
    copy_rows,
    drop_database,
    median,
    percentile,
    recreate_database,
    reset_sequences,
    setup_django,
    stopwatch,
    summary,
    time_runs,
    vacuum_analyze,
)

# --- the fleet -------------------------------------------------------------------------

SITES = (  # code, name, time zone, currency, VAT, share of the nodes
    ("SZ", "Shenzhen", "Asia/Shanghai", "CNY", "0.0600", 0.55),
    ("HK", "Hong Kong", "Asia/Hong_Kong", "HKD", "0.0000", 0.45),
)
NODE_TYPES = (  # code, GPU, GPUs, fabric, share of the nodes
    ("h100-8x", "H100 80G SXM", 8, "ib_ndr", 0.45),
    ("a100-8x", "A100 80G SXM", 8, "ib_hdr", 0.35),
    ("l40s-4x", "L40S 48G", 4, "roce_v2", 0.20),
)
TARGET_SITE = "SZ"
TARGET_TYPE = "h100-8x"  # the largest (site, type) group: the worst case
REQUEST_COUNT = 16
WINDOW = timedelta(days=90)
WINDOW_OFFSET = timedelta(days=21)  # the search starts three weeks from now
LEAF_SIZE = (20, 32)
RACK_SIZE = (4, 8)
YEAR_HOURS = 365 * 24
INACTIVE_SHARE = 0.10  # released / expired / ended reservations: must not count

TABLES = (
    "inventory_reservation",
    "inventory_maintenancewindow",
    "inventory_node",
    "inventory_switch",
    "inventory_rack",
)

FLOOR_SQL = """
SELECT COUNT(*)
FROM inventory_node n
WHERE n.site_id = %(site)s
  AND n.node_type_id = %(type)s
  AND n.status <> ALL(%(unbookable)s)
  AND NOT EXISTS (
      SELECT 1 FROM inventory_reservation r
      WHERE r.node_id = n.id AND r.status = ANY(%(active)s)
        AND r.start_at < %(end)s AND r.end_at > %(start)s)
  AND NOT EXISTS (
      SELECT 1 FROM inventory_maintenancewindow m
      WHERE m.node_id = n.id AND m.start_at < %(end)s AND m.end_at > %(start)s)
"""


@dataclass(frozen=True)
class Fleet:
    nodes: int
    reservations: int
    active_reservations: int
    maintenance_windows: int
    site_id: int
    node_type_id: int
    group_nodes: int  # nodes of the target type at the target site
    search_start: datetime  # start of the searched window (run i: + i mod 24 hours)


@dataclass(frozen=True)
class Catalog:
    site_ids: dict[str, int]
    type_ids: dict[str, int]


class _Clock:
    """Hour offsets from the start of the year around now, as ISO strings (cached)."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self.year_start = now - timedelta(hours=YEAR_HOURS // 2)
        self._iso: dict[int, str] = {}

    def iso(self, hour: int) -> str:
        s = self._iso.get(hour)
        if s is None:
            s = (self.year_start + timedelta(hours=hour)).isoformat()
            self._iso[hour] = s
        return s

    def hour_of(self, at: datetime) -> int:
        return int((at - self.year_start).total_seconds() // 3600)


SWITCH_COLS = (
    "id", "site_id", "rack_id", "name", "role", "fabric", "port_speed_gbps", "port_count",
    "scalable_unit",
)  # fmt: skip


def create_catalog() -> Catalog:
    from decimal import Decimal

    from inventory.models import GPUModel, NodeType, Site

    site_ids: dict[str, int] = {}
    for code, name, tz, currency, vat, _share in SITES:
        site = Site.objects.create(
            code=code, name=name, city=name, timezone=tz, currency=currency, vat_rate=Decimal(vat)
        )
        site_ids[code] = site.pk
    type_ids: dict[str, int] = {}
    for code, gpu, gpus, fabric, _share in NODE_TYPES:
        model = GPUModel.objects.create(
            name=gpu,
            memory_gb=80,
            memory_bandwidth_tbs=Decimal("3.350"),
            reference_tflops=Decimal("790.0"),
            reference_source="bench",
            nvlink_generation=4,
        )
        nt = NodeType.objects.create(
            code=code,
            name=code,
            cpu="2× Xeon Platinum 8480+",
            ram_gb=2048,
            gpu_model=model,
            gpu_count=gpus,
            interconnect="nvswitch",
            nic_count=8,
            nic_speed_gbps=400,
            fabric=fabric,
            storage="2× 3.84 TB NVMe",
        )
        type_ids[code] = nt.pk
    return Catalog(site_ids=site_ids, type_ids=type_ids)


def _group_sizes(n_nodes: int) -> list[tuple[str, str, int]]:
    """``(site, type, nodes)`` for every group; the sizes add up to ``n_nodes``."""
    groups = []
    for s_code, *_, s_share in SITES:
        for t_code, *_, t_share in NODE_TYPES:
            groups.append((s_code, t_code, int(n_nodes * s_share * t_share)))
    short = n_nodes - sum(n for *_, n in groups)
    s, t, n = groups[0]
    groups[0] = (s, t, n + short)
    return groups


def _node_status(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.015:
        return "faulty"
    if r < 0.030:
        return "maintenance"
    if r < 0.040:
        return "retired"
    if r < 0.150:
        return "in_service"
    if r < 0.200:
        return "reserved"
    return "available"


def _duration_hours(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.4:
        return rng.randint(24, 7 * 24)  # a few days
    if r < 0.8:
        return rng.randint(7 * 24, 30 * 24)  # weeks
    return rng.randint(30 * 24, 120 * 24)  # months


def build_fleet(
    catalog: Catalog, *, n_nodes: int, n_reservations: int, clock: _Clock, seed: int
) -> Fleet:
    """Fill the (empty) inventory tables with COPY; every id is assigned here."""
    rng = random.Random(seed)
    spent = {"generate": 0.0, "copy": 0.0}
    t0 = time.perf_counter()
    now_iso = clock.now.isoformat()
    racks: list[str] = []
    switches: list[str] = []
    nodes: list[str] = []
    node_ids: list[int] = []
    group_nodes = 0
    rack_no = {code: 0 for code, *_ in SITES}
    leaf_no = {code: 0 for code, *_ in SITES}
    node_id = 0
    for s_code, t_code, size in _group_sizes(n_nodes):
        site_id = catalog.site_ids[s_code]
        type_id = catalog.type_ids[t_code]
        fabric = next(f for c, _g, _n, f, _s in NODE_TYPES if c == t_code)
        if (s_code, t_code) == (TARGET_SITE, TARGET_TYPE):
            group_nodes = size
        left = size
        while left > 0:
            leaf_size = min(left, rng.randint(*LEAF_SIZE))
            left -= leaf_size
            leaf_no[s_code] += 1
            leaf_id = len(switches) + 1
            leaf_rack_id = len(racks) + 1
            switches.append(
                f"{leaf_id}\t{site_id}\t{leaf_rack_id}\t{s_code}-leaf-{leaf_no[s_code]:05d}"
                f"\tleaf\t{fabric}\t400\t64\t"  # no scalable unit
            )
            in_leaf = leaf_size
            while in_leaf > 0:
                rack_size = min(in_leaf, rng.randint(*RACK_SIZE))
                in_leaf -= rack_size
                rack_no[s_code] += 1
                rack_id = len(racks) + 1
                racks.append(
                    f"{rack_id}\t{site_id}\tH{rack_no[s_code] // 200 + 1}"
                    f"\t{s_code}-R{rack_no[s_code]:06d}\t\\N"
                )
                for _ in range(rack_size):
                    node_id += 1
                    node_ids.append(node_id)
                    host = f"{s_code.lower()}-{t_code}-{node_id:06d}"
                    nodes.append(
                        f"{node_id}\t{site_id}\t{type_id}\t{host}\tSN{node_id:09d}"
                        f"\thttps://10.{node_id >> 16}.{(node_id >> 8) & 255}.{node_id & 255}"
                        f"\t{rack_id}\t{leaf_id}\t{_node_status(rng)}\t{now_iso}\t"
                    )
    spent["generate"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    copy_rows("inventory_rack", ("id", "site_id", "room", "name", "power_kw"), racks)
    copy_rows(
        "inventory_switch",
        SWITCH_COLS,
        switches,
    )
    node_cols = (
        "id", "site_id", "node_type_id", "hostname", "serial", "bmc_address",
        "rack_id", "leaf_switch_id", "status", "status_changed_at", "notes",
    )  # fmt: skip
    copy_rows("inventory_node", node_cols, nodes)
    spent["copy"] += time.perf_counter() - t0
    t0 = time.perf_counter()

    # Reservations: active ones (hold, firm) never overlap on one node; inactive ones may.
    n_active_target = int(n_reservations * (1 - INACTIVE_SHARE))
    win_start = clock.hour_of(clock.now + WINDOW_OFFSET)
    win_end = win_start + int(WINDOW.total_seconds() // 3600)
    resv: list[str] = []
    resv_id = 0
    n_active = 0

    def add(node: int, start_h: int, end_h: int, status: str) -> None:
        nonlocal resv_id
        resv_id += 1
        expires = "\\N"
        if status in {"hold", "expired"}:
            expires = (clock.now + timedelta(hours=rng.randint(1, 72))).isoformat()
        group = uuid.UUID(int=rng.getrandbits(128), version=4)
        owner = f"order:{resv_id}" if status != "hold" else f"quote:Q-BENCH-{resv_id:07d}"
        resv.append(
            f"{resv_id}\t{node}\t{clock.iso(start_h)}\t{clock.iso(end_h)}\t{status}"
            f"\t{expires}\t{group}\t{owner}\t\\N\t{now_iso}"
        )

    order = node_ids[:]
    rng.shuffle(order)
    for node in order:
        k = min(rng.randint(0, 9), n_active_target - n_active)
        if k <= 0:
            continue
        durations = [_duration_hours(rng) for _ in range(k)]
        while sum(durations) > YEAR_HOURS * 0.9:
            durations.pop()
        free = YEAR_HOURS - sum(durations)
        cuts = sorted(rng.randint(0, free) for _ in durations)
        booked = 0
        for cut, d in zip(cuts, durations, strict=True):
            start_h = cut + booked
            booked += d
            add(node, start_h, start_h + d, "hold" if rng.random() < 0.25 else "firm")
            n_active += 1
    for _ in range(n_reservations - n_active):
        node = rng.choice(node_ids)
        d = _duration_hours(rng)
        if rng.random() < 0.5:  # aimed at the searched window, so that counting them shows
            start_h = rng.randint(win_start - 30 * 24, win_end)
        else:
            start_h = rng.randint(0, YEAR_HOURS - d)
        add(node, start_h, start_h + d, rng.choice(("released", "expired", "ended")))
    resv_cols = (
        "id", "node_id", "start_at", "end_at", "status", "expires_at", "group",
        "owner_ref", "created_by_id", "created_at",
    )  # fmt: skip
    spent["generate"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    copy_rows("inventory_reservation", resv_cols, resv)
    spent["copy"] += time.perf_counter() - t0

    windows: list[str] = []
    n_windows = max(5, n_nodes // 200)
    for i in range(1, n_windows + 1):
        node = rng.choice(node_ids)
        d = rng.randint(4, 72)
        start_h = rng.randint(win_start, win_end) if i % 2 else rng.randint(0, YEAR_HOURS - d)
        windows.append(
            f"{i}\t{node}\t{clock.iso(start_h)}\t{clock.iso(start_h + d)}\tfirmware\t\\N"
        )
    copy_rows(
        "inventory_maintenancewindow",
        ("id", "node_id", "start_at", "end_at", "reason", "created_by_id"),
        windows,
    )
    reset_sequences(*TABLES)
    t0 = time.perf_counter()
    vacuum_analyze(*TABLES)
    spent["vacuum analyze"] = time.perf_counter() - t0
    print("  " + ", ".join(f"{k} {v:.1f} s" for k, v in spent.items()), flush=True)
    return Fleet(
        nodes=n_nodes,
        reservations=resv_id,
        active_reservations=n_active,
        maintenance_windows=n_windows,
        site_id=catalog.site_ids[TARGET_SITE],
        node_type_id=catalog.type_ids[TARGET_TYPE],
        group_nodes=group_nodes,
        search_start=(clock.now + WINDOW_OFFSET).replace(hour=0),
    )


def truncate_fleet() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")


# --- measurements ----------------------------------------------------------------------


def _window(base: datetime, i: int) -> tuple[datetime, datetime]:
    """Run ``i``'s window: the base start moved by ``i mod 24`` hours (warm-ups: negative)."""
    start = base + timedelta(hours=i % 24)
    return start, start + WINDOW


def measure(fleet: Fleet, *, runs: int, warmup: int, explain: bool, fallback_runs: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from inventory.models import ACTIVE_RESERVATION_STATUSES, NODE_UNBOOKABLE_STATUSES
    from inventory.selectors import availability_search, free_nodes

    base = fleet.search_start
    unbookable = [str(s) for s in NODE_UNBOOKABLE_STATUSES]
    active = [str(s) for s in ACTIVE_RESERVATION_STATUSES]

    def search(i: int) -> Any:
        start, end = _window(base, i)
        return availability_search(
            site=fleet.site_id,
            node_type=fleet.node_type_id,
            count=REQUEST_COUNT,
            start_at=start,
            end_at=end,
        )

    def floor_params(i: int) -> dict[str, Any]:
        start, end = _window(base, i)
        return {
            "site": fleet.site_id,
            "type": fleet.node_type_id,
            "unbookable": unbookable,
            "active": active,
            "start": start,
            "end": end,
        }

    def floor(i: int) -> int:
        with connection.cursor() as cursor:
            cursor.execute(FLOOR_SQL, floor_params(i))
            return cursor.fetchone()[0]

    def selector_sql(i: int) -> tuple[str, tuple]:
        start, end = _window(base, i)
        qs = free_nodes(
            site=fleet.site_id, node_type=fleet.node_type_id, start_at=start, end_at=end
        ).values_list("pk", "hostname", "leaf_switch__name", "rack__name")
        return qs.query.sql_with_params()

    def sql_only(i: int) -> int:
        query, params = selector_sql(i)
        with connection.cursor() as cursor:
            cursor.execute(query, params)
            return len(cursor.fetchall())

    # Correctness first: the selector and the floor must agree on every window.
    mismatches = 0
    for i in range(min(runs, 24)):
        got, want = search(i).free_count, floor(i)
        if got != want:
            mismatches += 1
            print(f"  MISMATCH run {i}: selector {got} free, floor {want}")
    with CaptureQueriesContext(connection) as ctx:
        result = search(0)
    queries = len(ctx.captured_queries)
    print(
        f"  window {_window(base, 0)[0]:%Y-%m-%d %H:%M} +90 d: {result.free_count} of "
        f"{fleet.group_nodes} {TARGET_TYPE} nodes at {TARGET_SITE} free, "
        f"placement on {len(result.placement.leaves) if result.placement else 0} leaf(s), "
        f"{queries} quer{'y' if queries == 1 else 'ies'}"
    )
    for q in ctx.captured_queries:
        print(f"    [{q['time']} s] {q['sql'][:160]}…")

    sel_ms = time_runs(search, runs=runs, warmup=warmup)
    floor_ms = time_runs(floor, runs=runs, warmup=warmup)
    sql_ms = time_runs(sql_only, runs=runs, warmup=warmup)
    print(f"  availability_search: {summary(sel_ms)}")
    print(f"  floor COUNT(*):      {summary(floor_ms)}")
    print(f"  selector SQL alone:  {summary(sql_ms)}  (query + fetch, no Python model work)")

    if explain:
        with connection.cursor() as cursor:
            query, params = selector_sql(0)
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + query, params)
            print("  EXPLAIN ANALYZE selector query:")
            for (line,) in cursor.fetchall():
                print("    " + line)
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + FLOOR_SQL, floor_params(0))
            print("  EXPLAIN ANALYZE floor query:")
            for (line,) in cursor.fetchall():
                print("    " + line)

    out: dict[str, Any] = {}
    if fallback_runs:
        # The other path: more nodes asked for than are free, so the selector also looks
        # for the earliest start of the full count (a second query over a year of busy
        # intervals). Same window every run, so that the count is always short.
        short = result.free_count + 1

        def fallback(_i: int) -> Any:
            start, end = _window(base, 0)
            return availability_search(
                site=fleet.site_id,
                node_type=fleet.node_type_id,
                count=short,
                start_at=start,
                end_at=end,
            )

        with CaptureQueriesContext(connection) as ctx:
            fb = fallback(0)
        assert fb.placement is None, "the fallback search must not find a placement"
        fb_ms = time_runs(fallback, runs=fallback_runs, warmup=1)
        print(
            f"  fallback (count {short} > free): {summary(fb_ms)}, "
            f"{len(ctx.captured_queries)} queries, "
            f"earliest start {fb.earliest_start:%Y-%m-%d %H:%M}"
        )
        out = {
            "fallback_p50_ms": round(median(fb_ms), 3),
            "fallback_queries": len(ctx.captured_queries),
        }

    p50, floor_p50 = median(sel_ms), median(floor_ms)
    return out | {
        "p50_ms": round(p50, 3),
        "p90_ms": round(percentile(sel_ms, 90), 3),
        "min_ms": round(min(sel_ms), 3),
        "floor_p50_ms": round(floor_p50, 3),
        "ratio": round(p50 / floor_p50, 3),
        "sql_p50_ms": round(median(sql_ms), 3),
        "queries": queries,
        "free_nodes": result.free_count,
        "group_nodes": fleet.group_nodes,
        "mismatches": mismatches,
    }


# --- main ------------------------------------------------------------------------------


def phase(
    catalog: Catalog, *, label: str, n_nodes: int, n_resv: int, args: argparse.Namespace
) -> tuple[Fleet, dict, float]:
    now = datetime.now(tz=UTC).replace(minute=0, second=0, microsecond=0)
    clock = _Clock(now)
    print(f"[{label}] building {n_nodes:,} nodes, {n_resv:,} reservations…", flush=True)
    t0 = time.perf_counter()
    fleet = build_fleet(
        catalog, n_nodes=n_nodes, n_reservations=n_resv, clock=clock, seed=args.seed
    )
    build_s = time.perf_counter() - t0
    print(
        f"  built in {build_s:.1f} s: {fleet.nodes:,} nodes, {fleet.reservations:,} "
        f"reservations ({fleet.active_reservations:,} active), "
        f"{fleet.maintenance_windows} maintenance windows; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    stats = measure(
        fleet,
        runs=args.runs,
        warmup=args.warmup,
        explain=args.explain,
        fallback_runs=args.fallback_runs,
    )
    return fleet, stats, build_s


def slice_group(fleet: Fleet, catalog: Catalog, *, size: int) -> Fleet:
    """Move the first ``size`` nodes (whole leaves, by id) of the searched group to a new
    node type: a 100k-node database whose searched group is as large as at 10k."""
    from django.db import connection

    from inventory.models import NodeType

    nt = NodeType.objects.get(pk=fleet.node_type_id)
    nt.pk, nt.id, nt.code = None, None, f"{nt.code}-slice"
    nt.save()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE inventory_node SET node_type_id = %s WHERE id IN ("
            " SELECT id FROM inventory_node WHERE site_id = %s AND node_type_id = %s"
            " ORDER BY id LIMIT %s)",
            [nt.pk, fleet.site_id, fleet.node_type_id, size],
        )
        moved = cursor.rowcount
    vacuum_analyze("inventory_node")
    return replace(fleet, node_type_id=nt.pk, group_nodes=moved)


def goal(name: str, value: float, limit: float) -> str:
    return f"  {name}: {value:g} (goal ≤ {limit:g}) {'ok' if value <= limit else 'MISSED'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the 100k-node phase")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per measure (≥ 20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--reservations", type=int, default=50_000)
    parser.add_argument("--scale", type=int, default=10, help="factor of the large phase")
    parser.add_argument(
        "--fallback-runs", type=int, default=10, help="timed runs of the earliest-start path"
    )
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args(argv)

    url = bench_database_url()
    started = time.perf_counter()
    print(f"bench database: {url.rsplit('@', 1)[-1]}", flush=True)
    recreate_database(url)
    try:
        setup_django(url)
        from django.core.management import call_command
        from django.db import connection

        with stopwatch("migrate"):
            call_command("migrate", verbosity=0)
        catalog = create_catalog()

        fleet, stats, build_s = phase(
            catalog, label="10k", n_nodes=args.nodes, n_resv=args.reservations, args=args
        )
        out: dict[str, Any] = {
            **stats,
            "nodes": fleet.nodes,
            "reservations": fleet.reservations,
            "runs": args.runs,
            "build_s": round(build_s, 2),
        }
        if not args.quick:
            truncate_fleet()
            big, big_stats, big_build_s = phase(
                catalog,
                label="100k",
                n_nodes=args.nodes * args.scale,
                n_resv=args.reservations * args.scale,
                args=args,
            )
            out.update(
                {
                    "p50_ms_100k": big_stats["p50_ms"],
                    "min_ms_100k": big_stats["min_ms"],
                    "floor_p50_ms_100k": big_stats["floor_p50_ms"],
                    "sql_p50_ms_100k": big_stats["sql_p50_ms"],
                    "queries_100k": big_stats["queries"],
                    "free_nodes_100k": big_stats["free_nodes"],
                    "nodes_100k": big.nodes,
                    "reservations_100k": big.reservations,
                    "build_s_100k": round(big_build_s, 2),
                    "scale_ratio_100k": round(big_stats["p50_ms"] / stats["p50_ms"], 3),
                    "fallback_p50_ms_100k": big_stats.get("fallback_p50_ms"),
                }
            )
            # Same 100k-node tables, but a searched group as large as at 10k: what the
            # size of the tables costs, apart from the size of the answer.
            print(f"[100k, same group] {fleet.group_nodes:,} nodes moved to a new type")
            sliced = slice_group(big, catalog, size=fleet.group_nodes)
            same = measure(
                sliced, runs=args.runs, warmup=args.warmup, explain=False, fallback_runs=0
            )
            out.update(
                {
                    "p50_ms_100k_same_group": same["p50_ms"],
                    "floor_p50_ms_100k_same_group": same["floor_p50_ms"],
                    "scale_ratio_100k_same_group": round(same["p50_ms"] / stats["p50_ms"], 3),
                    "mismatches": stats["mismatches"]
                    + big_stats["mismatches"]
                    + same["mismatches"],
                }
            )
        connection.close()
    finally:
        if args.keep:
            print(f"kept database {url.rsplit('/', 1)[-1]}")
        else:
            drop_database(url)

    out["total_s"] = round(time.perf_counter() - started, 1)
    out["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    print("goals:")
    print(goal("p50_ms", out["p50_ms"], 30))
    print(goal("ratio", out["ratio"], 3))
    print(goal("queries", out["queries"], 3))
    if "scale_ratio_100k" in out:
        print(goal("scale_ratio_100k", out["scale_ratio_100k"], 2))
    if out["mismatches"]:
        print(f"  WARNING: selector and floor disagreed {out['mismatches']} time(s)")
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
