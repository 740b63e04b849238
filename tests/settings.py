"""Settings for the test suite under pytest: ``portal.settings_test``, with each
pytest-xdist worker on resources of its own.

pytest-django gives each xdist worker (``PYTEST_XDIST_WORKER``: gw0, gw1, ...) its own
test database (``test_<name>_gw0``, ...). Everything else the suite shares on the machine
is made the worker's own here, before the settings are read: the Redis database (the
cache, the broker the suite leaves messages on, and the database after it, which tests
with a real Celery worker use as their scratch broker: ``tests/integration/workers.py``)
and the var directory (signing key, files). Worker ``gwN`` takes Redis databases
``base + 2N`` and ``base + 2N + 1`` (modulo 16), ``base`` being ``REDIS_URL``'s.

The xdist workers inherit the environment of the controlling pytest process, which has
read ``portal.settings_test`` (and so has its defaults in ``os.environ``) before it
starts them. Processes that tests start (Celery workers, servers) inherit the worker's.
"""

import os
from urllib.parse import urlsplit, urlunsplit

REDIS_DATABASES = 16  # Redis's default ``databases``


def _own_redis_url(url: str, worker: int) -> str:
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base + 2 * worker) % REDIS_DATABASES}"))


def _own_resources(worker_id: str) -> None:
    worker = int(worker_id.removeprefix("gw"))
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:
        os.environ["REDIS_URL"] = _own_redis_url(redis_url, worker)
        if os.environ.get("CELERY_BROKER_URL") == redis_url:
            os.environ["CELERY_BROKER_URL"] = os.environ["REDIS_URL"]
    for name in ("PORTAL_VAR_DIR", "DJANGO_MEDIA_ROOT"):
        if os.environ.get(name):
            os.environ[name] = f"{os.environ[name].rstrip('/')}-{worker_id}"


if os.environ.get("PYTEST_XDIST_WORKER"):
    _own_resources(os.environ["PYTEST_XDIST_WORKER"])

from portal.settings_test import *  # noqa: E402, F403
