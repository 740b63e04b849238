"""The Celery workers of a production installation: one profile per kind of work, with
the pool and the concurrency that work needs (``manage.py celery_worker PROFILE``; the
systemd unit ``gpu-portal-worker@PROFILE``; README: Running in production).

The prefork pool where it can be: it is the pool that enforces the time limit each task
declares, and a task that crashes or leaks takes one child process, not the worker. The
provisioning worker is the exception: a node's steps run in one task that mostly waits on
its BMC for many minutes, so it runs a thread per node provisioned at once (threads do not
enforce Celery's time limits; those tasks bound every wait themselves: the Redfish power
timeout, the run's deadline, and beat's reaper relaunches a run whose steps stall). The
concurrency follows what the work waits on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from core.queues import CeleryQueue


@dataclass(frozen=True)
class WorkerProfile:
    name: str
    queues: tuple[str, ...]
    pool: str
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
            "prefork",
            cores,
            100,
            "WeasyPrint renders on the CPU (one child per core) and grows with each "
            "render; a child is replaced every 100 documents",
        ),
        WorkerProfile(
            "provisioning",
            (CeleryQueue.PROVISIONING.value,),
            "threads",
            64,
            0,
            "a node's steps wait on its BMC and installer for minutes, seldom on the CPU: "
            "a thread per node provisioned at once",
        ),
        WorkerProfile(
            "validation",
            (CeleryQueue.VALIDATION.value,),
            "prefork",
            max(2, cores),
            0,
            "the node agent runs on the nodes over SSH (waiting) or, for simulated nodes, "
            "beside the worker on its CPU: one per core",
        ),
        WorkerProfile(
            "default",
            (CeleryQueue.DEFAULT.value, CeleryQueue.BILLING.value),
            "prefork",
            4,
            0,
            "emails, webhooks, Stripe, sweeps: short tasks that wait on the network",
        ),
        WorkerProfile(
            "all",
            tuple(queue.value for queue in CeleryQueue),
            "prefork",
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
        "-P", profile.pool,
        "-c", str(concurrency or profile.concurrency),
        "-n", f"{profile.name}@%h",
        "--loglevel=INFO",
    ]  # fmt: skip
    if profile.max_tasks_per_child:
        argv += ["--max-tasks-per-child", str(profile.max_tasks_per_child)]
    return argv
