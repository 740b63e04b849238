"""Settings for every environment, read from environment variables (12-factor).

With no variables set this is the embedded default used by ``make run``: DEBUG on,
SQLite under ``var/``, Celery on kombu's filesystem broker, console email and the
simulated hardware driver. Production sets ``DJANGO_DEBUG=0``, a real
``DJANGO_SECRET_KEY``, ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL``; the README lists
every variable.
"""

from pathlib import Path

import environ
from django.utils.translation import gettext_lazy as _

from portal import queues

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()  # the one reader of the environment
VAR_DIR = Path(env.str("PORTAL_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DJANGO_DEBUG", default=False)
_DEV_SECRET = "insecure-dev-only-secret-key-do-not-use-in-production-0123456789"  # noqa: S105
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=_DEV_SECRET if DEBUG else "")
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
    "import_export",
    "core",
    "accounts",
    "inventory",
    "billing",
    "provisioning",
    "portal.apps.PortalConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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

# --- Database -------------------------------------------------------------------------
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"),
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
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = ["accounts.backends.EmailBackend"]  # email or username
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:organisations"
# Staff land on their own pages after logging in (group name -> URL name); other staff
# land in the back office.
STAFF_LANDING_BY_GROUP = {"Sales": "sales:quote_list", "Sales managers": "sales:quote_list"}
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
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
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
if env.str("EMAIL_URL", default=""):
    # e.g. smtp+tls://user:password@smtp.example.com:587 (django-environ's email_url)
    _email = env.email_url("EMAIL_URL")
    EMAIL_BACKEND = _email["EMAIL_BACKEND"]
    EMAIL_HOST = _email.get("EMAIL_HOST", "")
    EMAIL_PORT = _email.get("EMAIL_PORT") or 25
    EMAIL_HOST_USER = _email.get("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = _email.get("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = bool(_email.get("EMAIL_USE_TLS", False))
    EMAIL_USE_SSL = bool(_email.get("EMAIL_USE_SSL", False))
    EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)

