"""The project's settings, split by concern; ``DJANGO_SETTINGS_MODULE=portal.settings`` (the
default of manage.py, wsgi, asgi and the Celery app) is all of them:

- ``base``: Django itself (apps, database, auth, languages, cache, email, security);
- ``portal``: the business settings (pricing, holds, the provider, payments, contracts);
- ``provisioning``: hardware drivers, the run's limits, the validation agent and SSH;
- ``celery``: broker, task defaults and routing, the one beat table;
- ``test``: the test suite's (``portal.settings.test``), on top of these.

Each setting, and its default, is defined in exactly one of these modules.
"""

import os

# ``portal.settings.test`` is imported after this package, so the test suite's defaults for
# the environment are set here, before the modules below read it.
_TEST_ENVIRONMENT = {
    "DJANGO_SECRET_KEY": "test-only-secret-key-not-for-production-9f3b2c1d8e7a6",
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/portal",
    "REDIS_URL": "redis://127.0.0.1:6379/15",  # the suite's own database
    # The node agent's CPU path at small sizes: real measurements, a second or two per node.
    "VALIDATION_AGENT_SIZES": "gemm=256,copy=8M,allreduce=1M",
    "PORTAL_VAR_DIR": "/tmp/gpu-portal-test-var",  # noqa: S108
}
if os.environ.get("DJANGO_SETTINGS_MODULE") == "portal.settings.test":
    for _name, _value in _TEST_ENVIRONMENT.items():
        os.environ.setdefault(_name, _value)

from portal.settings.base import *  # noqa: E402, F403
from portal.settings.celery import *  # noqa: E402, F403
from portal.settings.portal import *  # noqa: E402, F403
from portal.settings.provisioning import *  # noqa: E402, F403
