"""The Celery workers of a production installation: one profile per kind of work, with
the pool and the concurrency that work needs (``manage.py celery_worker PROFILE``; the
systemd unit ``gpu-portal-worker@PROFILE``; README: Running in production).

Every profile uses the prefork pool: it is the pool that enforces the time limit each task
declares (an OS install is not a 300 s job; a stuck BMC call must end), and a task that
crashes or leaks takes one child process, not the worker. The concurrency follows what the
work waits on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from core.queues import CeleryQueue


@dataclass(frozen=True)
class WorkerProfile:
    name: str
    queues: tuple[str, ...]
    concurrency: int
    #: A child is replaced after this many tasks (0: never).
    max_tasks_per_child: int
    why: str


def _cores() -> int:
    return os.cpu_count() or 1


def profiles() -> dict[str, WorkerProfile]:
    cores = _cores()
    table = [
        WorkerProfile(
            "documents",
            (CeleryQueue.DOCUMENTS.value,),
            cores,
            100,
            "WeasyPrint renders on the CPU (one child per core) and grows with each "
            "render; a child is replaced every 100 documents",
        ),
        WorkerProfile(
            "provisioning",
            (CeleryQueue.PROVISIONING.value,),
            max(8, 2 * cores),
            0,
            "steps wait on BMCs and installers, seldom on the CPU: many at once",
        ),
        WorkerProfile(
            "validation",
            (CeleryQueue.VALIDATION.value,),
            max(2, cores),
            0,
            "the node agent runs on the nodes over SSH (waiting) or, for simulated nodes, "
            "beside the worker on its CPU: one per core",
        ),
        WorkerProfile(
            "default",
            (CeleryQueue.DEFAULT.value, CeleryQueue.BILLING.value),
            4,
            0,
            "emails, webhooks, Stripe, sweeps: short tasks that wait on the network",
        ),
        WorkerProfile(
            "all",
            tuple(queue.value for queue in CeleryQueue),
            max(2, cores),
            100,
            "every queue in one worker: a small installation on one host",
        ),
    ]
    return {profile.name: profile for profile in table}


def celery_argv(profile: WorkerProfile, *, concurrency: int | None = None) -> list[str]:
    """The ``celery`` arguments (after ``python -m celery``) of a worker of ``profile``."""
    argv = [
        "-A", "portal", "worker",
        "-Q", ",".join(profile.queues),
        "-P", "prefork",
        "-c", str(concurrency or profile.concurrency),
        "-n", f"{profile.name}@%h",
        "--loglevel=INFO",
    ]  # fmt: skip
    if profile.max_tasks_per_child:
        argv += ["--max-tasks-per-child", str(profile.max_tasks_per_child)]
    return argv
