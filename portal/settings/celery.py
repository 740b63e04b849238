"""Celery: the broker and result backend, task defaults, the router (each task's own
``queue=``), the outbox's timings and the ONE beat table of every periodic task."""

from core.queues import CeleryQueue
from portal.settings.base import REDIS_URL, VAR_DIR, env, secret
from portal.settings.provisioning import PORTAL_HEALTH_EVALUATE_EVERY_S, VALIDATION_IDLE_SWEEP_HOURS

# With REDIS_URL the broker and result backend are Redis; without it, kombu's filesystem
# transport under var/celery, which needs no server (the embedded default).
_CELERY_DIR = VAR_DIR / "celery"
CELERY_BROKER_URL = secret("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://localhost/")
CELERY_RESULT_BACKEND = secret(
    "CELERY_RESULT_BACKEND", default=REDIS_URL or f"file://{_CELERY_DIR / 'results'}"
)
# Longest hard time limit of any task that does not renew a lease, in seconds. A Redis
# broker hands a message out again when it was not acknowledged within the visibility
# timeout; tasks acknowledge late, so the timeout outlasts every such task (or a running
# one would be started twice) and is not much longer (a message lost with a killed worker
# comes back after it). The one task that may run longer, validation with the 24-hour
# burn-in, holds a lease in PostgreSQL that it renews while it works
# (provisioning/runs/leases.py): a copy handed out again finds the lease held and returns
# at once; when the holder dies, its step is taken over once the lease runs out
# (PORTAL_PROVISIONING_LEASE_S), whatever the visibility timeout. So the timeout stays
# modest and does not depend on the burn-in's length.
CELERY_LONGEST_TASK_S = 2 * 3600
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int(
        "PORTAL_BROKER_VISIBILITY_TIMEOUT", default=CELERY_LONGEST_TASK_S + 3600
    ),
    # A request that publishes never waits long for a broker that does not answer, and
    # no read hangs on one that stopped answering (above the 1 s BRPOP a worker waits).
    "socket_connect_timeout": 5,
    "socket_timeout": 15,
}
# A long step's lease (s): renewed by the step every fifth of it, so a worker killed in
# the middle of a 24-hour burn-in leaves its step to be taken over this long after.
PORTAL_PROVISIONING_LEASE_S = env.float("PORTAL_PROVISIONING_LEASE_S", default=300.0)
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
CELERY_TASK_DEFAULT_QUEUE = CeleryQueue.DEFAULT.value
# Each task declares its queue on its decorator; the router reads it for a task sent by
# name (the outbox publishes names), and anything unknown goes to the default queue.
CELERY_TASK_ROUTES = ("portal.celery.route_task",)
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
# Nothing reads a task's result (no request waits on one): results are not stored, and
# publishing a task does not subscribe to its result on the backend either (which, with
# the backend down, retried for about 19 s per task). The one exception declares
# ``ignore_result=False`` on its decorator: a chord's header tasks
# (``provisioning_slot_advance``), whose results the chord counts.
CELERY_TASK_IGNORE_RESULT = True
# Every Redis wait is bounded: the result backend's connect and reads, and its retries
# (Celery's default is 20 tries, one a second).
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 3
CELERY_REDIS_SOCKET_TIMEOUT = 10
CELERY_REDIS_RETRY_ON_TIMEOUT = False
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {
    "retry_policy": {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}
}
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The outbox (core/outbox.py): how long one publish may wait for the broker (s), and how
# often each worker's relay loop looks for messages still pending (s).
PORTAL_BROKER_PUBLISH_TIMEOUT = env.float("PORTAL_BROKER_PUBLISH_TIMEOUT", default=3.0)
PORTAL_OUTBOX_RELAY_EVERY = env.float("PORTAL_OUTBOX_RELAY_EVERY", default=5.0)
# Each worker records itself per queue this often (s; core.heartbeats, read by /readyz).
PORTAL_WORKER_HEARTBEAT_S = env.float("PORTAL_WORKER_HEARTBEAT_S", default=10.0)
CELERY_BEAT_SCHEDULE_FILENAME = str(_CELERY_DIR / "beat-schedule")
# Exactly one beat: with a Redis broker, beat keeps its schedule in Redis (celery-redbeat)
# behind a lock that the running beat renews at every tick (at most every
# CELERY_BEAT_MAX_LOOP_INTERVAL s). A second beat, started by mistake or as a standby on
# another host, waits for the lock and sends nothing; when the first dies (SIGKILL, its
# host lost) the lock expires after PORTAL_BEAT_LOCK_TIMEOUT_S and the standby takes over,
# from the schedule's last runs kept in Redis (no job runs twice, none is skipped for long).
# The embedded default (filesystem broker, one beat by construction) keeps Celery's
# schedule file.
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BEAT_SCHEDULER = "redbeat.RedBeatScheduler"
    CELERY_REDBEAT_REDIS_URL = secret("CELERY_REDBEAT_REDIS_URL", default=CELERY_BROKER_URL)
    CELERY_REDBEAT_KEY_PREFIX = env.str("PORTAL_BEAT_KEY_PREFIX", default="redbeat:")
    CELERY_REDBEAT_LOCK_TIMEOUT = env.int("PORTAL_BEAT_LOCK_TIMEOUT_S", default=30)
    CELERY_BEAT_MAX_LOOP_INTERVAL = env.int(
        "PORTAL_BEAT_MAX_LOOP_INTERVAL_S", default=max(1, CELERY_REDBEAT_LOCK_TIMEOUT // 6)
    )
    # Bounded waits; a Redis that is away for less than retry_period (s) is waited for.
    CELERY_REDBEAT_REDIS_OPTIONS = {
        "socket_connect_timeout": 5,
        "socket_timeout": 15,
        "retry_period": 60,
    }
# Every periodic task, in one table. Each is idempotent: a run that finds nothing to do
# does nothing, and two runs do the work once.
CELERY_BEAT_SCHEDULE = {
    # Outbox messages still pending (each worker's relay loop is the first line).
    "outbox-relay": {"task": "core.tasks.outbox_relay_task", "schedule": 60.0},
    # --- billing
    "sweep-documents-and-emails": {
        "task": "billing.tasks.documents_sweep_task",
        "schedule": 300.0,
    },
    "webhooks-quote-expiring": {
        "task": "portal.tasks.webhooks_quote_expiring_task",
        "schedule": 600.0,
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
    # A countersigned contract whose seal failed for good (TSA down past the retries, a
    # dead worker) is sealed again; so are its audit record and its email.
    "contracts-seal-sweep": {
        "task": "billing.tasks.contracts_seal_sweep_task",
        "schedule": 600.0,
    },
    # The landing page's 13-week availability calendar, computed off the request (a run
    # not started within the minute is dropped: the next one computes the same).
    "catalog-calendar-refresh": {
        "task": "billing.tasks.catalog_calendar_refresh_task",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # Dunning (reminders, suspension, resumption; the policy is data in the admin) and
    # renewal quotes for orders ending within PORTAL_RENEWAL_DAYS.
    "dunning-run": {"task": "billing.tasks.dunning_run_task", "schedule": 600.0},
    # The late fee of a document paid after its due date, invoiced once it is paid (§10).
    "late-fees-invoice": {"task": "billing.tasks.late_fees_invoice_task", "schedule": 3600.0},
    "renewals-offer": {"task": "billing.tasks.renewals_offer_task", "schedule": 3600.0},
    # Later billing periods' invoices, issued PORTAL_INVOICE_ISSUE_DAYS before they start.
    "invoices-issue-due": {"task": "billing.tasks.invoices_issue_due_task", "schedule": 3600.0},
    # --- inventory
    "expire-stale-holds": {
        "task": "inventory.tasks.reservation_expire_holds_task",
        "schedule": 60.0,
    },
    # Background imports that a lost message or a dead worker left are handed out again.
    "inventory-import-job-sweep": {
        "task": "inventory.tasks.import_job_sweep_task",
        "schedule": 300.0,
    },
    # Maintenance plans whose notice time has come: customers told (email, webhook);
    # announced plans past their window completed (portal/operations).
    "maintenance-due": {
        "task": "portal.operations.tasks.maintenance_due_task",
        "schedule": 300.0,
    },
    # --- provisioning
    # Day two: the health rules over Prometheus (new incidents, deadlines, re-validations)
    # and the low-utilisation check (provisioning/health).
    "health-evaluate": {
        "task": "provisioning.tasks.health_evaluate_task",
        "schedule": PORTAL_HEALTH_EVALUATE_EVERY_S,
        "options": {"expires": PORTAL_HEALTH_EVALUATE_EVERY_S},
    },
    "low-utilisation": {
        "task": "provisioning.tasks.low_utilisation_task",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # Support tickets: record each first-response or resolution clock that ran out.
    "support-clocks": {
        "task": "portal.support.tasks.ticket_clocks_sweep_task",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # SLA credits of ended billing periods (computed once per node and period).
    "sla-credits-sweep": {"task": "provisioning.tasks.sla_credits_sweep_task", "schedule": 3600.0},
    "provisioning-reaper": {
        "task": "provisioning.tasks.provisioning_reaper_task",
        "schedule": 60.0,
    },
    # Paid orders whose rental starts later begin provisioning at start minus the site's
    # lead time: this scan starts them (a database scan, not an ETA message: see
    # provisioning_start).
    "provisioning-start-due": {
        "task": "provisioning.tasks.provisioning_start_due_task",
        "schedule": 60.0,
    },
    "provisioning-end-due-orders": {
        "task": "provisioning.tasks.provisioning_end_due_orders_task",
        "schedule": 300.0,
    },
    # The quick profile on idle nodes (VALIDATION_IDLE_SWEEP_HOURS).
    "validation-idle-sweep": {
        "task": "provisioning.validation.tasks.validation_idle_sweep_task",
        "schedule": VALIDATION_IDLE_SWEEP_HOURS * 3600,
    },
}
