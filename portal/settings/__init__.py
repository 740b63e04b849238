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

# ``portal.settings.test`` is imported after this package, so the test suite's environment
# (its defaults, each xdist worker's own Redis database and var directory) is prepared
# here, before the modules below read it.
if os.environ.get("DJANGO_SETTINGS_MODULE") == "portal.settings.test":
    from portal.settings.test_environment import prepare

    prepare()

from portal.settings.api import *  # noqa: F403
from portal.settings.base import *  # noqa: F403
from portal.settings.celery import *  # noqa: F403
from portal.settings.portal import *  # noqa: F403
from portal.settings.provisioning import *  # noqa: F403
