"""The test suite's environment, prepared before any settings module reads it.

``portal.settings`` calls :func:`prepare` when ``DJANGO_SETTINGS_MODULE`` is
``portal.settings.test`` (pytest, and the Celery workers and servers tests start):

- the suite's defaults (``DATABASE_URL``, ``REDIS_URL`` …), each overridable from the
  environment;
- under pytest-xdist, each worker's own resources. pytest-django gives each worker
  (``PYTEST_XDIST_WORKER``: gw0, gw1 …) its own test database (``test_<name>_gw0`` …);
  everything else the suite shares on the machine is made the worker's own here: the Redis
  database (the cache, the broker the suite leaves messages on, and the database after it,
  which tests with a real Celery worker use as their scratch broker:
  ``tests/integration/workers.py``) and the var directory (signing key, files). Worker
  ``gwN`` takes Redis databases ``base + 2N`` and ``base + 2N + 1`` (modulo 16), ``base``
  being ``REDIS_URL``'s. Processes that a test starts inherit the worker's environment,
  already prepared (``PORTAL_TEST_RESOURCES_OF`` says whose), and keep it as it is.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

DEFAULTS = {
    "DJANGO_SECRET_KEY": "test-only-secret-key-not-for-production-9f3b2c1d8e7a6",
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/portal",
    "REDIS_URL": "redis://127.0.0.1:6379/15",  # the suite's own database
    # The node agent's CPU path at small sizes: real measurements, a second or two per node.
    "VALIDATION_AGENT_SIZES": "gemm=256,copy=8M,allreduce=1M",
    "PORTAL_VAR_DIR": "/tmp/gpu-portal-test-var",  # noqa: S108
}
REDIS_DATABASES = 16  # Redis's default ``databases``


def own_redis_url(url: str, worker: int) -> str:
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base + 2 * worker) % REDIS_DATABASES}"))


def _own_resources(worker_id: str) -> None:
    worker = int(worker_id.removeprefix("gw"))
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:
        os.environ["REDIS_URL"] = own_redis_url(redis_url, worker)
        if os.environ.get("CELERY_BROKER_URL") == redis_url:
            os.environ["CELERY_BROKER_URL"] = os.environ["REDIS_URL"]
    for name in ("PORTAL_VAR_DIR", "DJANGO_MEDIA_ROOT"):
        if os.environ.get(name):
            os.environ[name] = f"{os.environ[name].rstrip('/')}-{worker_id}"


def prepare() -> None:
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
    worker_id = os.environ.get("PYTEST_XDIST_WORKER")
    if worker_id and os.environ.get("PORTAL_TEST_RESOURCES_OF") != worker_id:
        _own_resources(worker_id)
        os.environ["PORTAL_TEST_RESOURCES_OF"] = worker_id
