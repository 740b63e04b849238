"""Backups that restore (README: Running in production, Backup and restore).

A backup is a folder ``<to>/portal-YYYYmmddTHHMMSSZ/`` holding:

- ``database.dump``: ``pg_dump --format=custom`` of the portal's database (compressed,
  restorable table by table with ``pg_restore``);
- ``documents.tar``: the stored documents directory (``MEDIA_ROOT``: every PDF the
  portal issued, whose SHA-256 the database keeps);
- ``manifest.json``: when, what, and the SHA-256 of both files (a damaged backup is found
  before it is restored).

``backup_create`` writes one and keeps the newest ``--keep``; ``backup_restore`` restores one
into a *new* database and a new documents folder, then checks every stored document
(each concrete ``core.models.StoredDocument``) against its SHA-256 and size.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connections

from core.models import StoredDocument

PREFIX = "portal-"
DUMP = "database.dump"
DOCUMENTS = "documents.tar"
MANIFEST = "manifest.json"


class BackupError(Exception):
    """A backup could not be made, restored or verified; the message says why."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _pg(alias: str = "default") -> tuple[dict[str, str], list[str]]:
    """The environment and connection arguments of PostgreSQL's tools for ``alias``."""
    db = connections[alias].settings_dict
    if "postgresql" not in db["ENGINE"]:
        raise BackupError(
            "Backups need PostgreSQL (DATABASE_URL); the embedded SQLite file is copied "
            "as a file while the portal is stopped."
        )
    env = {**os.environ}
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = str(db["PASSWORD"])
    args = []
    if db.get("HOST"):
        args += ["--host", str(db["HOST"])]
    if db.get("PORT"):
        args += ["--port", str(db["PORT"])]
    if db.get("USER"):
        args += ["--username", str(db["USER"])]
    return env, args


def _run(argv: list[str], env: dict[str, str]) -> None:
    tool = shutil.which(argv[0])
    if tool is None:
        raise BackupError(f"{argv[0]} is not installed (Debian: postgresql-client)")
    result = subprocess.run(  # noqa: S603 - fixed tools, our own arguments
        [tool, *argv[1:]], env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise BackupError(f"{argv[0]} failed ({result.returncode}): {result.stderr.strip()}")


def backup_create(*, to: Path, keep: int, now: datetime | None = None) -> Path:
    """Write a backup under ``to`` and delete all but the newest ``keep``."""
    if keep < 1:
        raise BackupError("--keep must be at least 1")
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    folder = to / f"{PREFIX}{stamp}"
    partial = to / f".{PREFIX}{stamp}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    env, args = _pg()
    name = str(connections["default"].settings_dict["NAME"])
    _run(["pg_dump", *args, "--format=custom", "--no-owner", "--no-acl",
          f"--file={partial / DUMP}", name], env)  # fmt: skip
    media = Path(settings.MEDIA_ROOT)
    with tarfile.open(partial / DOCUMENTS, "w") as tar:
        if media.is_dir():
            tar.add(media, arcname=".")
    manifest = {
        "created_at": stamp,
        "database": name,
        "documents": sum(model.objects.count() for model in document_models()),
        "files": {n: _sha256(partial / n) for n in (DUMP, DOCUMENTS)},
    }
    (partial / MANIFEST).write_text(json.dumps(manifest, indent=2))
    partial.rename(folder)  # a backup folder is complete or absent
    for old in backups(to)[keep:]:
        shutil.rmtree(old)
    return folder


def backups(to: Path) -> list[Path]:
    """The complete backups under ``to``, newest first."""
    if not to.is_dir():
        return []
    found = [p for p in to.iterdir() if p.is_dir() and p.name.startswith(PREFIX)]
    return sorted(found, key=lambda p: p.name, reverse=True)


def document_models() -> list[type[Any]]:
    return [
        model
        for model in apps.get_models()
        if issubclass(model, StoredDocument) and not model._meta.abstract
    ]


@dataclass
class Verification:
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def documents_verify(*, alias: str, media_root: Path) -> Verification:
    """Every stored document of database ``alias`` against its file under ``media_root``:
    present, of the recorded size, with the recorded SHA-256."""
    result = Verification()
    for model in document_models():
        label = model._meta.label
        for pk, name, sha256, size in (
            model.objects.using(alias).order_by("pk").values_list("pk", "file", "sha256", "size")
        ):
            result.checked += 1
            path = media_root / name
            where = f"{label} #{pk} ({name})"
            if not name or not path.is_file():
                result.problems.append(f"{where}: the file is missing")
                continue
            actual = _sha256(path)
            if actual != sha256:
                result.problems.append(
                    f"{where}: SHA-256 differs (recorded {sha256}, file {actual})"
                )
            elif path.stat().st_size != size:
                result.problems.append(f"{where}: size differs ({size} recorded)")
    return result


def _manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise BackupError(f"{folder}: not a backup ({MANIFEST}: {exc})") from exc
    for name, digest in manifest.get("files", {}).items():
        if not (folder / name).is_file() or _sha256(folder / name) != digest:
            raise BackupError(f"{folder / name}: damaged or missing (SHA-256 differs)")
    return dict(manifest)


RESTORED = "restored"  # the connection alias of the database being restored
_DB_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@contextmanager
def _restored_connection(database: str) -> Iterator[str]:
    connections.settings[RESTORED] = {**connections["default"].settings_dict, "NAME": database}
    try:
        yield RESTORED
    finally:
        if hasattr(connections._connections, RESTORED):  # type: ignore[attr-defined]
            connections[RESTORED].close()
            delattr(connections._connections, RESTORED)  # type: ignore[attr-defined]
        connections.settings.pop(RESTORED, None)


def backup_restore(*, folder: Path, database: str, media_root: Path) -> Verification:
    """Restore ``folder`` into the new database ``database`` (on the portal's PostgreSQL
    server) and the new documents folder ``media_root``; then check every document."""
    _manifest(folder)
    if not _DB_NAME.match(database):
        raise BackupError(f"{database!r}: use lower-case letters, digits and _ for the name")
    if media_root.exists() and any(media_root.iterdir()):
        raise BackupError(f"{media_root} is not empty: restore the documents into a new folder")
    env, args = _pg()
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database])
        if cursor.fetchone():
            raise BackupError(f"database {database} exists: restore into a new database")
        cursor.execute(f'CREATE DATABASE "{database}"')  # the name is checked above
    _run(["pg_restore", *args, "--no-owner", "--no-acl", "--exit-on-error",
          f"--dbname={database}", str(folder / DUMP)], env)  # fmt: skip
    media_root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(folder / DOCUMENTS) as tar:
        tar.extractall(media_root, filter="data")  # no absolute paths, no links out
    with _restored_connection(database) as alias:
        return documents_verify(alias=alias, media_root=media_root)
