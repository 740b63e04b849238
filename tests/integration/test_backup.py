"""Issue 23, point 4: backups that restore. A real pg_dump (custom format) and the stored
documents; the newest --keep kept; restored into a new PostgreSQL database and a new
folder, every stored document checked against its SHA-256; a tampered document fails the
check, named, with both digests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from billing.models import QuoteDocument
from core import backups
from core.pdf import sha256_of, store_document
from tests.billing.test_quotes import make_quote
from tests.integration.workers import ROOT, database_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def new_database_names():
    names: list[str] = []

    def new() -> str:
        names.append(f"restore_{uuid.uuid4().hex[:10]}")
        return names[-1]

    yield new
    with connection.cursor() as cursor:
        for name in names:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _restore(folder: Path, database: str, media_root: Path) -> subprocess.CompletedProcess[str]:
    """``manage.py backup_restore`` as an operator runs it, against the test's server."""
    return subprocess.run(
        [sys.executable, "manage.py", "backup_restore", str(folder),
         "--database", database, "--media-root", str(media_root)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings.test",
             "DATABASE_URL": database_url()},
    )  # fmt: skip


def test_backup_restore_and_verify_every_document(demo, tmp_path, new_database_names):
    quotes = [make_quote(demo), make_quote(demo, nodes=1)]
    stored = [
        store_document(
            model=QuoteDocument,
            owner={"quote": quote},
            language="en",
            data=f"%PDF-1.7 quote {quote.number}".encode() * 100,
            name=f"{quote.number}.pdf",
            keep=lambda _doc: True,
        )
        for quote in quotes
    ]
    to = tmp_path / "backups"
    made = [
        backups.backup_create(to=to, keep=1, now=datetime(2026, 12, day, 2, 30, tzinfo=UTC))
        for day in (1, 2)
    ]
    # Retention: the newest only (--keep 1).
    assert backups.backups(to) == [made[1]]
    assert not made[0].exists()

    database = new_database_names()
    said = _restore(made[1], database, tmp_path / "r1")
    assert said.returncode == 0, said.stdout + said.stderr
    said = said.stdout
    assert f"Restored into database {database}" in said
    assert f"{QuoteDocument.objects.count()} stored documents checked" in said
    with connection.cursor() as cursor:  # a real, separate database with the rows
        cursor.execute("SELECT datname FROM pg_database WHERE datname = %s", [database])
        assert cursor.fetchone() == (database,)
    restored = tmp_path / "r1" / stored[0].file.name
    assert sha256_of(restored.read_bytes()) == stored[0].sha256

    # A document altered on disk (after it was issued) is caught at the next restore.
    Path(stored[1].file.path).write_bytes(b"%PDF-1.7 not what was issued")
    tampered = backups.backup_create(to=to, keep=5)
    failed = _restore(tampered, new_database_names(), tmp_path / "r2")
    assert failed.returncode != 0
    problems = failed.stderr
    assert re.search(r"1 of \d+ stored documents failed their check", problems), problems
    assert (
        f"billing.QuoteDocument #{stored[1].pk} ({stored[1].file.name}): SHA-256 differs "
        f"(recorded {stored[1].sha256}, file " in problems
    )

    # Never over an existing database, never into a folder that holds files.
    with pytest.raises(CommandError, match=f"database {database} exists"):
        call_command(
            "backup_restore", str(made[1]), database=database, media_root=str(tmp_path / "r3")
        )
    with pytest.raises(CommandError, match="is not empty"):
        call_command(
            "backup_restore",
            str(made[1]),
            database=new_database_names(),
            media_root=str(tmp_path / "r1"),
        )
