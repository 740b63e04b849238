"""Run the whole portal on one machine: web server, Celery worker and Celery beat.

Used by ``make run``: the embedded default (SQLite, kombu's filesystem broker, the
simulated hardware driver). Ctrl-C stops all three.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from core import queues
from portal.management.commands.seed_demo import DEMO_USERS


def portal_base_url(environ: Any, *, addr: str, port: str) -> str:
    """``PORTAL_BASE_URL`` when set, else the address this command serves on."""
    given = (environ.get("PORTAL_BASE_URL") or "").strip()
    if given:
        return given.rstrip("/")
    host = "127.0.0.1" if addr in ("0.0.0.0", "") else addr  # noqa: S104
    return f"http://{host}:{port}"


class Command(BaseCommand):
    help = "Start the web server, a Celery worker and Celery beat together (development)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default=os.environ.get("PORTAL_ADDR", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("PORTAL_PORT", "8000"))

    def handle(self, *args: Any, **options: Any) -> None:
        python = sys.executable
        beat_schedule = settings.CELERY_BEAT_SCHEDULE_FILENAME
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
