"""Provisioning and validation: the hardware drivers (simulated, Redfish), the run's
deadlines, retries and swaps, the validation agent and its SSH runner."""

from portal.settings.base import env, secret

# --- Provisioning -----------------------------------------------------------------------
# Which hardware driver runs a node (a node's own ``driver`` field overrides it).
PORTAL_HARDWARE_DRIVER = env.str("PORTAL_HARDWARE_DRIVER", default="simulated")
# The simulated driver sleeps each step's realistic duration times this factor: 0.04 plays
# a node's ~22 simulated minutes in under a minute (``make run``); 0 never sleeps.
PORTAL_SIMULATED_TIME_SCALE = env.float("PORTAL_SIMULATED_TIME_SCALE", default=0.04)
PORTAL_SIMULATED_FAILURE_RATE = env.float("PORTAL_SIMULATED_FAILURE_RATE", default=0.0)
# Every step's hard bound (its task's time limit and its lease, provisioning/runs/plan.py)
# times this factor, never below 20 s, validation's excepted (its agent runs for real):
# for simulated hardware under a small time scale (tests, demos), where a dead worker's
# lease would otherwise hold its step for up to an hour. 1 (the default) on real hardware.
PORTAL_PROVISIONING_STEP_LIMIT_SCALE = env.float(
    "PORTAL_PROVISIONING_STEP_LIMIT_SCALE", default=1.0
)
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
VALIDATION_SSH_KEY_PASSPHRASE = secret("VALIDATION_SSH_KEY_PASSPHRASE")
VALIDATION_SSH_KNOWN_HOSTS = env.str("VALIDATION_SSH_KNOWN_HOSTS", default="")
VALIDATION_SSH_CONNECT_TIMEOUT_S = env.float("VALIDATION_SSH_CONNECT_TIMEOUT_S", default=15.0)
VALIDATION_SSH_PYTHON = env.str("VALIDATION_SSH_PYTHON", default="python3")
VALIDATION_AGENT_TIMEOUT_S = env.float("VALIDATION_AGENT_TIMEOUT_S", default=600.0)
# An agent document whose GEMM/copy figures were injected (the test seam,
# PROVISIONING_AGENT_INJECT_FIGURES) is rejected unless this is on: tests only.
VALIDATION_ALLOW_INJECTED_FIGURES = False
VALIDATION_AGENT_SIZES = env.list("VALIDATION_AGENT_SIZES", default=[])
# Beat runs the quick profile on idle nodes this often (hours); a node booked now or within
# the margin (minutes) is never touched.
VALIDATION_IDLE_SWEEP_HOURS = env.float("VALIDATION_IDLE_SWEEP_HOURS", default=6.0)
VALIDATION_IDLE_BOOKING_MARGIN_MINUTES = env.int(
    "VALIDATION_IDLE_BOOKING_MARGIN_MINUTES", default=60
)
# --- Telemetry and health (day two: provisioning/telemetry, provisioning/health) ------
# Prometheus that scrapes the nodes ("" none: nothing is evaluated, the panel says so).
# `make run` starts Debian's prometheus on PORTAL_PROMETHEUS_PORT when it is installed.
PORTAL_PROMETHEUS_URL = env.str("PORTAL_PROMETHEUS_URL", default="")
PORTAL_PROMETHEUS_PORT = env.int("PORTAL_PROMETHEUS_PORT", default=9090)
PORTAL_PROMETHEUS_SCRAPE_INTERVAL_S = env.float("PORTAL_PROMETHEUS_SCRAPE_INTERVAL_S", default=15.0)
PORTAL_PROMETHEUS_RETENTION = env.str("PORTAL_PROMETHEUS_RETENTION", default="15d")
PORTAL_PROMETHEUS_TIMEOUT_S = env.float("PORTAL_PROMETHEUS_TIMEOUT_S", default=5.0)
# The bearer token Prometheus presents to the service discovery and the simulated
# exporters ("" derives one from SECRET_KEY; production sets its own secret).
PORTAL_TELEMETRY_TOKEN = secret("PORTAL_TELEMETRY_TOKEN")
# Where Prometheus reaches the portal for simulated nodes' exporters (host:port; ""
# takes the host of PORTAL_BASE_URL).
PORTAL_TELEMETRY_SIMULATED_TARGET = env.str("PORTAL_TELEMETRY_SIMULATED_TARGET", default="")
# Real nodes: dcgm-exporter's and node_exporter's ports.
PORTAL_TELEMETRY_DCGM_PORT = env.int("PORTAL_TELEMETRY_DCGM_PORT", default=9400)
PORTAL_TELEMETRY_NODE_EXPORTER_PORT = env.int("PORTAL_TELEMETRY_NODE_EXPORTER_PORT", default=9100)
# Beat evaluates the health rules this often (s); detection is within one scrape plus this.
PORTAL_HEALTH_EVALUATE_EVERY_S = env.float("PORTAL_HEALTH_EVALUATE_EVERY_S", default=15.0)
# Low utilisation: an order's mean GPU utilisation under the threshold for this long.
PORTAL_LOW_UTIL_THRESHOLD = env.float("PORTAL_LOW_UTIL_THRESHOLD", default=0.75)
PORTAL_LOW_UTIL_MINUTES = env.int("PORTAL_LOW_UTIL_MINUTES", default=30)
# The monitoring panel's charts refresh this often (s; htmx, no reload).
PORTAL_PANEL_REFRESH_S = env.int("PORTAL_PANEL_REFRESH_S", default=15)