# --- Celery ---------------------------------------------------------------------------
# With REDIS_URL the broker and result backend are Redis; without it, kombu's filesystem
# transport under var/celery, which needs no server (the embedded default).
_CELERY_DIR = VAR_DIR / "celery"
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://localhost/")
CELERY_RESULT_BACKEND = env.str(
    "CELERY_RESULT_BACKEND", default=REDIS_URL or f"file://{_CELERY_DIR / 'results'}"
)
# Longest hard time limit of any task, in seconds. A Redis broker redelivers a message that
# was not acknowledged within the visibility timeout; tasks acknowledge late, so the
# timeout must outlast the longest task or a running task would be started twice.
CELERY_LONGEST_TASK_S = 2 * 3600
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int(
        "PORTAL_BROKER_VISIBILITY_TIMEOUT", default=CELERY_LONGEST_TASK_S + 3600
    ),
    # A request that publishes never waits long for a broker that does not answer.
    "socket_connect_timeout": 5,
}
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_CELERY_DIR / "queue"),
        "data_folder_out": str(_CELERY_DIR / "queue"),
        "control_folder": str(_CELERY_DIR / "control"),
        "processed_folder": str(_CELERY_DIR / "processed"),
        "store_processed": False,
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = queues.DEFAULT
CELERY_TASK_ROUTES = queues.TASK_ROUTES
# No global time limit: every task declares its own (an OS install is not a 300 s job);
# tests/portal/test_settings.py checks that each does.
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fix-up would close the database connection around every task; it does
# so only once in this many, and portal/celery.py applies CONN_MAX_AGE and the health
# checks around each task instead (as Django does around each request).
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=1000)
CELERY_RESULT_EXPIRES = 3600 * 24
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The outbox (core/outbox.py): how long one publish may wait for the broker (s), and how
# often each worker's relay loop looks for messages still pending (s).
PORTAL_BROKER_PUBLISH_TIMEOUT = env.float("PORTAL_BROKER_PUBLISH_TIMEOUT", default=3.0)
PORTAL_OUTBOX_RELAY_EVERY = env.float("PORTAL_OUTBOX_RELAY_EVERY", default=5.0)
CELERY_BEAT_SCHEDULE = {
    "outbox-relay": {"task": "core.tasks.outbox_relay_task", "schedule": 60.0},
    "sweep-documents-and-emails": {
        "task": "billing.tasks.documents_sweep_task",
        "schedule": 300.0,
    },
    "expire-stale-holds": {
        "task": "inventory.tasks.reservation_expire_holds_task",
        "schedule": 60.0,
    },
    "expire-quotes": {
        "task": "billing.tasks.quote_expire_due_task",
        "schedule": 300.0,
    },
    "expire-unpaid-orders": {
        "task": "billing.tasks.order_expire_unpaid_task",
        "schedule": 60.0,
    },
    "retry-stuck-stripe-events": {
        "task": "billing.tasks.stripe_events_retry_task",
        "schedule": 300.0,
    },
    "contracts-activate-and-end": {
        "task": "billing.tasks.contracts_activate_task",
        "schedule": 300.0,
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(_CELERY_DIR / "beat-schedule")
# The landing page's 13-week availability calendar, computed off the request (a run not
# started within the minute is dropped: the next one computes the same).
CELERY_BEAT_SCHEDULE["catalog-calendar-refresh"] = {
    "task": "billing.tasks.catalog_calendar_refresh_task",
    "schedule": 60.0,
    "options": {"expires": 55},
}

# Self-service starts are priced up to this many months ahead (the price book horizon).
PRICE_BOOK_HORIZON_MONTHS = env.int("PRICE_BOOK_HORIZON_MONTHS", default=12)

# Self-service holds per organisation: unpaid orders and the nodes they hold at once
# (lower until the organisation's legal name and tax ID are on file).
SELF_SERVICE_HOLD_LIMITS = {
    "verified": {
        "unpaid_orders": env.int("HOLD_LIMIT_UNPAID_ORDERS", default=3),
        "held_nodes": env.int("HOLD_LIMIT_HELD_NODES", default=64),
    },
    "unverified": {
        "unpaid_orders": env.int("HOLD_LIMIT_UNPAID_ORDERS_UNVERIFIED", default=1),
        "held_nodes": env.int("HOLD_LIMIT_HELD_NODES_UNVERIFIED", default=8),
    },
}

# Anonymous estimates (non-binding quote PDFs): new renders per client and hour, and how
# many days their prices are stated as valid.
ESTIMATE_RENDERS_PER_HOUR = env.int("ESTIMATE_RENDERS_PER_HOUR", default=20)
ESTIMATE_VALID_DAYS = env.int("ESTIMATE_VALID_DAYS", default=7)

# Absolute address of the portal, for links in emails and PDFs.
PORTAL_BASE_URL = env.str("PORTAL_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")

# The provider on quotes and invoices (demo values by default: set them for real use).
PORTAL_PROVIDER_BRAND = env.str("PORTAL_PROVIDER_BRAND", default="GPU Cloud")
PORTAL_PROVIDER_NAME = env.str("PORTAL_PROVIDER_NAME", default="GPU Cloud Ltd. (demo)")
PORTAL_PROVIDER_NAME_ZH = env.str(
    "PORTAL_PROVIDER_NAME_ZH", default="GPU Cloud Ltd.（深圳市智算云科技有限公司，演示）"
)
PORTAL_PROVIDER_ADDRESS = env.str(
    "PORTAL_PROVIDER_ADDRESS",
    default="12/F, Building 8, Science Park South, Nanshan, Shenzhen, Guangdong, China",
)
PORTAL_PROVIDER_ADDRESS_ZH = env.str(
    "PORTAL_PROVIDER_ADDRESS_ZH", default="中国广东省深圳市南山区科技园南区 8 栋 12 层"
)
PORTAL_PROVIDER_EMAIL = env.str("PORTAL_PROVIDER_EMAIL", default="sales@gpucloud.example")
PORTAL_PROVIDER_PHONE = env.str("PORTAL_PROVIDER_PHONE", default="+86 755 0000 0000")
# Who "prepared" a self-service quote: the provider's sales contact (blank: "Sales team").
PORTAL_SALES_CONTACT_NAME = env.str("PORTAL_SALES_CONTACT_NAME", default="")
# ... and their address (blank: PORTAL_PROVIDER_EMAIL).
PORTAL_SALES_CONTACT_EMAIL = env.str("PORTAL_SALES_CONTACT_EMAIL", default="")
# The sender of quote emails: an address the provider's mail domain authorises (SPF/DKIM);
# the display name is "<salesperson> via <brand>" and replies go to the salesperson.
PORTAL_QUOTE_FROM_EMAIL = env.str("PORTAL_QUOTE_FROM_EMAIL", default=PORTAL_PROVIDER_EMAIL)
PORTAL_PROVIDER_WEBSITE = env.str("PORTAL_PROVIDER_WEBSITE", default="gpucloud.example")

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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("DJANGO_LOG_LEVEL", default="INFO")},
    "loggers": {
        # WeasyPrint logs every render step at INFO.
        "weasyprint": {"level": "WARNING"},
        "fontTools": {"level": "WARNING"},
    },
}

