"""Issue 23, points 1 and 6: the production process model (worker profiles, systemd
units) and the production settings (``check --deploy`` clean, secrets from files)."""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from core import queues
from portal import workers

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy" / "systemd"


def test_the_worker_profiles_cover_every_queue_each_with_its_pool():
    profiles = workers.profiles()
    dedicated = [p for name, p in profiles.items() if name != "all"]
    covered = [queue for p in dedicated for queue in p.queues]
    assert sorted(covered) == sorted(queues.ALL)  # each queue in exactly one profile
    assert set(profiles["all"].queues) == set(queues.ALL)
    argv = workers.celery_argv(profiles["documents"], concurrency=3)
    assert argv[argv.index("-Q") + 1] == "documents"
    assert argv[argv.index("-P") + 1] == "prefork" and argv[argv.index("-c") + 1] == "3"
    provisioning = workers.celery_argv(profiles["provisioning"])
    assert provisioning[provisioning.index("-P") + 1] == "threads"


def test_celery_worker_refuses_an_unknown_profile_by_name(capsys):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="choose one of: documents, provisioning"):
        call_command("celery_worker", "gpu")
    call_command("celery_worker", "provisioning", "--print")
    assert "-Q provisioning -P threads -c 64" in capsys.readouterr().out


def _unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    # systemd repeats keys (ExecStart=, LoadCredential=): keep the last, enough here.
    parser.read_string("\n".join(line for line in (UNITS / name).read_text().splitlines()))
    return parser


def test_the_units_run_the_commands_of_the_process_table():
    web = _unit("gpu-portal-web.service")
    assert "gpu-portal-migrate.service" in web["Unit"]["Requires"]
    assert "gpu-portal-migrate.service" in web["Unit"]["After"]
    assert web["Service"]["ExecStart"].endswith("gunicorn -c deploy/gunicorn.conf.py")
    assert (ROOT / "deploy" / "gunicorn.conf.py").is_file()
    migrate = (UNITS / "gpu-portal-migrate.service").read_text()
    assert "manage.py migrate_once" in migrate and "collectstatic --noinput" in migrate
    assert "Type=oneshot" in migrate
    worker = _unit("gpu-portal-worker@.service")
    assert worker["Service"]["ExecStart"].endswith("manage.py celery_worker %i")
    beat = _unit("gpu-portal-beat.service")
    assert beat["Service"]["ExecStart"].endswith("celery -A portal beat --loglevel=INFO")
    # Every secret reaches the processes as a file (systemd credentials), never inline.
    for name in sorted(p.name for p in UNITS.glob("*.service")):
        text = (UNITS / name).read_text()
        for line in text.splitlines():
            if line.startswith("Environment="):
                for assignment in line.removeprefix("Environment=").split():
                    key, _, value = assignment.partition("=")
                    if re.search(r"SECRET|PASSWORD|TOKEN|_URL", key):
                        assert key.endswith("_FILE") and value.startswith("%d/"), (name, key)


PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "portal.settings.production",
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "",
    "DATABASE_URL": "postgres://portal@db.internal:5432/portal",
    "CELERY_BROKER_URL": "redis://broker.internal:6379/0",
    "CACHE_URL": "redis://cache.internal:6379/0",
    "DJANGO_ALLOWED_HOSTS": "portal.example.com",
    "DJANGO_SECURE_SSL_REDIRECT": "1",
}


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PORTAL_"))}
    clean.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_check_deploy_is_clean_under_production_settings_with_the_key_from_a_file(tmp_path):
    key = tmp_path / "secret_key"
    key.write_text("p" * 20 + "Q7x!kLm2#vB9@zR4$wN8%tY6^uI3&oP1*aS5(dF0)gH" + "\n")
    env = {**PRODUCTION_ENV, "DJANGO_SECRET_KEY_FILE": str(key)}
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_a_cache_on_the_brokers_redis_and_a_missing_key_file():
    env = {**PRODUCTION_ENV, "DJANGO_SECRET_KEY": "x" * 60, "CACHE_URL": ""}
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "CACHE_URL must name the cache's own Redis" in result.stderr
    env = {**PRODUCTION_ENV, "DJANGO_SECRET_KEY_FILE": "/nonexistent/secret_key"}
    result = _manage("check", env=env)
    assert "DJANGO_SECRET_KEY_FILE=/nonexistent/secret_key: No such file" in result.stderr


TEMPLATES = ROOT / "templates"
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\b(?:src=|type=\"application/json\"))[^>]*>", re.I)
EVENT_ATTRIBUTE = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.I)


def test_no_page_template_has_an_inline_script_style_or_event_attribute():
    found = []
    for template in sorted(TEMPLATES.rglob("*.html")):
        if "pdf" in template.relative_to(TEMPLATES).parts:  # WeasyPrint runs no script
            continue
        text = template.read_text()
        found += [f"{template.name}: inline <script>" for _ in INLINE_SCRIPT.findall(text)]
        found += [f"{template.name}: on* attribute" for _ in EVENT_ATTRIBUTE.findall(text)]
        found += [f"{template.name}: <style> element" for _ in re.findall(r"<style\b", text)]
    assert found == []


@pytest.mark.django_db
def test_pages_carry_the_content_security_policy(client):
    response = client.get("/en/accounts/login/")
    policy = dict(
        part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";")
    )
    assert policy["script-src"] == "'self' https://js.stripe.com"  # no inline, no eval
    assert policy["style-src"] == "'self'"
    assert policy["object-src"] == "'none'" and policy["base-uri"] == "'self'"
    docs = client.get("/api/v1/docs/")["Content-Security-Policy"]
    assert "style-src 'self' 'unsafe-inline'" in docs  # Redoc's run-time styles, there only
