"""What "nothing lost" means after a run on the test network, read from the database host
(SQL over the network), the shared documents folder, the load balancer's log and the
workers' logs. Each function returns figures and the list of what is wrong (empty: all
good), so the test asserts on the lists and the benchmark prints the figures."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import psycopg

from tests.integration.multihost.driver import Journey, Sample

# Periodic jobs only beat sends (no request or task enqueues them too): each must run once
# per interval, whichever beat sends it.
BEAT_ONLY = (
    "outbox-relay",
    "expire-stale-holds",
    "expire-unpaid-orders",
    "provisioning-reaper",
    "provisioning-start-due",
    "low-utilisation",
)
_RECEIVED = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+): \w+/[^\]]*\] "
    r"Task ([\w.]+)\[([0-9a-f-]+)\] received",
    re.M,
)
# The same line as the production settings log it (one JSON object a line, UTC).
_RECEIVED_JSON = re.compile(
    r'^\{"event": "Task ([\w.]+)\[([0-9a-f-]+)\] received".*?'
    r'"timestamp": "(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z"',
    re.M,
)


def orders(database_url: str, journeys: list[Journey], organisations: list[int]) -> dict[str, Any]:
    """Every order a journey was told was accepted exists, once; no other order exists."""
    accepted = [j.order for j in journeys if j.order]
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT o.number, q.number FROM billing_order o"
            " JOIN billing_quote q ON q.id = o.quote_id WHERE o.organisation_id = ANY(%s)",
            [organisations],
        ).fetchall()
    numbers = [number for number, _ in rows]
    per_quote: dict[str, int] = defaultdict(int)
    for _, quote in rows:
        per_quote[quote] += 1
    problems = [f"order {n} accepted but missing" for n in sorted(set(accepted) - set(numbers))]
    problems += [
        f"order {n} exists but no journey was answered it"
        for n in sorted(set(numbers) - set(accepted))
    ]
    problems += [f"quote {q} has {c} orders" for q, c in per_quote.items() if c > 1]
    problems += [
        f"order {n} stored {numbers.count(n)} times" for n in set(numbers) if numbers.count(n) > 1
    ]
    return {"orders_accepted": len(accepted), "orders_stored": len(rows), "problems": problems}


def runs(database_url: str, order_numbers: list[str]) -> dict[str, Any]:
    """Each order's provisioning run delivered; every step of its nodes done, done once."""
    problems: list[str] = []
    with psycopg.connect(database_url) as conn:
        found = conn.execute(
            "SELECT o.number, r.id, r.status, r.launch FROM provisioning_provisioningrun r"
            " JOIN billing_order o ON o.id = r.order_id"
            " WHERE o.number = ANY(%s) AND r.kind = 'provision'",
            [order_numbers],
        ).fetchall()
        steps = conn.execute(
            "SELECT s.run_id, s.id, s.name, s.status, s.attempt,"
            " COUNT(e.id) FILTER (WHERE e.to_status = 'done')"
            " FROM provisioning_nodestep s"
            " JOIN provisioning_runnode rn ON rn.run_id = s.run_id AND rn.node_id = s.node_id"
            " LEFT JOIN provisioning_nodestepevent e ON e.step_id = s.id"
            " WHERE s.run_id = ANY(%s) AND rn.state = 'active'"
            " GROUP BY s.run_id, s.id, s.name, s.status, s.attempt",
            [[run_id for _, run_id, _, _ in found]],
        ).fetchall()
    by_order: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for number, run_id, status, launch in found:
        by_order[number].append((run_id, status, launch))
    for number in order_numbers:
        got = by_order.get(number, [])
        if len(got) != 1:
            problems.append(f"order {number}: {len(got)} provisioning runs")
        problems += [f"order {number}: run {r} is {s}" for r, s, _ in got if s != "delivered"]
    per_run: dict[int, int] = defaultdict(int)
    for run_id, step_id, name, status, _attempt, done in steps:
        per_run[run_id] += 1
        if status != "done":
            problems.append(f"run {run_id}: step {name} ({step_id}) is {status}")
        if done != 1:
            problems.append(f"run {run_id}: step {name} ({step_id}) done {done} times")
    problems += [f"run {r}: no steps" for _, r, _, _ in found if not per_run.get(r)]
    return {
        "runs": len(found),
        "runs_delivered": sum(1 for *_, s, _ in found if s == "delivered"),
        "runs_relaunched": sum(1 for *_, launch in found if launch > 1),
        "steps": len(steps),
        "steps_resumed": sum(1 for s in steps if s[4] > 1),
        "steps_done_twice": sum(1 for s in steps if s[5] > 1),
        "problems": problems,
    }