# django-import-export keeps an upload between preview and confirm in the cache (Redis in
# production), so the confirm step works whichever web process answers it.
IMPORT_EXPORT_TMP_STORAGE_CLASS = "import_export.tmp_storages.CacheStorage"

# --- Payments -------------------------------------------------------------------------
# Stripe (card, Alipay, WeChat Pay). With no keys (the ``make run`` default) card payment
# says it is not configured and customers pay by bank transfer. ``STRIPE_API_BASE`` points
# the SDK at a local stand-in (localstripe in the integration tests).
STRIPE_SECRET_KEY = env.str("STRIPE_SECRET_KEY", default="")
STRIPE_PUBLISHABLE_KEY = env.str("STRIPE_PUBLISHABLE_KEY", default="")
STRIPE_WEBHOOK_SECRET = env.str("STRIPE_WEBHOOK_SECRET", default="")
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="")
STRIPE_PAYMENT_METHODS = env.list(
    "STRIPE_PAYMENT_METHODS", default=["card", "alipay", "wechat_pay"]
)
# The account customers pay invoices into by bank transfer (demo values by default).
PORTAL_BANK_ACCOUNT_NAME = env.str(
    "PORTAL_BANK_ACCOUNT_NAME", default="Demo GPU Cloud (Shenzhen) Co., Ltd."
)
PORTAL_BANK_ACCOUNT_NUMBER = env.str("PORTAL_BANK_ACCOUNT_NUMBER", default="7559 0000 0000 0001")
PORTAL_BANK_NAME = env.str(
    "PORTAL_BANK_NAME", default="China Merchants Bank, Shenzhen Branch (demo)"
)
PORTAL_BANK_SWIFT = env.str("PORTAL_BANK_SWIFT", default="CMBCCNBS")

# Contracts: the provider's PAdES seal (a PKCS#12 file and its passphrase; `make run`
# creates a demo key and self-signed certificate there once), an RFC 3161 timestamping
# authority when set, the standard terms' version, days before the end to offer renewal.
PORTAL_SIGNING_P12 = env.str("PORTAL_SIGNING_P12", default=str(VAR_DIR / "signing" / "seal.p12"))
PORTAL_SIGNING_P12_PASSPHRASE = env.str(
    "PORTAL_SIGNING_P12_PASSPHRASE", default="demo-seal-passphrase"
)
PORTAL_SIGNING_TSA_URL = env.str("PORTAL_SIGNING_TSA_URL", default="")
PORTAL_TERMS_VERSION = env.str("PORTAL_TERMS_VERSION", default="2026-01")
PORTAL_RENEWAL_DAYS = env.int("PORTAL_RENEWAL_DAYS", default=30)
# Dunning (reminders, suspension, resumption; the policy is data in the admin) and renewal
# quotes for orders ending within PORTAL_RENEWAL_DAYS: both beat jobs are idempotent.
CELERY_BEAT_SCHEDULE["dunning-run"] = {"task": "billing.tasks.dunning_run_task", "schedule": 600.0}
CELERY_BEAT_SCHEDULE["renewals-offer"] = {
    "task": "billing.tasks.renewals_offer_task",
    "schedule": 3600.0,
}
# seed_demo makes one signed contract (two PDF renderings; the test suite turns it off).
PORTAL_SEED_DEMO_CONTRACT = env.bool("PORTAL_SEED_DEMO_CONTRACT", default=True)

