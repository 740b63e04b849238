"""Settings and the Celery wiring hold together: every name resolves, every task is
bounded, production settings pass Django's deployment checks, the catalogue is complete."""

from __future__ import annotations

import gettext
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from core import queues
from portal.celery import app, route_task

ROOT = Path(__file__).resolve().parents[2]
PO = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"


def project_tasks() -> dict:
    return {
        name: task
        for name, task in app.tasks.items()
        if name.split(".")[0]
        in ("core", "accounts", "inventory", "billing", "provisioning", "portal")
    }


def test_every_beat_entry_names_a_registered_task():
    tasks = project_tasks()
    assert settings.CELERY_BEAT_SCHEDULE
    for entry, spec in settings.CELERY_BEAT_SCHEDULE.items():
        assert spec["task"] in tasks, f"beat entry {entry!r} names no task: {spec['task']}"


def test_the_beat_schedule_is_one_table():
    # Every periodic task is in portal/settings/celery.py's one literal table: no other
    # settings module adds an entry afterwards.
    settings_dir = ROOT / "portal" / "settings"
    for module in settings_dir.glob("*.py"):
        text = module.read_text()
        assert "CELERY_BEAT_SCHEDULE[" not in text, module.name
        if module.name != "celery.py":
            assert "CELERY_BEAT_SCHEDULE =" not in text, module.name


def test_every_task_declares_its_queue_on_its_decorator():
    tasks = project_tasks()
    assert tasks
    undeclared = sorted(
        name for name, task in tasks.items() if getattr(task, "queue", None) not in queues.ALL
    )
    assert undeclared == [], f"tasks without queue= of core.queues.CeleryQueue: {undeclared}"


def test_the_router_sends_each_task_name_to_the_queue_its_task_declares():
    for name, task in project_tasks().items():
        # By name alone, as the outbox publishes (no task object, no options).
        declared = getattr(task, "queue", None) or queues.CeleryQueue.DEFAULT
        assert app.amqp.router.route({}, name)["queue"].name == declared, name
    # The queues the name-glob routes gave before each task declared its own.
    expected = {
        "billing.tasks.document_render_invoice": queues.CeleryQueue.DOCUMENTS,
        "billing.tasks.document_render_credit_note": queues.CeleryQueue.DOCUMENTS,
        "billing.tasks.quote_email": queues.CeleryQueue.BILLING,
        "provisioning.tasks.provisioning_launch": queues.CeleryQueue.PROVISIONING,
        "provisioning.tasks.sla_credits_sweep_task": queues.CeleryQueue.PROVISIONING,
        "provisioning.validation.tasks.validation_run_execute_task": (
            queues.CeleryQueue.VALIDATION
        ),
        "provisioning.validation.tasks.document_render_acceptance_report": (
            queues.CeleryQueue.DOCUMENTS
        ),
        "inventory.tasks.import_job_run_task": queues.CeleryQueue.DEFAULT,
        "portal.tasks.health_check": queues.CeleryQueue.DEFAULT,
    }
    for name, queue in expected.items():
        assert app.amqp.router.route({}, name)["queue"].name == queue, name


def test_the_router_keeps_an_explicit_queue_and_sends_unknown_names_to_the_default():
    assert route_task("billing.tasks.document_render_invoice", (), {}, {"queue": "billing"}) is None
    assert route_task("no.such.task", (), {}, {}) is None
    assert app.amqp.router.route({}, "no.such.task")["queue"].name == queues.CeleryQueue.DEFAULT


def test_every_task_has_its_own_time_limit_within_the_broker_visibility_timeout():
    longest = settings.CELERY_LONGEST_TASK_S
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] > longest
    for name, task in project_tasks().items():
        assert task.time_limit, f"{name} has no hard time limit"
        assert task.soft_time_limit and task.soft_time_limit < task.time_limit, name
        assert task.time_limit <= longest, name


def test_production_settings_pass_the_deployment_checks():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "k" * 20 + "-production-like-secret-" + "x9Q2#vL7" * 4,
        "DJANGO_ALLOWED_HOSTS": "portal.example.com",
    }
    env.pop("DJANGO_SECURE_SSL_REDIRECT", None)  # the test settings turn it off
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings", "DJANGO_DEBUG": "0"}
    env.pop("DJANGO_SECRET_KEY", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_the_chinese_catalogue_is_complete():
    result = subprocess.run(
        ["msgfmt", "--check", "--statistics", "-o", os.devnull, str(PO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "untranslated" not in result.stderr and "fuzzy" not in result.stderr, result.stderr


def test_the_chinese_catalogue_is_compiled(tmp_path):
    fresh = tmp_path / "django.mo"
    subprocess.run(["msgfmt", "-o", str(fresh), str(PO)], check=True)
    with fresh.open("rb") as f:
        expected = gettext.GNUTranslations(f)._catalog
    with PO.with_suffix(".mo").open("rb") as f:
        shipped = gettext.GNUTranslations(f)._catalog
    missing = sorted(k for k in expected if shipped.get(k) != expected[k])
    assert missing == [], f"run `make messages`: {len(missing)} entries differ, e.g. {missing[:3]}"


@pytest.mark.parametrize("name", ["MONEY_MAX_DIGITS", "PORTAL_BASE_URL", "CELERY_LONGEST_TASK_S"])
def test_project_settings_are_set(name):
    assert getattr(settings, name)


@pytest.mark.django_db
def test_connections_do_not_start_parallel_query_workers():
    # Many short requests at once: parallel query's extra server processes only add
    # contention (bench/ordering.py: 32 clients were no faster than one with them).
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW max_parallel_workers_per_gather")
        assert cursor.fetchone()[0] == "0"
