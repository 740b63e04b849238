"""The Celery application. Configuration comes from Django settings (``CELERY_*``)."""

import logging
import os
import threading
from pathlib import Path

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

logger = logging.getLogger(__name__)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(
    [
        "core",
        "accounts",
        "inventory",
        "billing",
        "provisioning",
        "provisioning.validation",
        "portal",
    ]
)


def _make_filesystem_broker_folders() -> None:
    """kombu's filesystem transport (the embedded default) needs its folders to exist."""
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
    backend = app.conf.result_backend or ""
    if backend.startswith("file://"):
        Path(backend.removeprefix("file://")).mkdir(parents=True, exist_ok=True)


if str(app.conf.broker_url or "").startswith("filesystem://"):
    _make_filesystem_broker_folders()


# --- The outbox relay inside every worker -------------------------------------------------
# Work written to the outbox while the broker was down is published by this loop once the
# broker answers again (beat runs the same relay every minute as a second line).
_relay_stop = threading.Event()


def _relay_loop() -> None:
    # Imported here: this module is loaded with the settings, before Django's apps are ready.
    from django.conf import settings
    from django.db import close_old_connections

    from core import outbox

    while not _relay_stop.wait(settings.PORTAL_OUTBOX_RELAY_EVERY):
        try:
            outbox.relay()
        except Exception:  # the database may be away for a moment: try again next round
            logger.exception("outbox relay loop")
        finally:
            close_old_connections()


@worker_ready.connect
def _start_outbox_relay(**_kwargs: object) -> None:
    threading.Thread(target=_relay_loop, name="outbox-relay", daemon=True).start()


@worker_shutdown.connect
def _stop_outbox_relay(**_kwargs: object) -> None:
    _relay_stop.set()
