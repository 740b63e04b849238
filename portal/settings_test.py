"""Settings for the test suite: the production code path against PostgreSQL and Redis.

``make test`` (and plain ``pytest``) use this module; each default can be overridden
from the environment (``DATABASE_URL``, ``REDIS_URL``).
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key-not-for-production-9f3b2c1d8e7a6")
os.environ.setdefault("DJANGO_SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")  # the suite's own database
os.environ.setdefault("PORTAL_VAR_DIR", "/tmp/gpu-portal-test-var")  # noqa: S108

from portal.settings import *  # noqa: F403

# In-process tests read ``mail.outbox``; a worker process started by a test writes its
# emails as files where the test can count them (TEST_EMAIL_FILE_PATH).
if os.environ.get("TEST_EMAIL_FILE_PATH"):
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = os.environ["TEST_EMAIL_FILE_PATH"]
else:
    EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
CELERY_TASK_ALWAYS_EAGER = False
# seed_demo's signed contract costs two PDF renderings: only the tests that want it.
PORTAL_SEED_DEMO_CONTRACT = False
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