# --- Invoices over the term (issue 13) ---------------------------------------------------
# Later billing periods are issued this many days before they start.
PORTAL_INVOICE_ISSUE_DAYS = env.int("PORTAL_INVOICE_ISSUE_DAYS", default=14)
# The metering system's token for POST /api/usage/ ("" = staff sessions only).
PORTAL_USAGE_API_TOKEN = env.str("PORTAL_USAGE_API_TOKEN", default="")
CELERY_BEAT_SCHEDULE["invoices-issue-due"] = {
    "task": "billing.tasks.invoices_issue_due_task",
    "schedule": 3600.0,
}
# SLA credits of ended billing periods (computed once per node and period).
CELERY_BEAT_SCHEDULE["sla-credits-sweep"] = {
    "task": "provisioning.tasks.sla_credits_sweep_task",
    "schedule": 3600.0,
}

# --- CSV import/export
# Every exported cell that a spreadsheet would run as a formula (it starts with = + - @,
# a tab or a carriage return) gets a ' in front (inventory.resources.EscapedCSV).
IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT = True
# The admin page imports at most this many rows at once (preview, then confirm); a larger
# file goes to the background import (inventory.csv_jobs), which a worker runs.
INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS = env.int("INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS", default=5000)
# Background imports that a lost message or a dead worker left are handed out again.
CELERY_BEAT_SCHEDULE["inventory-import-job-sweep"] = {
    "task": "inventory.tasks.import_job_sweep_task",
    "schedule": 300.0,
}