_DOCUMENTS = {
    # table, owner column, the owners' numbers -> ids
    "quote": (
        "billing_quotedocument",
        "quote_id",
        "SELECT q.id, q.number FROM billing_quote q JOIN billing_order o ON o.quote_id = q.id"
        " WHERE o.number = ANY(%s)",
    ),
    "invoice": (
        "billing_invoicedocument",
        "invoice_id",
        "SELECT i.id, i.number FROM billing_invoice i JOIN billing_order o ON o.id = i.order_id"
        " WHERE o.number = ANY(%s) AND i.status <> 'draft'",
    ),
    "acceptance report": (
        "provisioning_validationreport",
        "run_id",
        # The acceptance run of each order (a validation run, whose ids are not the
        # provisioning run's: a database that served other tests first shows the difference).
        "SELECT v.id, o.number FROM provisioning_validationrun v"
        " JOIN billing_order o ON o.id = v.order_id"
        " WHERE o.number = ANY(%s) AND v.profile IN ('acceptance', 'burn_in')"
        " AND v.status IN ('passed', 'failed')",
    ),
}


def documents(database_url: str, order_numbers: list[str], media_root: Path) -> dict[str, Any]:
    """Each order's quote, invoices and acceptance report has a stored PDF whose file is in
    the shared documents folder with the SHA-256 recorded."""
    problems: list[str] = []
    count = 0
    with psycopg.connect(database_url) as conn:
        for kind, (table, column, owners_sql) in _DOCUMENTS.items():
            owners = dict(conn.execute(owners_sql, [order_numbers]).fetchall())
            stored = conn.execute(
                f"SELECT {column}, file, sha256 FROM {table} WHERE {column} = ANY(%s)",  # noqa: S608
                [list(owners)],
            ).fetchall()
            have = {owner for owner, _, _ in stored}
            problems += [f"{kind} of {owners[o]}: no document" for o in owners if o not in have]
            for owner, name, sha256 in stored:
                count += 1
                path = media_root / name
                if not path.is_file():
                    problems.append(f"{kind} of {owners[owner]}: {name} missing from storage")
                elif hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
                    problems.append(f"{kind} of {owners[owner]}: {name} differs from its SHA-256")
    return {"documents": count, "problems": problems}


def requests(samples: list[Sample], lb_log: list[dict[str, Any]]) -> dict[str, Any]:
    """Every request that failed is one the load balancer could not retry: it ended it
    itself (the server died after the request was sent, or no server was left) and says so
    in its log. An error answered by the portal (a 5xx from a web host) or a request the
    load balancer never saw is a problem."""
    by_id = {entry["request_id"]: entry for entry in lb_log}
    problems: list[str] = []
    unretryable = 0
    for sample in (s for s in samples if s.failed):
        entry = by_id.get(sample.request_id)
        if entry is None:
            problems.append(
                f"{sample.method} {sample.page}: no answer and not in the LB's log ({sample.error})"
            )
        elif entry["termination"][:1] in {"-", ""}:
            problems.append(
                f"{sample.method} {sample.page}: {entry['status']} from the portal "
                f"({entry['server']}, request {sample.request_id})"
            )
        else:
            unretryable += 1
    retried = [e for e in lb_log if e["retries"].lstrip("+") not in {"0", ""}]
    return {
        "requests": len(samples),
        "requests_failed": sum(1 for s in samples if s.failed),
        "requests_failed_lb_unretryable": unretryable,
        "requests_retried_by_lb": len(retried),
        "requests_retried_by_lb_ok": sum(1 for e in retried if 0 < e["status"] < 500),
        "problems": problems,
    }


