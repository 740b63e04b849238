"""The settings every host of the test network runs: the production settings
(``portal.settings``, DEBUG off, everything from the environment) with beat's intervals
times ``MULTIHOST_BEAT_SCALE`` (a minute becomes seconds), so that a short run sees each
periodic job several times and can tell one beat from two."""

from portal.settings import *  # noqa: F403
from portal.settings.base import env
from tests.integration.multihost.schedule import scaled_schedule

CELERY_BEAT_SCHEDULE = scaled_schedule(
    CELERY_BEAT_SCHEDULE,  # noqa: F405
    env.float("MULTIHOST_BEAT_SCALE", default=1.0),
)
