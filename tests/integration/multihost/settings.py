"""The settings every host of the test network runs: the production settings
(``portal.settings.production``: DEBUG off, PostgreSQL, Redis broker, the cache on its own
Redis, everything from the environment) with beat's intervals
times ``MULTIHOST_BEAT_SCALE`` (a minute becomes seconds), so that a short run sees each
periodic job several times and can tell one beat from two."""

from portal.settings.base import env
from portal.settings.production import *  # noqa: F403
from tests.integration.multihost.schedule import scaled_schedule

CELERY_BEAT_SCHEDULE = scaled_schedule(
    CELERY_BEAT_SCHEDULE,  # noqa: F405
    env.float("MULTIHOST_BEAT_SCALE", default=1.0),
)

# Static files: Django's plain storage. The production storage (WhiteNoise's compressed
# manifest) needs ``collectstatic``, which compresses about 40 MB of assets: five minutes
# on these machines, for files the journeys never fetch (they read pages and the API).
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
