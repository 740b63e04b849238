"""The one pipeline every stored document goes through: a ``DocumentKind`` per kind.

A kind (quote, invoice or payment request, credit note, contract draft and sealed
contract, estimate, acceptance report) declares only what differs:

- ``template`` and ``context(owner, language=...)``: what is rendered (``core.pdf``);
- ``model`` and ``owner_lookup(owner)``: where the file is stored, with its SHA-256, once
  per (owner, language) (``core.pdf.store_document``); ``filename(owner, language=...)``
  names the file;
- ``is_current(document, owner, since=...)``: whether a stored file may be served (by
  default a stored file is kept for good);
- ``render_task``: the registered name of the Celery task that renders it on the
  documents queue (with ``DOCUMENT_TASK_OPTIONS``), and ``task_args``.

The pipeline is written once here: ``render`` (fresh bytes, not stored), ``stored`` (the
current stored file or None; never renders, so web requests can use it), ``store``,
``document`` (the stored file, rendered and stored when there is none: what the task
calls) and ``ask`` (enqueue the render task through the outbox, ``core.jobs``). Web pages
serve a kind through ``core.document_views.stored_or_preparing``.

Every kind registers itself (``register``) so a test can check that each has its render
task registered on the documents queue with the retry options.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

from django.db import InterfaceError, OperationalError

from core import jobs
from core.pdf import normalise_language, render_pdf, store_document
from core.queues import CeleryQueue

# Every document render is safe to run twice (stored once per owner and language):
# acknowledged late, re-run when its worker dies, retried on database errors, on the
# documents queue. Every document task is declared with these (``**DOCUMENT_TASK_OPTIONS``).
DOCUMENT_TASK_OPTIONS: dict[str, Any] = {
    "queue": CeleryQueue.DOCUMENTS,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "max_retries": 3,
    "soft_time_limit": 120,
    "time_limit": 150,
}

Owner = TypeVar("Owner")
Doc = TypeVar("Doc")

#: Every document kind, by ``name`` (filled by ``register``).
KINDS: dict[str, DocumentKind[Any, Any]] = {}


class DocumentKind(Generic[Owner, Doc]):
    """One kind of stored document; subclasses declare what differs (module docstring)."""

    name: ClassVar[str]
    template: ClassVar[str]
    render_task: ClassVar[str]
    model: ClassVar[type[Any]]
    #: The owner's foreign key on ``model`` (``owner_lookup`` may add more).
    owner_field: ClassVar[str]

    # --- What a kind declares -------------------------------------------------------------

    def context(self, owner: Owner, *, language: str) -> dict[str, Any]:
        raise NotImplementedError

    def filename(self, owner: Owner, *, language: str) -> str:
        raise NotImplementedError

    def owner_lookup(self, owner: Owner) -> dict[str, Any]:
        """The fields that pick the owner's rows in ``model`` (besides the language)."""
        return {self.owner_field: owner}

    def is_current(self, document: Doc, owner: Owner, *, since: datetime | None = None) -> bool:
        """Whether a stored document may be served: by default it is kept for good."""
        return True

    def refreshed(self, owner: Owner) -> Owner:
        """The owner as ``document`` works on it (a kind whose status matters re-reads it)."""
        return owner

    def language(self, owner: Owner, language: str | None) -> str:
        """The language asked for, normalised (``core.pdf.normalise_language``)."""
        return normalise_language(language or "")

    def task_args(self, owner: Owner, *, language: str) -> tuple[Any, ...]:
        """The render task's arguments: the owner's id and the language."""
        return (owner.pk, language)  # type: ignore[attr-defined]

    # --- The pipeline, once -----------------------------------------------------------

    def render(self, owner: Owner, *, language: str) -> bytes:
        """A fresh rendering (not stored)."""
        return render_pdf(self.template, self.context(owner, language=language), language=language)

    def stored(
        self, owner: Owner, *, language: str | None = None, since: datetime | None = None
    ) -> Doc | None:
        """The stored document when it is current, else None; never renders."""
        language = self.language(owner, language)
        found = self.model.objects.filter(**self.owner_lookup(owner), language=language).first()
        return found if found is not None and self.is_current(found, owner, since=since) else None

    def store(self, owner: Owner, *, language: str, data: bytes) -> Doc:
        """Keep ``data`` with its SHA-256; a current stored document is never replaced."""
        return store_document(
            model=self.model,
            owner=self.owner_lookup(owner),
            language=language,
            data=data,
            name=self.filename(owner, language=language),
            keep=lambda document: self.is_current(document, owner),
        )

    def document(self, owner: Owner, *, language: str | None = None) -> Doc:
        """The stored document, rendered and stored first when there is no current one.
        Safe with several workers (the unique (owner, language) row decides)."""
        owner = self.refreshed(owner)
        language = self.language(owner, language)
        found = self.stored(owner, language=language)
        if found is not None:
            return found
        return self.store(owner, language=language, data=self.render(owner, language=language))

    def ask(self, owner: Owner, *, language: str | None = None) -> None:
        """Ask the documents queue for the document (after the commit, through the
        outbox): web requests never render a PDF themselves."""
        language = self.language(owner, language)
        jobs.enqueue(self.render_task, *self.task_args(owner, language=language))


K = TypeVar("K", bound=DocumentKind[Any, Any])


def register(kind: K) -> K:
    """Record ``kind`` in ``KINDS`` (under its ``name``) and return it."""
    if KINDS.get(kind.name, kind) is not kind:
        raise ValueError(f"a document kind is already registered as {kind.name!r}")
    KINDS[kind.name] = kind
    return kind
