"""The Django settings every environment shares: apps, middleware, templates, the
database, auth and the login throttle, languages, money, static files, the cache, email,
production security, logging. Read from environment variables (12-factor).

With no variables set this is the embedded default used by ``make run``: DEBUG on,
SQLite under ``var/``, Celery on kombu's filesystem broker, console email and the
simulated hardware driver. Production sets ``DJANGO_DEBUG=0``, a real
``DJANGO_SECRET_KEY``, ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL``; the README lists
every variable.
"""

from pathlib import Path

import environ
from django.utils.translation import gettext_lazy as _

from portal import structured_logs

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()  # the one reader of the environment
VAR_DIR = Path(env.str("PORTAL_VAR_DIR", default=str(BASE_DIR / "var")))


def secret(name: str, default: str = "") -> str:
    """A secret from the environment: ``NAME_FILE`` names a file that holds it (systemd's
    ``LoadCredential=``, a container's mounted secret; so the value is in no unit file
    and no process environment), else ``NAME`` itself, else ``default``. Every password,
    key and token (and the URLs that carry passwords) is read this way."""
    path = env.str(f"{name}_FILE", default="")
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise environ.ImproperlyConfigured(f"{name}_FILE={path}: {exc.strerror}") from exc
    return env.str(name, default=default)


DEBUG = env.bool("DJANGO_DEBUG", default=False)
_DEV_SECRET = "insecure-dev-only-secret-key-do-not-use-in-production-0123456789"  # noqa: S105
SECRET_KEY = secret("DJANGO_SECRET_KEY", default=_DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise environ.ImproperlyConfigured(
        "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off (see README: Production)."
    )
ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"]
)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "django_prometheus",
    "django_structlog",
    "csp",
    "import_export",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from our static files (no CDN)
    "core",
    "accounts",
    "inventory",
    "billing",
    "provisioning",
    "portal.apps.PortalConfig",
    "portal.support.apps.SupportConfig",
]

