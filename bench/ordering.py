"""Benchmark of ordering under contention, and of the instant-quote page, on PostgreSQL.

Builds a fleet of 10,000 nodes (the demo data plus generated nodes) in a throw-away
database (``portal_bench_ordering``) where nearly every node is booked over a ten-day
contested period, so that exactly 8 H100 nodes in Hong Kong are left free over it. Then
32 processes, released together by a barrier, make 500 attempts in all to book some of
those 8 over random overlapping windows inside the period: ``availability_search`` and
``inventory.services.reservation_hold`` (a hold with an expiry), and for a share of the
attempts the whole self-service order (``order_self_service``: quote, send, accept). A
``DomainError`` is a clean refusal; anything else is an error. Afterwards one SQL
self-join counts overlapping active reservations on any node (must be 0).

In the same run, against the same 10,000 nodes, the configure page (the instant quote)
is timed through Django's test client and compared with a hello-world view served
through the same URL configuration and middleware: asked again and again, as the issue's
goal measures it (after the first GET its parts are kept per configuration,
``portal.shop.instant_quote``), and computed afresh each time (``computed_*``: what a
configuration asked for the first time, or after the inventory changed, costs).

Usage, from the repository root::

    .venv/bin/python bench/ordering.py            # the race and the page (~1-2 min)
    .venv/bin/python bench/ordering.py --keep     # keep the database afterwards

The last line printed is one JSON object (see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing as mp
import os
import random
import sys
import time
import types
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in {None, ""}:  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    bench_database_url_for,
    clone_database,
    copy_rows,
    drop_database,
    median,
    percentile,
    recreate_database,
    reset_sequences,
    setup_django,
    stopwatch,
    summary,
    vacuum_analyze,
)

# --- the fleet -------------------------------------------------------------------------

SITE_SHARES = (("SZ", 0.55), ("HK", 0.45))
TYPE_SHARES = (("h100-8x-nvlink", 0.45), ("a100-40g-4x", 0.35), ("e5-baremetal", 0.20))
CONTESTED_SITE = "HK"
CONTESTED_TYPE = "h100-8x-nvlink"
LAST_NODES = 8  # free over the contested period, and nothing else of the type at the site
PERIOD_OFFSET = timedelta(days=14)  # the contested period starts two weeks from today
PERIOD_DAYS = 10
BUSY_SHARE = 0.85  # of the other generated nodes: booked over the whole contested period
LEAF_SIZE = (20, 32)
RACK_SIZE = (4, 8)
HALF_YEAR_H = 182 * 24

# The instant quote the page is timed with: 16 H100 nodes in Shenzhen for a month from a
# week today, with two add-ons (placeable: one query for the availability search). The
# short variant asks Hong Kong for 16 H100 nodes, where at most 8 are free.
PAGE_PARAMS = {
    "site": "SZ",
    "node_type": "h100-8x-nvlink",
    "node_count": "16",
    "term": "month",
    "duration": "1",
    "addon_checkpoint-storage": "10",
    "addon_egress": "2.5",
}
PAGE_START_IN = timedelta(days=7)

NODE_COLS = (
    "id", "site_id", "node_type_id", "hostname", "serial", "bmc_address",
    "rack_id", "leaf_switch_id", "status", "status_changed_at", "notes",
)  # fmt: skip
SWITCH_COLS = (
    "id", "site_id", "rack_id", "name", "role", "fabric", "port_speed_gbps", "port_count",
    "scalable_unit",
)  # fmt: skip
RESV_COLS = (
    "id", "node_id", "start_at", "end_at", "status", "expires_at", "group",
    "owner_ref", "created_by_id", "created_at",
)  # fmt: skip
TABLES = (
    "inventory_reservation",
    "inventory_node",
    "inventory_switch",
    "inventory_rack",
)

# The race's throughput with all its clients, over one client alone on the same fleet.
SCALING_GOAL = 1.5
# The instant-quote page, logged in: queries (session and user included) and time over
# the hello-world view's.
PAGE_QUERIES_GOAL = 5
PAGE_RATIO_GOAL = 15
# What the one-client race adds to the JSON, with a ``_1`` suffix.
SOLO_KEYS = (
    "attempts",
    "successes",
    "refusals",
    "errors",
    "double_bookings",
    "attempts_per_s",
    "race_wall_s",
    "attempt_p50_ms",
    "attempt_p90_ms",
    "race_paths",
    "held_mismatch",
)

DOUBLE_BOOKING_SQL = """
SELECT COUNT(*), COUNT(DISTINCT a.node_id)
FROM inventory_reservation a
JOIN inventory_reservation b ON b.node_id = a.node_id AND a.id < b.id
WHERE a.status IN ('hold', 'firm')
  AND b.status IN ('hold', 'firm')
  AND tstzrange(a.start_at, a.end_at) && tstzrange(b.start_at, b.end_at)
