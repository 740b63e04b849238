"""Shared helpers for the benchmarks: a throw-away PostgreSQL database, Django setup on
it, COPY loading and small statistics (median, percentiles, timing loops).

The benchmark database is always a separate one (``portal_bench`` unless ``DATABASE_URL``
names a database whose name contains ``bench``): it is dropped and created on start and
dropped at the end, so it never touches the development or test databases. Only the
server part (user, password, host, port) of ``DATABASE_URL`` is taken otherwise.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/portal_bench"
DEFAULT_DB_NAME = "portal_bench"


def bench_database_url() -> str:
    """The URL of the benchmark database: the server from ``DATABASE_URL`` (if set), and a
    database name that contains ``bench`` (so that dropping it can never hit real data)."""
    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise SystemExit(f"DATABASE_URL must point at PostgreSQL, not {parts.scheme!r}")
    name = parts.path.lstrip("/")
    if "bench" not in name:
        name = DEFAULT_DB_NAME
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def _maintenance_conninfo(url: str) -> tuple[str, str]:
    """``(conninfo of the server's 'postgres' database, benchmark database name)``."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    scheme = "postgresql"
    server = urlunsplit((scheme, parts.netloc, "/postgres", parts.query, ""))
    return server, name


def recreate_database(url: str) -> None:
    server, name = _maintenance_conninfo(url)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def clone_database(url: str, name: str) -> None:
    """``CREATE DATABASE name TEMPLATE <url's database>``: a file-level copy of a built
    benchmark database (nothing may be connected to it meanwhile). ``name`` must contain
    ``bench``; it is dropped first if it exists."""
    if "bench" not in name or not name.isidentifier():
        raise ValueError(f"not a benchmark database name: {name!r}")
    server, source = _maintenance_conninfo(url)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(source)
            )
        )


def drop_database(url: str) -> None:
    server, name = _maintenance_conninfo(url)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def setup_django(url: str) -> None:
    """Point Django (``portal.settings.test``) at ``url`` and set it up."""
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings.test"
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()


@contextmanager
def bench_database(
    url: str, *, keep: bool = False, timings: dict[str, float] | None = None
) -> Iterator[str]:
    """A benchmark's own database for the ``with`` block: ``url`` created afresh, Django
    set up on it and migrated (timed as ``migrate``, into ``timings`` when given);
    afterwards its connections closed and the database dropped, unless ``keep``. Yields
    ``url``."""
    print(f"bench database: {url.rsplit('@', 1)[-1]}", flush=True)
    recreate_database(url)
    try:
        setup_django(url)
        from django.core.management import call_command
        from django.db import connections

        try:
            with stopwatch("migrate", timings):
                call_command("migrate", verbosity=0)
            yield url
        finally:
            connections.close_all()
    finally:
        if keep:
            print(f"kept database {url.rsplit('/', 1)[-1]}")
        else:
            drop_database(url)


def _text_defaults(table: str, columns: list[str]) -> dict[str, str]:
    """``{column: default}`` of the model's NOT NULL text columns missing from ``columns``
    (fields added since a benchmark was written, e.g. a blank ``CharField``)."""
    from django.apps import apps
    from django.db import models

    model = next((m for m in apps.get_models() if m._meta.db_table == table), None)
    if model is None:
        return {}
    out = {}
    for f in model._meta.concrete_fields:
        if f.column in columns or f.null or not isinstance(f, models.CharField | models.TextField):
            continue
        default = f.get_default()
        if isinstance(default, str) and not any(c in default for c in "\t\n\\"):
            out[f.column] = default
    return out


def copy_rows(table: str, columns: Iterable[str], lines: Iterable[str]) -> None:
    """``COPY table (columns) FROM STDIN`` of tab-separated text lines (``\\N`` is NULL).

    The values must not contain tabs, newlines or backslashes (the generators' are plain).
    """
    from django.db import connection

    columns = list(columns)
    fill = _text_defaults(table, columns)
    if fill:  # NOT NULL text columns the caller does not give: their model default
        columns += list(fill)
        tail = "\t" + "\t".join(fill.values())
        lines = (line + tail for line in lines)
    cols = ", ".join(connection.ops.quote_name(c) for c in columns)
    stmt = f"COPY {connection.ops.quote_name(table)} ({cols}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(stmt) as copy:
        buf: list[str] = []
        for line in lines:
            buf.append(line)
            if len(buf) >= 20_000:
                copy.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            copy.write("\n".join(buf) + "\n")


def reset_sequences(*tables: str) -> None:
    """Move the id sequences of ``tables`` past the ids that COPY wrote."""
    from django.apps import apps
    from django.core.management.color import no_style
    from django.db import connection

    models = [m for m in apps.get_models() if m._meta.db_table in tables]
    with connection.cursor() as cursor:
        for stmt in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(stmt)


def vacuum_analyze(*tables: str) -> None:
    """What autovacuum would have done on a settled database (statistics, visibility map)."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(table)}")


# --- statistics ------------------------------------------------------------------------


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def percentile(values: Iterable[float], p: float) -> float:
    """The ``p``-th percentile (0-100), linear interpolation between closest ranks."""
    data = sorted(values)
    if not data:
        raise ValueError("no values")
    k = (len(data) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    if lo == hi:
        return data[lo]
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def time_runs(fn: Callable[[int], Any], *, runs: int, warmup: int) -> list[float]:
    """Milliseconds of ``runs`` calls ``fn(i)`` after ``warmup`` untimed ones."""
    for i in range(warmup):
        fn(-1 - i)
    out: list[float] = []
    for i in range(runs):
        t0 = time.perf_counter_ns()
        fn(i)
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def summary(ms: list[float]) -> str:
    return (
        f"p50 {median(ms):.2f} ms, p90 {percentile(ms, 90):.2f} ms, "
        f"min {min(ms):.2f} ms, max {max(ms):.2f} ms (n={len(ms)})"
    )


@contextmanager
def stopwatch(label: str, sink: dict[str, float] | None = None) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    dt = time.perf_counter() - t0
    if sink is not None:
        sink[label] = dt
    print(f"  {label}: {dt:.2f} s", flush=True)


def bench_database_url_for(suffix: str) -> str:
    """``bench_database_url()`` with ``_suffix`` added to the database name: a benchmark's
    own database, so that two benchmarks can run at once without dropping each other's."""
    if not suffix.isidentifier():
        raise ValueError(f"not a plain name: {suffix!r}")
    parts = urlsplit(bench_database_url())
    name = f"{parts.path.lstrip('/')}_{suffix}"
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