# --- Provisioning (issue 11) -------------------------------------------------------------
# Which hardware driver runs a node (a node's own ``driver`` field overrides it).
PORTAL_HARDWARE_DRIVER = env.str("PORTAL_HARDWARE_DRIVER", default="simulated")
# The simulated driver sleeps each step's realistic duration times this factor: 0.04 plays
# a node's ~22 simulated minutes in under a minute (``make run``); 0 never sleeps.
PORTAL_SIMULATED_TIME_SCALE = env.float("PORTAL_SIMULATED_TIME_SCALE", default=0.04)
PORTAL_SIMULATED_FAILURE_RATE = env.float("PORTAL_SIMULATED_FAILURE_RATE", default=0.0)
# The run's overall deadline: this many minutes per node (a run of 4 nodes: 240 minutes).
PORTAL_PROVISIONING_DEADLINE_MIN_PER_NODE = env.int(
    "PORTAL_PROVISIONING_DEADLINE_MIN_PER_NODE", default=60
)
# Transient driver errors (BMC 5xx, a reset connection): this many retries with backoff.
PORTAL_PROVISIONING_STEP_RETRIES = env.int("PORTAL_PROVISIONING_STEP_RETRIES", default=4)
PORTAL_PROVISIONING_RETRY_BACKOFF_S = env.float("PORTAL_PROVISIONING_RETRY_BACKOFF_S", default=5.0)
# Spares tried per slot before the run gives up and asks staff.
PORTAL_PROVISIONING_MAX_SWAPS_PER_NODE = env.int(
    "PORTAL_PROVISIONING_MAX_SWAPS_PER_NODE", default=2
)
# Redfish: how long a power change may take, the cleaning image booted for secure erase,
# and the in-band channel ("" none; "simulated" for the emulator in tests and demos).
PORTAL_REDFISH_POWER_TIMEOUT_S = env.float("PORTAL_REDFISH_POWER_TIMEOUT_S", default=300.0)
PORTAL_REDFISH_POLL_S = env.float("PORTAL_REDFISH_POLL_S", default=2.0)
PORTAL_CLEANING_IMAGE_URL = env.str("PORTAL_CLEANING_IMAGE_URL", default="")
PORTAL_REDFISH_IN_BAND = env.str("PORTAL_REDFISH_IN_BAND", default="")
# Validation sizes of the agent on the CPU path (simulated nodes).
PORTAL_VALIDATION_CPU_SIZES = env.list(
    "PORTAL_VALIDATION_CPU_SIZES", default=["gemm=256", "allreduce=1M"]
)
# The jump host customers go through to reach their nodes ("" when reachable directly).
PORTAL_SSH_JUMP_HOST = env.str("PORTAL_SSH_JUMP_HOST", default="")
CELERY_BEAT_SCHEDULE["provisioning-reaper"] = {
    "task": "provisioning.tasks.provisioning_reaper_task",
    "schedule": 60.0,
}
# Paid orders whose rental starts later begin provisioning at start minus the site's lead
# time: this scan starts them (a database scan, not an ETA message: see provisioning_start).
CELERY_BEAT_SCHEDULE["provisioning-start-due"] = {
    "task": "provisioning.tasks.provisioning_start_due_task",
    "schedule": 60.0,
}
CELERY_BEAT_SCHEDULE["provisioning-end-due-orders"] = {
    "task": "provisioning.tasks.provisioning_end_due_orders_task",
    "schedule": 300.0,
}
# A run with no step moving for this long and none running lost its message: relaunched.
PORTAL_PROVISIONING_STALL_S = env.float("PORTAL_PROVISIONING_STALL_S", default=900.0)
# Simulated failures per hostname, e.g. {"sz-h100-03": ["install_image"]} (demos, tests).
PORTAL_SIMULATED_FAIL = env.json("PORTAL_SIMULATED_FAIL", default={})
# A paid order starts its provisioning run when its time comes (its start minus the site's
# lead time; at once if that is past). Off in the test suite, where tests of payments
# check billing's half and provisioning tests start their runs themselves.
PORTAL_PROVISIONING_AUTOSTART = env.bool("PORTAL_PROVISIONING_AUTOSTART", default=True)
# --- Validation (provisioning/validation) ----------------------------------------------
# How the node agent is run: ``auto`` by the node's driver (simulated, or Redfish with the
# simulated in-band channel: ``local``, a subprocess next to the worker judged on the CPU
# path; Redfish: ``ssh``, on the node over SSH); ``local`` or ``ssh`` force one. Per-node
# time limit (s) and size overrides passed to ``python -m provisioning.agent --sizes``.
VALIDATION_AGENT_RUNNER = env.str("VALIDATION_AGENT_RUNNER", default="auto")
# The SSH runner (provisioning/validation/ssh.py): user, port, the private key as a
# reference (env:NAME or file:/path, never the key itself; its passphrase likewise), the
# known_hosts file the nodes' host keys are checked against (required: an unknown or
# changed host key is refused, nothing is ever added to it), the node's Python.
VALIDATION_SSH_USER = env.str("VALIDATION_SSH_USER", default="root")
VALIDATION_SSH_PORT = env.int("VALIDATION_SSH_PORT", default=22)
VALIDATION_SSH_KEY = env.str("VALIDATION_SSH_KEY", default="")
VALIDATION_SSH_KEY_PASSPHRASE = env.str("VALIDATION_SSH_KEY_PASSPHRASE", default="")
VALIDATION_SSH_KNOWN_HOSTS = env.str("VALIDATION_SSH_KNOWN_HOSTS", default="")
VALIDATION_SSH_CONNECT_TIMEOUT_S = env.float("VALIDATION_SSH_CONNECT_TIMEOUT_S", default=15.0)
VALIDATION_SSH_PYTHON = env.str("VALIDATION_SSH_PYTHON", default="python3")
VALIDATION_AGENT_TIMEOUT_S = env.float("VALIDATION_AGENT_TIMEOUT_S", default=600.0)
VALIDATION_AGENT_SIZES = env.list("VALIDATION_AGENT_SIZES", default=[])
# Beat runs the quick profile on idle nodes this often (hours); a node booked now or within
# the margin (minutes) is never touched.
VALIDATION_IDLE_SWEEP_HOURS = env.float("VALIDATION_IDLE_SWEEP_HOURS", default=6.0)
VALIDATION_IDLE_BOOKING_MARGIN_MINUTES = env.int(
    "VALIDATION_IDLE_BOOKING_MARGIN_MINUTES", default=60
)
CELERY_BEAT_SCHEDULE["validation-idle-sweep"] = {
    "task": "provisioning.validation.tasks.validation_idle_sweep_task",
    "schedule": VALIDATION_IDLE_SWEEP_HOURS * 3600,
}