"""


@dataclass(frozen=True)
class Fleet:
    nodes: int
    generated_nodes: int
    reservations: int
    site_id: int  # the contested site and type
    node_type_id: int
    group_nodes: int  # nodes of the contested type at the contested site
    last_node_ids: tuple[int, ...]
    period_start: datetime  # the contested period, [start, start + PERIOD_DAYS)
    period_first_day: date  # its first day, site time (for the order path)
    customer_id: int
    organisation_id: int


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


def _duration_h(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.4:
        return rng.randint(24, 7 * 24)
    if r < 0.8:
        return rng.randint(7 * 24, 30 * 24)
    return rng.randint(30 * 24, 90 * 24)


def build_fleet(*, total_nodes: int, seed: int) -> Fleet:
    """The demo data (``seed_demo``), then generated nodes and reservations by COPY."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db.models import Max

    from accounts.models import Organisation
    from billing.pricing.periods import site_today
    from inventory.models import Node, NodeType, Rack, Reservation, Site, Switch

    call_command("seed_demo", stdout=io.StringIO())
    rng = random.Random(seed)
    sites = {s.code: s for s in Site.objects.all()}
    types_ = {t.code: t for t in NodeType.objects.all()}
    demo_nodes = Node.objects.count()
    n_new = total_nodes - demo_nodes
    if n_new < 0:
        raise SystemExit(f"--nodes must be at least the {demo_nodes} demo nodes")

    base = datetime.now(tz=sites["HK"].tzinfo).replace(minute=0, second=0, microsecond=0)
    first_day = site_today(sites[CONTESTED_SITE]) + PERIOD_OFFSET
    p0 = datetime.combine(first_day, datetime.min.time(), tzinfo=sites[CONTESTED_SITE].tzinfo)
    p0_h = int((p0 - base).total_seconds() // 3600)
    p1_h = p0_h + PERIOD_DAYS * 24
    iso_cache: dict[int, str] = {}

    def iso(hour: int) -> str:
        s = iso_cache.get(hour)
        if s is None:
            s = iso_cache[hour] = (base + timedelta(hours=hour)).isoformat()
        return s

    now_iso = base.isoformat()
    next_id = {
        "rack": (Rack.objects.aggregate(m=Max("id"))["m"] or 0) + 1,
        "switch": (Switch.objects.aggregate(m=Max("id"))["m"] or 0) + 1,
        "node": (Node.objects.aggregate(m=Max("id"))["m"] or 0) + 1,
        "resv": (Reservation.objects.aggregate(m=Max("id"))["m"] or 0) + 1,
    }

    def take(kind: str) -> int:
        i = next_id[kind]
        next_id[kind] += 1
        return i

    # --- nodes: whole leaves of one type, split into racks ---
    first_new_node = next_id["node"]
    racks: list[str] = []
    switches: list[str] = []
    nodes: list[str] = []
    new_nodes: list[tuple[int, str, str]] = []  # (id, site code, type code)
    groups = [
        (s, t, int(n_new * s_share * t_share))
        for s, s_share in SITE_SHARES
        for t, t_share in TYPE_SHARES
    ]
    groups[0] = (groups[0][0], groups[0][1], groups[0][2] + n_new - sum(g[2] for g in groups))
    for s_code, t_code, size in groups:
        site, nt = sites[s_code], types_[t_code]
        left = size
        while left > 0:
            leaf_size = min(left, rng.randint(*LEAF_SIZE))
            left -= leaf_size
            leaf_id, first_rack = take("switch"), next_id["rack"]
            switches.append(
                f"{leaf_id}\t{site.pk}\t{first_rack}\t{s_code.lower()}-bench-leaf-{leaf_id:05d}"
                f"\tleaf\t{nt.fabric}\t{nt.nic_speed_gbps}\t64\t"  # no scalable unit
            )
            in_leaf = leaf_size
            while in_leaf > 0:
                rack_size = min(in_leaf, rng.randint(*RACK_SIZE))
                in_leaf -= rack_size
                rack_id = take("rack")
                racks.append(
                    f"{rack_id}\t{site.pk}\t{s_code}-H{rack_id // 200 + 1}"
                    f"\t{s_code}-BR{rack_id:06d}\t\\N"
                )
                for _ in range(rack_size):
                    node_id = take("node")
                    host = f"{s_code.lower()}-b{nt.code.split('-')[0]}-{node_id:06d}"
                    nodes.append(
                        f"{node_id}\t{site.pk}\t{nt.pk}\t{host}\tBENCH{node_id:09d}"
                        f"\thttps://bmc-{host}.oob.internal\t{rack_id}\t{leaf_id}"
                        f"\t{_node_status(rng)}\t{now_iso}\t"
                    )
                    new_nodes.append((node_id, s_code, t_code))
    copy_rows("inventory_rack", ("id", "site_id", "room", "name", "power_kw"), racks)
    copy_rows(
        "inventory_switch",
        SWITCH_COLS,
        switches,
    )
    copy_rows("inventory_node", NODE_COLS, nodes)

    # --- reservations: a year around now, never overlapping on a node ---
    resv: list[str] = []

    def add(node: int, start_h: int, end_h: int, status: str | None = None) -> None:
        rid = take("resv")
        if status is None:
            status = "ended" if end_h <= 0 else ("hold" if rng.random() < 0.2 else "firm")
        expires = "\\N"
        if status in ("hold", "expired"):
            expires = (base + timedelta(hours=rng.randint(1, 72))).isoformat()
        group = uuid.UUID(int=rng.getrandbits(128), version=4)
        owner = f"quote:Q-BENCH-{rid:07d}" if status == "hold" else f"order:O-BENCH-{rid:07d}"
        resv.append(
            f"{rid}\t{node}\t{iso(start_h)}\t{iso(end_h)}\t{status}\t{expires}\t{group}"
            f"\t{owner}\t\\N\t{now_iso}"
        )

    def fill(node: int, lo: int, hi: int) -> None:
        """Back-to-back bookings with gaps, all inside ``[lo, hi)``."""
        t = lo + rng.randint(0, 20 * 24)
        while True:
            d = _duration_h(rng)
            if t + d > hi:
                return
            add(node, t, t + d)
            t += d + rng.randint(1, 45 * 24)

    def busy_over_period(node: int) -> None:
        cover = (p0_h - rng.randint(0, 20 * 24), p1_h + rng.randint(0, 20 * 24))
        add(node, *cover, status="hold" if rng.random() < 0.2 else "firm")
        fill(node, -HALF_YEAR_H, cover[0])
        fill(node, cover[1], HALF_YEAR_H)

    def free_over_period(node: int) -> None:
        fill(node, -HALF_YEAR_H, p0_h)
        fill(node, p1_h, HALF_YEAR_H)

    for node_id, s_code, t_code in new_nodes:
        contested = (s_code, t_code) == (CONTESTED_SITE, CONTESTED_TYPE)
        if contested or rng.random() < BUSY_SHARE:
            busy_over_period(node_id)
        else:
            free_over_period(node_id)
    # The demo's own contested nodes: the first 8 by host name are the last free ones
    # (with released and expired bookings over the period, which must not count), the
    # others are booked over it.
    demo_group = list(
        Node.objects.filter(
            site=sites[CONTESTED_SITE], node_type=types_[CONTESTED_TYPE], id__lt=first_new_node
        ).order_by("hostname")
    )
    last = demo_group[:LAST_NODES]
    if len(last) != LAST_NODES:
        raise SystemExit(f"the demo has {len(last)} {CONTESTED_TYPE} nodes at {CONTESTED_SITE}")
    for n in demo_group[LAST_NODES:]:
        busy_over_period(n.pk)
    for n in last:
        free_over_period(n.pk)
        add(n.pk, p0_h - 48, p0_h + 72, status="released")
        add(n.pk, p1_h - 72, p1_h + 24, status="expired")
    copy_rows("inventory_reservation", RESV_COLS, resv)
    reset_sequences(*TABLES)
    vacuum_analyze(*TABLES)

    customer = get_user_model().objects.get(username="customer")
    org = Organisation.objects.get(memberships__user=customer)
    return Fleet(
        nodes=Node.objects.count(),
        generated_nodes=len(new_nodes),
        reservations=Reservation.objects.count(),
        site_id=sites[CONTESTED_SITE].pk,
        node_type_id=types_[CONTESTED_TYPE].pk,
        group_nodes=Node.objects.filter(
            site=sites[CONTESTED_SITE], node_type=types_[CONTESTED_TYPE]
        ).count(),
        last_node_ids=tuple(n.pk for n in last),
        period_start=p0,
        period_first_day=first_day,
        customer_id=customer.pk,
        organisation_id=org.pk,
    )


# --- the race --------------------------------------------------------------------------


@dataclass(frozen=True)
class RacePlan:
    fleet: Fleet
    processes: int
    attempts: int
    order_share: float
    seed: int
    database: str  # the database the race runs in (a copy of the fleet for the solo run)


def _use_database(name: str) -> None:
    """Point this process's default connection at database ``name`` (closed first, so the
    next query opens it there)."""
    from django.db import connections

    connections.close_all()
    connections.settings["default"]["NAME"] = name
    connections["default"].settings_dict["NAME"] = name


def _attempt(i: int, plan: RacePlan, env: dict[str, Any]) -> dict[str, Any]:
    """Attempt ``i``: a random count of the last nodes over a random window of the period,
    by a bare hold or (``order_share`` of them) a whole self-service order."""
    import traceback

    from django.db import IntegrityError, connection
    from django.utils import timezone

    from billing.shop.selfservice import CapacityTaken, order_self_service
    from core.errors import DomainError, DoubleBooking, NotEnoughCapacity
    from inventory.models import Node
    from inventory.selectors import availability_search
    from inventory.services import reservation_hold

    fleet = plan.fleet
    rng = random.Random(plan.seed * 100_003 + i)
    count = rng.randint(1, LAST_NODES)
    by_order = rng.random() < plan.order_share
    rec: dict[str, Any] = {"i": i, "path": "order" if by_order else "hold", "count": count}
    t0 = time.perf_counter()
    try:
        if by_order:  # whole days, site time: [day, day + n days) inside the period
            start_date = fleet.period_first_day + timedelta(
                days=rng.randint(0, PERIOD_DAYS // 2 - 1)
            )
            order = order_self_service(
                user=env["customer"],
                organisation=env["organisation"],
                site=env["site"],
                node_type=env["node_type"],
                node_count=count,
                card_gpu_model_id=None,
                cards_per_node=0,
                term="day",
                duration=rng.randint(1, PERIOD_DAYS // 2),
                start_date=start_date,
                addons={},
                payment_method="card",
                ip="198.51.100.7",
            )
            rec.update(outcome="success", held=count, order=order.number)
        else:  # any hour: start in the first half of the period, 12 hours to 5 days long
            start = fleet.period_start + timedelta(hours=rng.randint(0, PERIOD_DAYS // 2 * 24))
            end = start + timedelta(hours=rng.randint(12, PERIOD_DAYS // 2 * 24))
            found = availability_search(
                site=fleet.site_id,
                node_type=fleet.node_type_id,
                count=count,
                start_at=start,
                end_at=end,
            )
            if found.placement is None:
                rec.update(outcome="refused", detail=f"no placement ({found.free_count} free)")
            else:
                nodes = list(Node.objects.filter(pk__in=found.placement.node_ids))
                held = reservation_hold(
                    nodes=nodes,
                    start_at=start,
                    end_at=end,
                    owner_ref=f"bench-race:{i}",
                    expires_at=timezone.now() + timedelta(minutes=30),
                )
                rec.update(outcome="success", held=len(held))
    except DomainError as exc:
        kind = type(exc).__name__
        if isinstance(exc, DoubleBooking):  # which check refused: the service's, or the
            # exclusion constraint (the backstop) when two got past the check at once
            backstop = isinstance(exc.__cause__, IntegrityError)
            kind += " (exclusion constraint)" if backstop else " (overlap check)"
        elif isinstance(exc, CapacityTaken):
            lost = not exc.message.startswith("Not enough nodes are free")
            kind += " (lost the hold on every try)" if lost else " (not enough free)"
        elif not isinstance(exc, NotEnoughCapacity):
            kind += f": {exc.message[:120]}"  # a refusal for another reason: worth reading
        rec.update(outcome="refused", detail=kind)
    except Exception as exc:
        rec.update(
            outcome="error",
            detail=f"{type(exc).__module__}.{type(exc).__name__}: {str(exc).strip()[:400]}",
            traceback=traceback.format_exc(limit=-8),
        )
        connection.close_if_unusable_or_obsolete()
    rec["ms"] = (time.perf_counter() - t0) * 1000
    return rec


def _racer(worker: int, plan: RacePlan, barrier: Any, results: Any) -> None:
    """One racing process: set up, wait for the others, make its share of the attempts."""
    import traceback

    import django

    django.setup()  # forked from a parent that set up: cheap, but the same code as spawn
    from django.db import connections

    connections.close_all()  # the parent closed its own before forking: nothing shared
    _use_database(plan.database)
    try:
        from django.contrib.auth import get_user_model
        from django.utils import translation

        from accounts.models import Organisation
        from inventory.models import NodeType, Site

        fleet = plan.fleet
        env = {  # the connection opens here, before the start
            "customer": get_user_model().objects.get(pk=fleet.customer_id),
            "organisation": Organisation.objects.get(pk=fleet.organisation_id),
            "site": Site.objects.get(pk=fleet.site_id),
            "node_type": NodeType.objects.get(pk=fleet.node_type_id),
        }
        barrier.wait(timeout=120)
        started = time.time()
        with translation.override("en"):  # messages (and quotes) in English
            records = [_attempt(i, plan, env) for i in range(worker, plan.attempts, plan.processes)]
        results.put({"worker": worker, "records": records, "start": started, "end": time.time()})
    except BaseException:
        barrier.abort()
        results.put({"worker": worker, "records": [], "fatal": traceback.format_exc()})
    finally:
        connections.close_all()


def race(plan: RacePlan) -> dict[str, Any]:
    """Run the processes, then check the database: no node booked twice over any time."""
    from django.core.cache import caches
    from django.db import connection, connections

    from billing.models import Order, Quote
    from inventory.models import Reservation
    from inventory.selectors import availability_search

    fleet = plan.fleet
    _use_database(plan.database)
    found = availability_search(
        site=fleet.site_id,
        node_type=fleet.node_type_id,
        count=1,
        start_at=fleet.period_start,
        end_at=fleet.period_start + timedelta(days=PERIOD_DAYS),
    )
    free_before = sorted(c.node_id for c in found.free)
    if free_before != sorted(fleet.last_node_ids):
        raise SystemExit(f"expected the last {LAST_NODES} nodes free, found {free_before}")

    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(plan.processes)
    results = ctx.Queue()
    connections.close_all()  # nothing open across the fork
    caches.close_all()
    t0 = time.perf_counter()
    procs = [
        ctx.Process(target=_racer, args=(w, plan, barrier, results), name=f"racer-{w}")
        for w in range(plan.processes)
    ]
    for p in procs:
        p.start()
    outs = []
    for _ in procs:
        outs.append(results.get(timeout=900))
    for p in procs:
        p.join(timeout=30)
    elapsed = time.perf_counter() - t0
    fatal = [o["fatal"] for o in outs if "fatal" in o]
    if fatal:
        print("  a racing process failed:\n" + fatal[0], flush=True)
    records = [r for o in outs for r in o["records"]]
    timed = [o for o in outs if "start" in o]
    wall = max(o["end"] for o in timed) - min(o["start"] for o in timed) if timed else elapsed

    with connection.cursor() as cursor:
        cursor.execute(DOUBLE_BOOKING_SQL)
        overlaps, overlap_nodes = cursor.fetchone()
    # What the attempts say they booked, against what the database holds.
    said_hold = sum(r.get("held", 0) for r in records if r["path"] == "hold")
    said_order = sum(r.get("held", 0) for r in records if r["path"] == "order")
    ordered_groups = Order.objects.exclude(reservation_group=None).values("reservation_group")
    race_resv = Reservation.objects.filter(owner_ref__startswith="bench-race:") | (
        Reservation.objects.filter(group__in=ordered_groups)
    )
    in_db_hold = Reservation.objects.filter(owner_ref__startswith="bench-race:", status="hold")
    in_db_order = Reservation.objects.filter(group__in=ordered_groups, status="hold")
    elsewhere = race_resv.exclude(node_id__in=fleet.last_node_ids).count()
    stray_quotes = Quote.objects.exclude(status="accepted").count()
    orders = Order.objects.count()

    by = Counter((r["path"], r["outcome"]) for r in records)
    refusals = Counter(r["detail"] for r in records if r["outcome"] == "refused")
    errors = [r for r in records if r["outcome"] == "error"]
    successes = sum(1 for r in records if r["outcome"] == "success")
    ms = [r["ms"] for r in records]
    print(
        f"  {len(records)} attempts by {plan.processes} processes in {wall:.2f} s "
        f"({len(records) / wall:.1f}/s; {elapsed:.2f} s with start-up): "
        f"{successes} booked, {sum(refusals.values())} refused, {len(errors)} errors",
        flush=True,
    )
    for path in ("hold", "order"):
        n = sum(v for (p, _o), v in by.items() if p == path)
        if n:
            path_ms = [r["ms"] for r in records if r["path"] == path]
            print(
                f"  {path:5} path: {n} attempts, {by[(path, 'success')]} booked, "
                f"{by[(path, 'refused')]} refused, {by[(path, 'error')]} errors; "
                f"latency {summary(path_ms)}"
            )
    for detail, n in refusals.most_common():
        print(f"    refused {n}×: {detail}")
    for detail, n in Counter(r["detail"] for r in errors).most_common():
        print(f"    ERROR {n}×: {detail}")
    if errors:
        print("    first error's traceback:\n" + errors[0]["traceback"])
    print(
        f"  overlapping active reservations: {overlaps} (on {overlap_nodes} nodes); "
        f"holds in the database {in_db_hold.count()} (attempts say {said_hold}), "
        f"order holds {in_db_order.count()} (attempts say {said_order}), {orders} orders, "
        f"{stray_quotes} quotes left unaccepted, {elsewhere} bookings off the last nodes",
        flush=True,
    )
    return {
        "attempts": len(records),
        "successes": successes,
        "refusals": sum(refusals.values()),
        "errors": len(errors),
        "double_bookings": overlaps,
        "attempts_per_s": round(len(records) / wall, 2),
        "race_wall_s": round(wall, 3),
        "processes": plan.processes,
        "attempt_p50_ms": round(median(ms), 2) if ms else None,
        "attempt_p90_ms": round(percentile(ms, 90), 2) if ms else None,
        "race_paths": {
            path: {outcome: by[(path, outcome)] for outcome in ("success", "refused", "error")}
            for path in ("hold", "order")
        },
        "refusal_kinds": dict(refusals.most_common()),
        "error_kinds": dict(Counter(r["detail"] for r in errors).most_common()),
        "held_mismatch": abs(in_db_hold.count() - said_hold)
        + abs(in_db_order.count() - said_order),
        "bookings_off_last_nodes": elsewhere,
        "stray_quotes": stray_quotes,
        "fatal_processes": len(fatal),
    }


# --- the instant-quote page ------------------------------------------------------------


def _hello(request: Any) -> Any:
    from django.http import HttpResponse

    return HttpResponse("hello")


def _bench_urlconf() -> str:
    """The project's URLs plus ``/<lang>/bench-hello/``, as a module made at run time."""
    from django.conf.urls.i18n import i18n_patterns
    from django.urls import path

    import portal.urls

    name = "bench_ordering_urls"
    module = types.ModuleType(name)
    module.urlpatterns = [  # type: ignore[attr-defined]
        *portal.urls.urlpatterns,
        *i18n_patterns(path("bench-hello/", _hello, name="bench_hello")),
    ]
    sys.modules[name] = module
    return name


def _page_params(site_code: str, **changes: str) -> dict[str, str]:
    from billing.pricing.periods import site_today
    from inventory.models import Site

    start = site_today(Site.objects.get(code=site_code)) + PAGE_START_IN
    return {**PAGE_PARAMS, "site": site_code, "start_date": start.isoformat(), **changes}


def _time_pair(
    client: Any,
    page: tuple[str, dict],
    floor: tuple[str, dict],
    *,
    runs: int,
    warmup: int,
    before_page: Any = None,
) -> tuple[list[float], list[float], list[float]]:
    """Milliseconds of ``runs`` GETs of each, alternating (drift hits both alike), and the
    page's time in ``cursor.execute`` per GET (queries and their results' transfer).
    ``before_page``: called (untimed) before each GET of the page."""
    from django.db import connection

    page_ms: list[float] = []
    floor_ms: list[float] = []
    sql_ms: list[float] = []
    in_sql = [0]

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        t0 = time.perf_counter_ns()
        try:
            return execute(sql, params, many, context)
        finally:
            in_sql[0] += time.perf_counter_ns() - t0

    with connection.execute_wrapper(timed):
        for i in range(warmup + runs):
            for (url, params), sink in ((page, page_ms), (floor, floor_ms)):
                if sink is page_ms and before_page is not None:
                    before_page()
                in_sql[0] = 0
                t0 = time.perf_counter_ns()
                response = client.get(url, params)
                dt = (time.perf_counter_ns() - t0) / 1e6
                if response.status_code != 200:
                    raise SystemExit(f"GET {url} answered {response.status_code}")
                if i >= warmup:
                    sink.append(dt)
                    if sink is page_ms:
                        sql_ms.append(in_sql[0] / 1e6)
    return page_ms, floor_ms, sql_ms


def _count_queries(client: Any, url: str, params: dict) -> tuple[int, str, list[str]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, params)
    assert response.status_code == 200, response.status_code
    return len(ctx), response.content.decode(), [q["sql"] for q in ctx.captured_queries]


def _measured(
    label: str, prefix: str, queries: int, timings: tuple[list[float], list[float], list[float]]
) -> dict[str, Any]:
    """Print one case's times (page, hello world, SQL) and return its ``prefix_*`` keys."""
    page_ms, floor_ms, sql_ms = timings
    print(f"  {label}: {queries} queries")
    print(f"    configure:   {summary(page_ms)}")
    print(f"    hello world: {summary(floor_ms)}")
    print(f"    configure's time in SQL: {summary(sql_ms)}")
    return {
        f"{prefix}_p50_ms": round(median(page_ms), 2),
        f"{prefix}_ratio": round(median(page_ms) / median(floor_ms), 2),
        f"{prefix}_queries": queries,
        f"{prefix}_sql_p50_ms": round(median(sql_ms), 2),
    }


def measure_page(*, runs: int, warmup: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client, override_settings
    from django.urls import reverse
    from django.utils import translation

    out: dict[str, Any] = {}
    with override_settings(ROOT_URLCONF=_bench_urlconf()), translation.override("en"):
        url, hello = reverse("configure"), reverse("bench_hello")
        placeable = _page_params("SZ")
        short = _page_params("HK")  # 16 asked, at most 8 free: alternatives
        customer = Client()
        customer.force_login(get_user_model().objects.get(username="customer"))
        anonymous = Client()

        # The first GET of a process loads the sites, node types and price books
        # (billing.shop_data, kept until they change); the pages after it are measured.
        first_queries, _html, _sqls = _count_queries(customer, url, placeable)
        print(f"  first GET of the process (shop data loaded): {first_queries} queries")
        queries, html, sqls = _count_queries(customer, url, placeable)
        if '<section class="placement">' not in html:
            raise SystemExit("the configure page shows no placement for 16 SZ H100 nodes")
        print(f"  configure ({url}?{'&'.join(f'{k}={v}' for k, v in placeable.items())})")
        print(f"  logged in, placeable: {queries} queries")
        for sql in sqls:
            print(f"    {sql[:150]}…")
        page_ms, floor_ms, sql_ms = _time_pair(
            customer, (url, placeable), (hello, {}), runs=runs, warmup=warmup
        )
        print(f"    configure:   {summary(page_ms)}")
        print(f"    hello world: {summary(floor_ms)}")
        print(f"    configure's time in SQL: {summary(sql_ms)}")
        p50, floor_p50 = median(page_ms), median(floor_ms)
        out.update(
            p50_ms=round(p50, 2),
            p90_ms=round(percentile(page_ms, 90), 2),
            min_ms=round(min(page_ms), 2),
            floor_p50_ms=round(floor_p50, 3),
            ratio=round(p50 / floor_p50, 2),
            queries=queries,
            queries_first_get=first_queries,
            sql_p50_ms=round(median(sql_ms), 2),
            page_runs=runs,
        )

        # The same configuration computed each time, as a configuration asked for the
        # first time is (the parts kept per configuration are not read: a new
        # availability generation before each GET).
        from inventory import availability_generation

        computed_ms, computed_floor_ms, computed_sql_ms = _time_pair(
            customer,
            (url, placeable),
            (hello, {}),
            runs=runs,
            warmup=warmup,
            before_page=availability_generation.forget,
        )
        availability_generation.forget()
        computed_queries, _html, _sqls = _count_queries(customer, url, placeable)
        out.update(
            _measured(
                "logged in, placeable, computed (not kept)",
                "computed",
                computed_queries,
                (computed_ms, computed_floor_ms, computed_sql_ms),
            )
        )

        anon_queries, _html, _sqls = _count_queries(anonymous, url, placeable)
        anon_ms, anon_floor_ms, _sql = _time_pair(
            anonymous, (url, placeable), (hello, {}), runs=runs, warmup=warmup
        )
        print(f"  anonymous, placeable: {anon_queries} queries")
        print(f"    configure:   {summary(anon_ms)}")
        print(f"    hello world: {summary(anon_floor_ms)}")
        out.update(
            anon_p50_ms=round(median(anon_ms), 2),
            anon_floor_p50_ms=round(median(anon_floor_ms), 3),
            anon_ratio=round(median(anon_ms) / median(anon_floor_ms), 2),
            anon_queries=anon_queries,
        )

        short_queries, html, _sqls = _count_queries(customer, url, short)
        short_ms, short_floor_ms, short_sql_ms = _time_pair(
            customer, (url, short), (hello, {}), runs=runs, warmup=warmup
        )
        out.update(
            _measured(
                "logged in, 16 HK H100 (not placeable, alternatives)",
                "short",
                short_queries,
                (short_ms, short_floor_ms, short_sql_ms),
            )
        )
        out["page_goal_met"] = bool(
            out["queries"] <= PAGE_QUERIES_GOAL
            and out["computed_queries"] <= PAGE_QUERIES_GOAL
            and out["ratio"] <= PAGE_RATIO_GOAL
        )
    return out


# --- main ------------------------------------------------------------------------------


def goal(name: str, value: float, limit: float, *, exact: bool = False) -> str:
    ok = value == limit if exact else value <= limit
    want = f"= {limit:g}" if exact else f"≤ {limit:g}"
    return f"  {name}: {value:g} (goal {want}) {'ok' if ok else 'MISSED'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000, help="nodes in all")
    parser.add_argument("--processes", type=int, default=32)
    parser.add_argument("--attempts", type=int, default=500, help="attempts in all")
    parser.add_argument(
        "--order-share",
        type=float,
        default=0.2,
        help="share of the attempts made as whole self-service orders (0 for bare holds)",
    )
    parser.add_argument("--runs", type=int, default=30, help="timed GETs of each page (≥ 30)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--solo-attempts",
        type=int,
        default=None,
        help="attempts of the one-client race (default: --attempts; 0 skips it)",
    )
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--skip-page", action="store_true", help="only the race")
    parser.add_argument("--skip-race", action="store_true", help="only the page")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args(argv)
    if args.solo_attempts is None:
        args.solo_attempts = args.attempts

    # The after-commit Celery tasks of a sent quote (PDF, email) go to an in-memory broker
    # with no worker: never to a real queue, where a worker would look for them in
    # another database.
    os.environ["CELERY_BROKER_URL"] = "memory://localhost/"
    os.environ["CELERY_RESULT_BACKEND"] = "cache+memory://"
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
    # Card orders need card payment configured (offline keys: no call reaches Stripe when
    # an order is placed), and the race measures contention, not the per-organisation
    # hold limits (one organisation places every order here).
    os.environ.setdefault("STRIPE_SECRET_KEY", "sk_test_bench_offline")
    os.environ.setdefault("STRIPE_PUBLISHABLE_KEY", "pk_test_bench_offline")
    for name in (
        "HOLD_LIMIT_UNPAID_ORDERS",
        "HOLD_LIMIT_HELD_NODES",
        "HOLD_LIMIT_UNPAID_ORDERS_UNVERIFIED",
        "HOLD_LIMIT_HELD_NODES_UNVERIFIED",
    ):
        os.environ.setdefault(name, "1000000")

    url = bench_database_url_for("ordering")
    started = time.perf_counter()
    print(f"bench database: {url.rsplit('@', 1)[-1]}", flush=True)
    recreate_database(url)
    out: dict[str, Any] = {}
    try:
        setup_django(url)
        from django.core.management import call_command
        from django.db import connections

        timings: dict[str, float] = {}
        with stopwatch("migrate", timings):
            call_command("migrate", verbosity=0)
        with stopwatch("build", timings):
            fleet = build_fleet(total_nodes=args.nodes, seed=args.seed)
        print(
            f"  {fleet.nodes:,} nodes ({fleet.generated_nodes:,} generated), "
            f"{fleet.reservations:,} reservations; {fleet.group_nodes:,} {CONTESTED_TYPE} "
            f"at {CONTESTED_SITE}, {LAST_NODES} of them free over "
            f"{fleet.period_start:%Y-%m-%d %H:%M %Z} + {PERIOD_DAYS} days; "
            f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
            flush=True,
        )
        main_db = url.rsplit("/", 1)[-1]
        if args.skip_race:
            args.solo_attempts = 0
        if args.solo_attempts:
            # The same fleet for one client alone: a copy of the database as built, so
            # both races start from the same bookings and the same 8 free nodes.
            solo_db = f"{main_db}_solo"
            connections.close_all()
            with stopwatch("copy for the solo race", timings):
                clone_database(url, solo_db)
            print(
                f"[race, one client] 1 process, {args.solo_attempts} attempts, "
                f"{args.order_share:.0%} as self-service orders",
                flush=True,
            )
            try:
                solo = race(
                    RacePlan(
                        fleet=fleet,
                        processes=1,
                        attempts=args.solo_attempts,
                        order_share=args.order_share,
                        seed=args.seed,
                        database=solo_db,
                    )
                )
            finally:
                _use_database(main_db)
                connections.close_all()
                drop_database(url.rsplit("/", 1)[0] + "/" + solo_db)
            out.update({f"{k}_1": v for k, v in solo.items() if k in SOLO_KEYS})
        if not args.skip_race:
            print(
                f"[race] {args.processes} processes, {args.attempts} attempts, "
                f"{args.order_share:.0%} as self-service orders",
                flush=True,
            )
            plan = RacePlan(
                fleet=fleet,
                processes=args.processes,
                attempts=args.attempts,
                order_share=args.order_share,
                seed=args.seed,
                database=main_db,
            )
            out.update(race(plan))
        if "attempts_per_s_1" in out:
            out["scaling_ratio"] = round(out["attempts_per_s"] / out["attempts_per_s_1"], 2)
            out["scaling_goal_met"] = bool(
                out["scaling_ratio"] >= SCALING_GOAL
                and out["double_bookings"] == 0
                and out["double_bookings_1"] == 0
            )
        if not args.skip_page:
            print(f"[instant quote] {fleet.nodes:,} nodes", flush=True)
            out.update(measure_page(runs=args.runs, warmup=args.warmup))
        out.update(
            nodes=fleet.nodes,
            reservations=fleet.reservations,
            last_nodes=LAST_NODES,
            order_share=args.order_share,
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
    print("goals:")
    if "double_bookings" in out:
        print(goal("double_bookings", out["double_bookings"], 0, exact=True))
        print(goal("errors", out["errors"], 0, exact=True))
    if "scaling_ratio" in out:
        print(goal("double_bookings_1", out["double_bookings_1"], 0, exact=True))
        print(goal("errors_1", out["errors_1"], 0, exact=True))
        print(
            f"  scaling_ratio: {out['scaling_ratio']:g} (attempts_per_s "
            f"{out['attempts_per_s']:g} with {out['processes']} clients / attempts_per_s_1 "
            f"{out['attempts_per_s_1']:g} alone; goal ≥ {SCALING_GOAL:g}) "
            f"{'ok' if out['scaling_ratio'] >= SCALING_GOAL else 'MISSED'}"
        )
    if "ratio" in out:
        print(goal("ratio", out["ratio"], PAGE_RATIO_GOAL))
        print(goal("queries", out["queries"], PAGE_QUERIES_GOAL))
        print(goal("computed_queries", out["computed_queries"], PAGE_QUERIES_GOAL))
        print(f"  computed_ratio: {out['computed_ratio']:g} (no goal: computed afresh)")
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
