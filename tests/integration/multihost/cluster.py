"""The portal as a provider runs it, one host per role on the test network:

========  ==============================================================================
db        PostgreSQL 15, a cluster of its own (initdb) listening on the host's address
broker    Redis: Celery's broker and result backend
cache     Redis: Django's cache (a separate server: its outage is the cache's alone)
web1/2    gunicorn serving ``portal.wsgi`` (gthread workers)
lb        HAProxy (deploy/haproxy.cfg): health checks, retries, one JSON log line a request
work1/2   a Celery worker on every queue
beat      Celery beat; ``beat2`` is where a second one is started by mistake
ops       the back office (tests/integration/multihost/ops.py): data, then finance
========  ==============================================================================

Every Django process runs ``tests.integration.multihost.settings``: the production
settings from the environment (DEBUG off, a secret key, the hosts' addresses), beat's
intervals compressed, simulated hardware under a small time scale. The documents folder
(``DJANGO_MEDIA_ROOT``) is one folder all hosts share, as an NFS mount or object store
would be.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.integration.multihost.network import Host, Network, Process

ROOT = Path(__file__).resolve().parents[3]
PG_BIN = Path("/usr/lib/postgresql/15/bin")
QUEUES = "default,provisioning,validation,documents,billing"
# Environment variables of the machine that must not reach the hosts (the test suite's own
# database, Redis, settings module...).
_PRIVATE = ("DJANGO_", "PORTAL_", "CELERY_", "DATABASE_", "REDIS_", "PYTEST", "TEST_EMAIL")


class Abort(RuntimeError):
    """Raised by a check of ``wait_for`` when waiting longer cannot help."""


def wait_for(
    what: str,
    check: Callable[[], Any],
    timeout: float,
    *,
    interval: float = 0.5,
    detail: Callable[[], str] | None = None,
) -> Any:
    """``check()``'s first truthy value within ``timeout`` s (exceptions count as not yet)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Abort:
            raise
        except Exception as error:  # not up yet
            last = error
        time.sleep(interval)
    extra = detail() if detail else ""
    raise TimeoutError(f"{what}: not within {timeout:.0f} s (last error: {last!r})\n{extra}")


def http_status(url: str, host: str, timeout: float = 5) -> int:
    request = urllib.request.Request(url, headers={"Host": host})  # noqa: S310 (http only)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


