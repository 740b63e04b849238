"""Run the whole portal on one machine: web server, Celery worker and Celery beat.

Used by ``make run``: the embedded default (SQLite, kombu's filesystem broker, the
simulated hardware driver), plus Debian's Prometheus when it is installed (scraping the
portal's simulated exporters, targets from ``/telemetry/targets``). Ctrl-C stops all.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from core import queues
from portal import task_metrics
from portal.management.commands.seed_demo import DEMO_USERS
from provisioning.telemetry import prometheus


def portal_base_url(environ: Any, *, addr: str, port: str) -> str:
    """``PORTAL_BASE_URL`` when set, else the address this command serves on."""
    given = (environ.get("PORTAL_BASE_URL") or "").strip()
    if given:
        return given.rstrip("/")
    host = "127.0.0.1" if addr in ("0.0.0.0", "") else addr  # noqa: S104
    return f"http://{host}:{port}"


def free_port(preferred: int) -> int:
    """``preferred`` when nothing listens there, else one the system hands out."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])


class Command(BaseCommand):
    help = "Start the web server, a Celery worker and Celery beat together (development)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default=os.environ.get("PORTAL_ADDR", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("PORTAL_PORT", "8000"))

    def _prometheus_env(self) -> None:
        """A local Prometheus when Debian's binary is installed and none is configured:
        its address goes to the worker, beat and web through the environment."""
        self._prometheus_port = 0
        if os.environ.get("PORTAL_PROMETHEUS_URL") or prometheus.prometheus_binary() is None:
            return
        self._prometheus_port = free_port(settings.PORTAL_PROMETHEUS_PORT)
        os.environ["PORTAL_PROMETHEUS_URL"] = f"http://127.0.0.1:{self._prometheus_port}"

    def _start_prometheus(self, base_url: str) -> subprocess.Popen[bytes] | None:
        if not self._prometheus_port:
            if prometheus.prometheus_binary() is None:
                self.stdout.write("Prometheus is not installed: no telemetry (make system-deps).")
            return None
        proc = prometheus.prometheus_start(
            workdir=Path(settings.VAR_DIR) / "prometheus",
            port=self._prometheus_port,
            discovery_url=base_url + "/telemetry/targets",
            token=prometheus.telemetry_token(),
            scrape_s=settings.PORTAL_PROMETHEUS_SCRAPE_INTERVAL_S,
            retention=settings.PORTAL_PROMETHEUS_RETENTION,
            # The portal's own metrics beside the nodes' (README: Running in production).
            portal=prometheus.PortalScrape(
                web=[base_url.split("://", 1)[1].split("/", 1)[0]],
                token=task_metrics.metrics_token(),
                workers_discovery_url=base_url + "/metrics/targets",
            ),
        )
        self.stdout.write(f"Prometheus: http://127.0.0.1:{self._prometheus_port}/")
        return proc

    def handle(self, *args: Any, **options: Any) -> None:
        python = sys.executable
        beat_schedule = settings.CELERY_BEAT_SCHEDULE_FILENAME
        self._prometheus_env()
        commands = {
            "worker": [python, "-m", "celery", "-A", "portal", "worker", "--loglevel=INFO",
                       "--concurrency=2", "-Q", ",".join(queues.ALL), "-n", "embedded@%h"],
            "beat": [python, "-m", "celery", "-A", "portal", "beat", "--loglevel=INFO",
                     "-s", beat_schedule],
            "web": [python, "manage.py", "runserver", "--noreload",
                    f"{options['addr']}:{options['port']}"],
        }  # fmt: skip
        url = f"http://{options['addr']}:{options['port']}/"
        base_url = portal_base_url(os.environ, addr=options["addr"], port=options["port"])
        # Links in emails and PDFs point at this server (the worker renders them too),
        # unless PORTAL_BASE_URL says otherwise.
        os.environ["PORTAL_BASE_URL"] = base_url
        self.stdout.write(
            self.style.SUCCESS(f"\nGPU portal: {url}   (back office: {url}zh-hans/admin/)\n")
        )
        self.stdout.write("Demo logins (user / password):")
        for user in DEMO_USERS:
            self.stdout.write(f"  {user['username']:<9} {user['password']}")
        self.stdout.write(f"Links in emails and PDFs: {base_url}")
        self.stdout.write(
            f"Broker: {settings.CELERY_BROKER_URL}  Database: "
            f"{settings.DATABASES['default']['NAME']}\nCtrl-C stops everything.\n"
        )
        procs = {name: subprocess.Popen(cmd) for name, cmd in commands.items()}  # noqa: S603
        prometheus_proc = self._start_prometheus(base_url)
        if prometheus_proc is not None:
            procs["prometheus"] = prometheus_proc

        def stop(*_args: object) -> None:
            for p in procs.values():
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            for p in procs.values():
                try:
                    p.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                for name, p in procs.items():
                    if p.poll() is not None:
                        self.stderr.write(f"{name} exited with code {p.returncode}; stopping.")
                        raise SystemExit(p.returncode or 1)
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        finally:
            stop()
