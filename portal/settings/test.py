"""Settings for the test suite: the production code path against PostgreSQL and Redis.

``make test`` (and plain ``pytest``) use this module; its defaults for the environment
(``DATABASE_URL``, ``REDIS_URL``, ...) are ``portal.settings.test_environment.DEFAULTS``, set
before the settings read them, and each can be overridden from the environment.
"""

import os

from portal.settings import *  # noqa: F403
from portal.settings.base import env

# In-process tests read ``mail.outbox``; a worker process started by a test writes its
# emails as files where the test can count them (TEST_EMAIL_FILE_PATH).
if os.environ.get("TEST_EMAIL_FILE_PATH"):
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = os.environ["TEST_EMAIL_FILE_PATH"]
else:
    EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
CELERY_TASK_ALWAYS_EAGER = False
# A commit returns without waiting for its WAL to reach the disk (PostgreSQL's
# synchronous_commit, per connection: the suite's, its workers' and servers'). What
# another connection sees is the same; only a crash of the server could lose the last
# fraction of a second, which no test does. A commit waited ~2.5 ms for the disk here,
# and the transactional tests and their workers commit thousands of times.
if "postgresql" in DATABASES["default"]["ENGINE"]:  # noqa: F405
    _options = DATABASES["default"].setdefault("OPTIONS", {})  # noqa: F405
    _options["options"] = f"{_options.get('options', '')} -c synchronous_commit=off".strip()
# seed_demo's signed contract costs two PDF renderings: only the tests that want it.
PORTAL_SEED_DEMO_CONTRACT = False
# Nor its running order (a paid order the workers of some tests would provision).
PORTAL_SEED_DEMO_RUNNING_ORDER = False
# Argon2 still, at minimal cost: the suite creates many users.
PASSWORD_HASHERS = [
    "portal.hashers.CheapArgon2PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
]

# A worker started by a test with a short visibility timeout also looks for abandoned
# messages every second (kombu's default is about every 100 s).
if os.environ.get("PORTAL_BROKER_VISIBILITY_TIMEOUT"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        **CELERY_BROKER_TRANSPORT_OPTIONS,  # noqa: F405
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    }

# Payment tests run provisioning_start eagerly: by default it leaves the paid order as it
# is; provisioning tests start runs themselves (or set PORTAL_PROVISIONING_AUTOSTART=1 for
# a worker). Simulated hardware takes no time here.
PORTAL_PROVISIONING_AUTOSTART = env.bool("PORTAL_PROVISIONING_AUTOSTART", default=False)
PORTAL_SIMULATED_TIME_SCALE = env.float("PORTAL_SIMULATED_TIME_SCALE", default=0.0)

# The end-to-end validation tests inject torch's GEMM/copy figures (no GPU here).
VALIDATION_ALLOW_INJECTED_FIGURES = True

# Contracts: demo signing material (a CA and a seal per seller entity) is made on first
# use in the test's own var dir; tests that check timestamps start a local TSA.
PORTAL_SIGNING_CREATE_DEMO_KEYS = True
PORTAL_SIGNING_TSA_URL = ""