def _received(logs: Iterable[str], zone: ZoneInfo) -> dict[str, list[float]]:
    """``{task name: [time received, ...]}`` from workers' logs (each task id once; their
    times are in the portal's TIME_ZONE, which Django makes the processes' local time)."""
    seen: dict[str, float] = {}
    names: dict[str, str] = {}
    for text in logs:
        for stamp, name, task_id in _RECEIVED.findall(text):
            when = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=zone).timestamp()
            seen.setdefault(task_id, when)
            names[task_id] = name
        for name, task_id, stamp in _RECEIVED_JSON.findall(text):
            when = datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
            seen.setdefault(task_id, when)
            names[task_id] = name
    out: dict[str, list[float]] = defaultdict(list)
    for task_id, when in seen.items():
        out[names[task_id]].append(when)
    return {name: sorted(times) for name, times in out.items()}


def beat(
    worker_logs: list[str],
    schedule: dict[str, dict[str, Any]],
    *,
    since: float,
    second_beat_from: float,
    until: float,
    time_zone: str,
) -> dict[str, Any]:
    """Each beat-only job ran once per interval: about as many times as the time from
    ``since`` to ``until`` holds intervals, and no more than that after the second beat
    was started (two beats sending would make it twice as many)."""
    received = _received(worker_logs, ZoneInfo(time_zone))
    problems: list[str] = []
    per_job: dict[str, dict[str, Any]] = {}
    doubled = 0
    for name in BEAT_ONLY:
        entry = schedule[name]
        every, times = float(entry["every"]), received.get(entry["task"], [])
        after = [t for t in times if second_beat_from <= t <= until]
        expected, expected_after = (until - since) / every, (until - second_beat_from) / every
        extra = max(0, len(after) - round(expected_after) - 1)
        per_job[name] = {
            "every_s": every,
            "runs": len(times),
            "runs_with_two_beats": len(after),
            "intervals_with_two_beats": round(expected_after, 1),
        }
        if len(after) > 1.4 * expected_after + 1:
            doubled += extra
            problems.append(
                f"beat job {name} (every {every:g} s) ran {len(after)} times in "
                f"{expected_after:.1f} intervals with two beats"
            )
        if len(times) < 0.5 * expected - 1:
            problems.append(
                f"beat job {name} ran {len(times)} times in {until - since:.0f} s "
                f"(every {every:g} s: about {expected:.0f})"
            )
    return {"beat_jobs": per_job, "beat_runs_doubled": doubled, "problems": problems}


def page_ratios(samples: list[Sample], *, floor: str = "healthz") -> dict[str, Any]:
    """p50 and p99 of each page (answered requests) over the trivial view's."""

    def pct(values: list[float], p: float) -> float:
        data = sorted(values)
        k = (len(data) - 1) * p / 100
        lo, hi = int(k), min(int(k) + 1, len(data) - 1)
        return data[lo] + (data[hi] - data[lo]) * (k - lo)

    by_page: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        if not sample.failed:
            by_page[sample.page].append(sample.ms)
    base = by_page.get(floor)
    if not base:
        raise ValueError(f"no answered {floor} requests: no floor to compare with")
    p50, p99 = pct(base, 50), pct(base, 99)
    pages = {
        page: {
            "n": len(ms),
            "p50_ms": round(pct(ms, 50), 1),
            "p99_ms": round(pct(ms, 99), 1),
            "p50_ratio": round(pct(ms, 50) / p50, 2),
            "p99_ratio": round(pct(ms, 99) / p99, 2),
        }
        for page, ms in sorted(by_page.items())
        if page != floor
    }
    return {
        "floor": {"page": floor, "n": len(base), "p50_ms": round(p50, 1), "p99_ms": round(p99, 1)},
        "pages": pages,
    }