MIDDLEWARE = [
    # /healthz and /readyz, before the host check and the HTTPS redirect (portal/health.py).
    "portal.health.ProbeMiddleware",
    # Request metrics by view, method and status; its After half is last (portal/metrics.py).
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response (CONTENT_SECURITY_POLICY below).
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Binds request_id (X-Request-ID or new), user_id and ip for every line of the request.
    "django_structlog.middlewares.RequestMiddleware",
    "portal.structured_logs.RequestIdHeaderMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Which dependencies make /readyz answer 503 (portal/health.py): database, broker, cache,
# workers, or all.
PORTAL_READYZ_REQUIRED = env.list("PORTAL_READYZ_REQUIRED", default=["database"])

# /metrics (portal/metrics.py): a bearer token ("" derives one from SECRET_KEY), or client
# addresses/networks allowed without it. Workers serve their task metrics on
# PORTAL_WORKER_METRICS_PORT (0: none) at PORTAL_WORKER_METRICS_HOST, and tell Prometheus
# (through their heartbeat) the address PORTAL_WORKER_METRICS_ADVERTISE (default: the host).
PORTAL_METRICS_TOKEN = secret("PORTAL_METRICS_TOKEN")
PORTAL_METRICS_ALLOWED_IPS = env.list("PORTAL_METRICS_ALLOWED_IPS", default=[])
PORTAL_WORKER_METRICS_PORT = env.int("PORTAL_WORKER_METRICS_PORT", default=0)
PORTAL_WORKER_METRICS_HOST = env.str("PORTAL_WORKER_METRICS_HOST", default="127.0.0.1")
PORTAL_WORKER_METRICS_ADVERTISE = env.str("PORTAL_WORKER_METRICS_ADVERTISE", default="")

# --- Database -------------------------------------------------------------------------
DATABASES = {
    "default": env.db_url_config(
        secret("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'portal.sqlite3'}")
    ),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Keep a connection between requests and tasks (a worker opened one per task: a few ms
# each, on every provisioning step); checked before reuse, so a restarted server is fine.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default runs web, worker and beat on one file. WAL lets readers go on
    # while one process writes; IMMEDIATE transactions take the write lock when they
    # begin (so two writers queue instead of failing halfway with "database is locked");
    # the busy timeout is how long a writer waits for its turn.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
elif "postgresql" in DATABASES["default"]["ENGINE"]:
    # Many short requests at once, not one long report: PostgreSQL's parallel query
    # starts extra server processes for each large availability search, which on a busy
    # server only add contention (32 clients ordering at once were no faster than one;
    # bench/README.md, ordering.py). Set to 2 or more for a reporting replica.
    _parallel = env.int("DATABASE_MAX_PARALLEL_WORKERS_PER_GATHER", default=0)
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = (
        f"{_options.get('options', '')} -c max_parallel_workers_per_gather={_parallel}".strip()
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth -----------------------------------------------------------------------------
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "accounts.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = ["accounts.backends.EmailBackend"]  # email or username
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:organisations"
# Staff land on their own pages after logging in (group name -> URL name); other staff
# land in the back office.
STAFF_LANDING_BY_GROUP = {
    "Sales": "sales:quote_list",
    "Sales managers": "sales:quote_list",
    "Support": "support_staff_queue",
}
LOGOUT_REDIRECT_URL = "catalog"
# Login throttling (accounts/throttle.py), for every login form (the admin's too), built
# so that an attacker cannot lock users out. MAX_FAILURES failures for one account from one
# client IP within WINDOW seconds lock that (account, client) pair for LOCKOUT seconds,
# right password or not; the same account from any other client is not affected. A client
# that fails against more than IP_MAX_ACCOUNTS *distinct* accounts within WINDOW (credential
# stuffing) is locked for LOCKOUT seconds for every account that has not logged in from it
# within KNOWN_CLIENT seconds; failures against one account never lock a whole IP.
LOGIN_THROTTLE_MAX_FAILURES = env.int("LOGIN_THROTTLE_MAX_FAILURES", default=5)
LOGIN_THROTTLE_WINDOW = env.int("LOGIN_THROTTLE_WINDOW", default=15 * 60)
LOGIN_THROTTLE_LOCKOUT = env.int("LOGIN_THROTTLE_LOCKOUT", default=15 * 60)
LOGIN_THROTTLE_IP_MAX_ACCOUNTS = env.int("LOGIN_THROTTLE_IP_MAX_ACCOUNTS", default=20)
LOGIN_THROTTLE_KNOWN_CLIENT = env.int("LOGIN_THROTTLE_KNOWN_CLIENT", default=30 * 24 * 3600)
# The client is an IP, so set this right: how many reverse proxies in front of the app
# append to X-Forwarded-For. 0 (default): REMOTE_ADDR only, for a server that faces the
# internet. Behind one nginx or one AWS ALB: 1 (the client is the last X-Forwarded-For
# entry); CDN -> ALB -> app: 2. Too low, and every visitor shares a proxy's address: one
# attacker's failures lock the owner's pair for everyone, and stuffing limits hit all
# users at once. Too high, and the client picks its own address in the header: it evades
# every limit and can pose as a victim's IP. Each proxy must append, not pass through, the
# header (nginx: proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for).
PORTAL_TRUSTED_PROXIES = env.int("PORTAL_TRUSTED_PROXIES", default=0)

# --- Languages, time, money -----------------------------------------------------------
LANGUAGE_CODE = "zh-hans"
LANGUAGES = [("zh-hans", _("Simplified Chinese")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_I18N = True
TIME_ZONE = "Asia/Shanghai"  # default display zone; each site shows its own
USE_TZ = True

# One setting for money: digits and places of every stored amount (core/money.py). The
# rounding rule is the pricing engine's (billing.pricing.ROUNDING, half-up per line).
MONEY_MAX_DIGITS = 14
MONEY_DECIMAL_PLACES = 2

# --- Static and media -----------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env.str("DJANGO_MEDIA_ROOT", default=str(VAR_DIR / "media")))

# --- Cache ----------------------------------------------------------------------------
# The cache has its own Redis (CACHE_URL: another server, or at least another database
# than the broker's), so that losing one loses only that one. Without CACHE_URL it is
# REDIS_URL's (the test suite; ``portal.settings.production`` refuses it there).
# django-redis with IGNORE_EXCEPTIONS: a cache that is down is a cache miss (the page is
# computed, never a 500), each failure logged; its timeouts keep a dead cache from
# costing a request more than a moment. ``/readyz`` pings the cache itself.
# REDIS_URL: the broker's Redis (portal/settings/celery.py), and the cache's unless set.
REDIS_URL = secret("REDIS_URL", default="")
CACHE_URL = secret("CACHE_URL", default=REDIS_URL)
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": CACHE_URL,
            "OPTIONS": {
                "CLIENT_CLASS": "django_redis.client.DefaultClient",
                "IGNORE_EXCEPTIONS": True,
                "SOCKET_CONNECT_TIMEOUT": env.float("CACHE_CONNECT_TIMEOUT_S", default=0.5),
                "SOCKET_TIMEOUT": env.float("CACHE_TIMEOUT_S", default=1.0),
            },
        }
    }
    DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
    DJANGO_REDIS_LOGGER = "portal.cache"
else:
    # The embedded default: web, worker and beat are separate processes, so they share one
    # cache in files (a per-process memory cache would hide from the web what beat
    # computes for the landing page, and the shop's and the inventory's generations that
    # a worker's writes set).
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# --- Email ----------------------------------------------------------------------------
EMAIL_BACKEND = env.str(
    "DJANGO_EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend"
)
DEFAULT_FROM_EMAIL = env.str("DJANGO_DEFAULT_FROM_EMAIL", default="portal@localhost")
if secret("EMAIL_URL"):
    # e.g. smtp+tls://user:password@smtp.example.com:587 (django-environ's email_url)
    _email = env.email_url_config(secret("EMAIL_URL"))
    EMAIL_BACKEND = _email["EMAIL_BACKEND"]
    EMAIL_HOST = _email.get("EMAIL_HOST", "")
    EMAIL_PORT = _email.get("EMAIL_PORT") or 25
    EMAIL_HOST_USER = _email.get("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = _email.get("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = bool(_email.get("EMAIL_USE_TLS", False))
    EMAIL_USE_SSL = bool(_email.get("EMAIL_USE_SSL", False))
    EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)

# --- Content-Security-Policy (django-csp) ----------------------------------------------
# Scripts and styles from the portal itself only: no inline script, no on* attribute, no
# eval (the pages' behaviours are static files: portal/static/portal/*.js; htmx's own
# indicator <style> is off). Style attributes stay allowed (Django's admin and
# import-export use them; they cannot run code). Stripe.js on the card page is the one
# outside script; it frames and calls Stripe. The API docs pages add what Redoc and
# Swagger UI need (portal/api/urls.py). With DJANGO_DEBUG the policy is report-only
# (Django's debug pages are inline), so `make run` shows violations without breaking.
_STRIPE_JS = "https://js.stripe.com"
_CSP = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", _STRIPE_JS],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'", "https://api.stripe.com"],
        "frame-src": ["'self'", _STRIPE_JS, "https://hooks.stripe.com"],
        "frame-ancestors": ["'self'"],
        "form-action": ["'self'"],
        "base-uri": ["'self'"],
        "object-src": ["'none'"],
    }
}
if DEBUG:
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _CSP
else:
    CONTENT_SECURITY_POLICY = _CSP

# --- Security (production) ------------------------------------------------------------
if not DEBUG:
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"

# Structured logs (portal/structured_logs.py): JSON lines in production, readable lines
# with DJANGO_DEBUG; the request id follows the work into its Celery tasks.
PORTAL_LOG_FORMAT = env.str("PORTAL_LOG_FORMAT", default="console" if DEBUG else "json")
structured_logs.configure()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"structured": structured_logs.formatter(PORTAL_LOG_FORMAT)},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structured"}},
    "root": {"handlers": ["console"], "level": env.str("DJANGO_LOG_LEVEL", default="INFO")},
    "loggers": {
        # WeasyPrint logs every render step at INFO.
        "weasyprint": {"level": "WARNING"},
        "fontTools": {"level": "WARNING"},
        # django-structlog's request_started/request_finished lines, one pair per request.
        "django_structlog": {"level": env.str("PORTAL_REQUEST_LOG_LEVEL", default="INFO")},
    },
}
DJANGO_STRUCTLOG_CELERY_ENABLED = True
DJANGO_STRUCTLOG_TRUST_UPSTREAM_REQUEST_ID = True  # the load balancer's X-Request-ID

# django-import-export keeps an upload between preview and confirm in the cache (Redis in
# production), so the confirm step works whichever web process answers it.
IMPORT_EXPORT_TMP_STORAGE_CLASS = "import_export.tmp_storages.CacheStorage"

# --- CSV import/export
# Every exported cell that a spreadsheet would run as a formula (it starts with = + - @,
# a tab or a carriage return) gets a ' in front (inventory.resources.EscapedCSV).
IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT = True