class Cluster:
    """Builds the hosts, starts their processes, and restarts or kills them on demand."""

    def __init__(
        self,
        network: Network,
        *,
        keys: int,
        schema_from: str | None = None,
        beat_scale: float = 0.05,
        time_scale: float = 0.002,
        step_limit_scale: float = 0.005,
        web_workers: int = 2,
        web_threads: int = 4,
        worker_concurrency: int = 3,
        startup_timeout: float = 300.0,
    ) -> None:
        self.net = network
        self.keys = keys
        self.schema_from = schema_from
        self.beat_scale = beat_scale
        self.web_workers, self.web_threads = web_workers, web_threads
        self.worker_concurrency = worker_concurrency
        self.startup_timeout = startup_timeout
        names = [
            "db",
            "broker",
            "cache",
            "lb",
            "web1",
            "web2",
            "work1",
            "work2",
            "beat",
            "beat2",
            "ops",
        ]
        self.hosts: dict[str, Host] = {name: network.add_host(name) for name in names}
        self.media = network.dir / "media"
        self.media.mkdir()
        self.statement = network.dir / "bank-statement.txt"
        self.ops_file = network.dir / "ops.json"
        self.migrated_file = network.dir / "migrated"
        self.pgdata = network.dir / "pgdata"
        self.lb_url = f"http://{self.addr('lb')}"
        self.database_url = f"postgres://postgres@{self.addr('db')}:5432/portal"
        self.env = self._env(time_scale=time_scale, step_limit_scale=step_limit_scale)
        self.procs: dict[str, Process] = {}

    def addr(self, host: str) -> str:
        return self.hosts[host].address

    def _env(self, *, time_scale: float, step_limit_scale: float) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(_PRIVATE)}
        web = [self.addr("lb"), self.addr("web1"), self.addr("web2")]
        broker = f"redis://{self.addr('broker')}:6379"
        return {
            **base,
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "tests.integration.multihost.settings",
            "GUNICORN_WORKERS": str(self.web_workers),
            "GUNICORN_THREADS": str(self.web_threads),
            "GUNICORN_FORWARDED_ALLOW_IPS": self.addr("lb"),
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": ",".join(web),
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": f"{broker}/0",
            "CELERY_BROKER_URL": f"{broker}/0",
            "CELERY_RESULT_BACKEND": f"{broker}/1",
            "CACHE_URL": f"redis://{self.addr('cache')}:6379/0",
            "PORTAL_METRICS_TOKEN": secrets.token_urlsafe(20),
            "DJANGO_MEDIA_ROOT": str(self.media),
            "DJANGO_STATIC_ROOT": str(self.net.dir / "static"),
            "PORTAL_SIGNING_DIR": str(self.net.dir / "signing"),
            "PORTAL_SIGNING_CREATE_DEMO_KEYS": "1",
            "PORTAL_SEED_DEMO_CONTRACT": "0",
            "PORTAL_SEED_DEMO_RUNNING_ORDER": "0",
            "PORTAL_BASE_URL": self.lb_url,
            "PORTAL_HARDWARE_DRIVER": "simulated",
            "PORTAL_SIMULATED_TIME_SCALE": str(time_scale),
            "PORTAL_SIMULATED_FAILURE_RATE": "0",
            "PORTAL_PROVISIONING_STEP_LIMIT_SCALE": str(step_limit_scale),
            "PORTAL_PROVISIONING_AUTOSTART": "1",
            "MULTIHOST_BEAT_SCALE": str(self.beat_scale),
            # Beat (redbeat) looks at its schedule every second, as the intervals are short.
            "PORTAL_BEAT_MAX_LOOP_INTERVAL_S": "1",
            # Scaled with the others: every 3 s (no Prometheus on this network: it fails
            # closed each time, as it should).
            "PORTAL_HEALTH_EVALUATE_EVERY_S": "60",
            # A run whose message died with its worker between two steps (no lease to
            # run out) is relaunched after this long without progress (15 min by default).
            "PORTAL_PROVISIONING_STALL_S": "20",
        }

    def host_env(self, host: str) -> dict[str, str]:
        var = self.net.dir / f"var-{host}"
        var.mkdir(exist_ok=True)
        return {**self.env, "PORTAL_VAR_DIR": str(var)}

    # --- the servers -------------------------------------------------------------------

    def start_database(self) -> None:
        self.pgdata.mkdir()
        shutil.chown(self.pgdata, "postgres", "postgres")
        subprocess.run(
            [
                "runuser",
                "-u",
                "postgres",
                "--",
                str(PG_BIN / "initdb"),
                "-D",
                str(self.pgdata),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "-N",
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )
        with (self.pgdata / "pg_hba.conf").open("a") as hba:  # the test network's hosts
            hba.write(f"host all all {self.net.subnet} trust\n")
        self.procs["db"] = self.hosts["db"].spawn(
            "postgres",
            [
                str(PG_BIN / "postgres"),
                "-D",
                str(self.pgdata),
                "-c",
                f"listen_addresses={self.addr('db')}",
                "-c",
                f"unix_socket_directories={self.pgdata}",
                "-c",
                "max_connections=200",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            env=self.env,
            user="postgres",
        )
        wait_for(
            "PostgreSQL on the db host",
            lambda: (
                subprocess.run(
                    ["pg_isready", "-q", "-h", self.addr("db"), "-p", "5432"], timeout=10
                ).returncode
                == 0
            ),
            60,
            detail=self.procs["db"].output,
        )
        psql = ["psql", "-h", self.addr("db"), "-U", "postgres", "-q", "-v", "ON_ERROR_STOP=1"]
        subprocess.run([*psql, "-c", "CREATE DATABASE portal"], check=True, timeout=60)
        if self.schema_from:
            # The schema (and what the data migrations wrote) of a migrated database, as
            # `migrate` leaves it: a copy takes seconds where migrating takes minutes.
            dump = subprocess.Popen(
                ["pg_dump", "--no-owner", "--no-privileges", "-d", self.schema_from],
                stdout=subprocess.PIPE,
            )
            subprocess.run(
                [*psql, "-d", "portal"],
                stdin=dump.stdout,
                check=True,
                timeout=300,
                stdout=subprocess.DEVNULL,
            )
            if dump.wait(60) != 0:
                raise RuntimeError("pg_dump of the migrated schema failed")
        else:
            self.manage("ops", "migrate", "--noinput", timeout=900)

    def start_redis(self, host: str) -> Process:
        process = self.hosts[host].spawn(
            "redis",
            [
                "redis-server",
                "--bind",
                self.addr(host),
                "--port",
                "6379",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
                "--dir",
                str(self.net.dir),
            ],
            env=self.env,
        )
        self.procs[host] = process
        import redis

        wait_for(
            f"Redis on {host}",
            lambda: redis.Redis(host=self.addr(host), socket_timeout=2).ping(),
            30,
            interval=0.2,
            detail=process.output,
        )
        return process

    def stop_redis(self, host: str) -> None:
        process = self.procs[host]
        process.signal(signal.SIGTERM)
        if process.wait(20) is None:
            process.signal(signal.SIGKILL)
            process.wait(5)

    def manage(self, host: str, *args: str, timeout: float) -> str:
        return (
            self.hosts[host]
            .run(
                [sys.executable, "manage.py", *args],
                env=self.host_env(host),
                cwd=ROOT,
                timeout=timeout,
            )
            .stdout
        )

    # --- the portal's processes ----------------------------------------------------------

    def start_ops(self) -> Process:
        self.procs["ops"] = self.hosts["ops"].spawn(
            "ops",
            [
                sys.executable,
                "-m",
                "tests.integration.multihost.ops",
                "--keys",
                str(self.keys),
                "--out",
                str(self.ops_file),
                "--statement",
                str(self.statement),
                "--migrated",
                str(self.migrated_file),
            ],
            env=self.host_env("ops"),
            cwd=ROOT,
        )
        return self.procs["ops"]

    def start_web(self, host: str) -> Process:
        """gunicorn with the production configuration (deploy/gunicorn.conf.py)."""
        env = {**self.host_env(host), "GUNICORN_BIND": f"{self.addr(host)}:8000"}
        self.procs[host] = self.hosts[host].spawn(
            "gunicorn",
            [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy" / "gunicorn.conf.py")],
            env=env,
            cwd=ROOT,
        )
        return self.procs[host]

    def web_ready(self, host: str, timeout: float) -> None:
        wait_for(
            f"gunicorn on {host}",
            lambda: http_status(f"http://{self.addr(host)}:8000/healthz", self.addr(host)) == 200,
            timeout,
            detail=lambda: self.procs[host].output()[-3000:],
        )

    def stop_web(self, host: str) -> None:
        """A graceful stop (SIGTERM: the requests in flight finish, new ones are refused)."""
        process = self.procs[host]
        process.signal(signal.SIGTERM)
        if process.wait(60) is None:
            raise TimeoutError(f"gunicorn on {host} did not stop within 60 s")

    def start_worker(self, host: str) -> Process:
        """The worker of profile ``all`` (every queue, prefork: portal/workers.py), as a
        small installation runs it on each worker host."""
        self.procs[host] = self.hosts[host].spawn(
            "celery",
            [sys.executable, "manage.py", "celery_worker", "all",
             "--concurrency", str(self.worker_concurrency)],
            env=self.host_env(host),
            cwd=ROOT,
        )  # fmt: skip
        return self.procs[host]

    def start_beat(self, host: str) -> Process:
        self.procs[host] = self.hosts[host].spawn(
            "beat",
            [sys.executable, "-m", "celery", "-A", "portal", "beat", "--loglevel=INFO"],
            env=self.host_env(host),
            cwd=ROOT,
        )
        return self.procs[host]

    def start_lb(self) -> Process:
        env = {
            **self.env,
            "PORTAL_LB_BIND": f"{self.addr('lb')}:80",
            "PORTAL_LB_HOST": self.addr("lb"),
            "PORTAL_WEB1": f"{self.addr('web1')}:8000",
            "PORTAL_WEB2": f"{self.addr('web2')}:8000",
        }
        self.procs["lb"] = self.hosts["lb"].spawn(
            "haproxy", ["haproxy", "-db", "-f", str(ROOT / "deploy" / "haproxy.cfg")], env=env
        )
        return self.procs["lb"]

    def lb_log(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.procs["lb"].output().splitlines():
            if line.startswith("{"):
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    continue
        return lines

    def lb_servers_up(self) -> set[str]:
        """The web servers that answered through the load balancer (its log)."""
        return {e["server"] for e in self.lb_log() if e["status"] == 200}

    # --- all of it ----------------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """Every server and process; returns what the back office prepared (ops.json)."""
        self.start_database()
        self.start_redis("broker")
        self.start_redis("cache")
        self.start_ops()
        self.start_lb()
        timeout = self.startup_timeout
        # The migrate step before the portal's processes.
        wait_for("the migrate step on the ops host", self.migrated_file.exists, timeout,
                 detail=lambda: self.procs["ops"].output()[-3000:])  # fmt: skip
        for host in ("web1", "web2"):
            self.start_web(host)
        for host in ("work1", "work2"):
            self.start_worker(host)
        self.start_beat("beat")
        for host in ("web1", "web2"):
            self.web_ready(host, timeout)
        for host in ("work1", "work2"):
            wait_for(
                f"the worker on {host}",
                lambda h=host: " ready." in self.procs[h].output(),
                timeout,
                detail=lambda h=host: self.procs[h].output()[-3000:],
            )
        wait_for(
            "beat",
            lambda: "beat: Starting" in self.procs["beat"].output(),
            timeout,
            detail=lambda: self.procs["beat"].output()[-3000:],
        )

        def both_behind_lb() -> bool:
            http_status(f"{self.lb_url}/healthz", self.addr("lb"))
            return self.lb_servers_up() >= {"web1", "web2"}

        wait_for(
            "both web hosts behind the load balancer",
            both_behind_lb,
            60,
            interval=0.2,
            detail=lambda: self.procs["lb"].output()[-3000:],
        )
        wait_for(
            "the back office",
            self.ops_file.exists,
            timeout,
            detail=lambda: self.procs["ops"].output()[-3000:],
        )
        return json.loads(self.ops_file.read_text())

    def check_alive(self, *names: str) -> None:
        """Raise with its log when a process that should run has exited."""
        for name in names:
            process = self.procs[name]
            if not process.running():
                raise RuntimeError(f"{name} exited:\n{process.output()[-4000:]}")
