"""``manage.py celery_worker PROFILE``: become the Celery worker of that profile
(``portal.workers``: its queues, pool and concurrency)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from portal import workers


class Command(BaseCommand):
    help = "Run the Celery worker of a profile: " + ", ".join(workers.profiles())

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("profile", help="one of: " + ", ".join(workers.profiles()))
        parser.add_argument(
            "--concurrency",
            type=int,
            default=int(os.environ.get("CELERY_WORKER_CONCURRENCY", "0")) or None,
            help="child processes (default: the profile's; env CELERY_WORKER_CONCURRENCY)",
        )
        parser.add_argument(
            "--print", action="store_true", help="print the celery command, do not run it"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        profile = workers.profiles().get(options["profile"])
        if profile is None:
            raise CommandError(
                f"Unknown worker profile {options['profile']!r}; "
                f"choose one of: {', '.join(workers.profiles())}"
            )
        argv = [sys.executable, "-m", "celery", *workers.celery_argv(
            profile, concurrency=options["concurrency"]
        )]  # fmt: skip
        if options["print"]:
            self.stdout.write(" ".join(argv))
            return
        if settings.PORTAL_WORKER_METRICS_PORT:
            # The prefork children's task metrics, added up by the worker's metrics port.
            os.environ.setdefault(
                "PROMETHEUS_MULTIPROC_DIR",
                str(Path(settings.VAR_DIR) / f"metrics-worker-{profile.name}"),
            )
            folder = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
            shutil.rmtree(folder, ignore_errors=True)  # this worker's own, from its last run
            folder.mkdir(parents=True, exist_ok=True)
        sys.stdout.flush()
        os.execv(sys.executable, argv)  # noqa: S606 - systemd signals reach celery itself
