"""Production: ``DJANGO_SETTINGS_MODULE=portal.settings.production`` for every process
(web, workers, beat, migrate; README: Running in production).

The settings are those of ``portal.settings`` read from the environment (each secret
from ``NAME`` or a file named by ``NAME_FILE``); this module adds what only production
does, and refuses to start with what would only do for a demo: DEBUG, SQLite, the
filesystem broker, or a cache on the broker's Redis database.
"""

from environ import ImproperlyConfigured

from portal.settings import *  # noqa: F403
from portal.settings.base import CACHE_URL, DATABASES, DEBUG, MIDDLEWARE
from portal.settings.celery import CELERY_BROKER_URL


def _refuse(problem: str) -> None:
    raise ImproperlyConfigured(
        f"portal.settings.production: {problem} (README: Running in production)"
    )


if DEBUG:
    _refuse("DJANGO_DEBUG must be off")
if "postgresql" not in DATABASES["default"]["ENGINE"]:
    _refuse("DATABASE_URL must name PostgreSQL")
if not CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    _refuse("CELERY_BROKER_URL (or REDIS_URL) must name the broker's Redis")
if not CACHE_URL or CACHE_URL == CELERY_BROKER_URL:
    _refuse("CACHE_URL must name the cache's own Redis (not the broker's server and database)")

# Static files: collected (``manage.py collectstatic``, the migrate unit does it), served
# by WhiteNoise with content-hashed names, compressed, cached for a year.
_security = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware")
MIDDLEWARE = [  # WhiteNoise right after SecurityMiddleware, as its documentation says
    *MIDDLEWARE[: _security + 1],
    "whitenoise.middleware.WhiteNoiseMiddleware",
    *MIDDLEWARE[_security + 1 :],
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
