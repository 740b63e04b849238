"""The raw outputs of one node in a validation run, as one zip archive: every check's
output exactly as stored (the bytes whose SHA-256 the acceptance report lists), the
agent's document, and ``SHA256SUMS`` (``sha256sum -c`` checks the archive)."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterable

from provisioning.models import ValidationArtifact

_EXT = {
    "json": "json",
    "agent-gemm-json": "json",
    "agent-copy-json": "json",
    "nvidia-smi-csv": "csv",
}


def artifact_filename(artifact: ValidationArtifact, seen: set[str]) -> str:
    base = artifact.check_name or "output"
    name = f"{base}.{_EXT.get(artifact.raw_format, 'txt')}"
    n = 2
    while name in seen:
        name = f"{base}-{n}.{_EXT.get(artifact.raw_format, 'txt')}"
        n += 1
    seen.add(name)
    return name


def raw_outputs_zip(artifacts: Iterable[ValidationArtifact], *, folder: str) -> bytes:
    """A zip of ``artifacts`` under ``folder/``, with ``SHA256SUMS``."""
    buffer = io.BytesIO()
    sums = []
    seen: set[str] = set()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for artifact in artifacts:
            data = artifact.content.encode("utf-8")
            name = artifact_filename(artifact, seen)
            archive.writestr(f"{folder}/{name}", data)
            sums.append(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
        archive.writestr(f"{folder}/SHA256SUMS", "".join(sums))
    return buffer.getvalue()
