"""The Celery application. Configuration comes from Django settings (``CELERY_*``)."""

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["core", "accounts", "inventory", "billing", "provisioning", "portal"])


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
