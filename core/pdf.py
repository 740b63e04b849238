"""The PDF toolkit every document uses: a Django template rendered by WeasyPrint, stored once.

- ``render_pdf`` renders a template under ``templates/pdf/`` in a language. Every resource
  WeasyPrint asks for goes through ``LocalFetcher``: files under ``templates/pdf/`` and the
  project's static folders (found by ``django.contrib.staticfiles`` finders, or named
  ``static:<path>``) and ``data:`` URLs; anything else (``http(s)``, ``ftp``, other files)
  raises ``ResourceRefused`` and stops the rendering, so no document ever fetches from
  the network or reads files outside those folders.
- Fonts (``templates/pdf/fonts.css``): "Noto Sans CJK SC GB2312", the system Noto Sans CJK
  SC (Debian ``fonts-noto-cjk``) cut down to GB 2312, Latin and punctuation
  (``templates/pdf/fonts/``, made by ``scripts/subset_pdf_fonts.py``): WeasyPrint copies
  and subsets 1.6 MB instead of the 20 MB collection for every document. Any character it
  lacks comes from the full system font named after it; WeasyPrint embeds the subset used.
- ``store_document`` keeps the bytes once per (owner, language) with their SHA-256.

Quotes (``billing.quotes.documents``), invoices (``billing.invoicing.documents``),
contracts and acceptance reports build their context and call these.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from weasyprint import HTML
from weasyprint.document import Document
from weasyprint.text.fonts import FontConfiguration
from weasyprint.urls import URLFetcher, URLFetcherResponse, path2url

logger = logging.getLogger(__name__)

PDF_TEMPLATE_PREFIX = "pdf/"
PDF_TEMPLATE_DIR = Path(settings.BASE_DIR) / "templates" / "pdf"


class ResourceRefused(ValueError):
    """A PDF template asked for a resource outside the allowed local folders."""


def sha256_of(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


# --- Rendering --------------------------------------------------------------------------


def allowed_roots() -> list[Path]:
    """Folders a PDF may read from: ``templates/pdf`` and every static files folder."""
    roots = [PDF_TEMPLATE_DIR.resolve()]
    for finder in finders.get_finders():
        for storage in getattr(finder, "storages", {}).values():
            location = getattr(storage, "location", None)
            if location:
                roots.append(Path(location).resolve())
    return roots


class LocalFetcher(URLFetcher):
    """WeasyPrint's fetcher, reduced to local files in allowed folders and ``data:`` URLs.

    ``static:portal/logo.png`` is looked up with the staticfiles finders; ``file:`` URLs
    must point into an allowed folder (symbolic links resolved first). Every other URL
    raises ``ResourceRefused``; with ``fail_on_errors`` WeasyPrint then stops rendering
    instead of leaving a hole in the document.
    """

    def __init__(self) -> None:
        super().__init__(allowed_protocols=("file", "data", "static"), fail_on_errors=True)

    def fetch(self, url: str, headers: dict[str, str] | None = None) -> URLFetcherResponse:
        scheme, _sep, rest = url.partition(":")
        scheme = scheme.lower()
        if scheme == "data":
            # Decoded in memory by urllib's data: handler; nothing is opened.
            request = urllib.request.Request(url)  # noqa: S310 - the scheme is data:
            response = urllib.request.DataHandler().data_open(request)
            return URLFetcherResponse(url, response.read(), dict(response.headers.items()))
        if scheme == "static":
            relative = unquote(rest.split("?", 1)[0].split("#", 1)[0]).lstrip("/")
            try:
                found = finders.find(relative) if relative else None
            except SuspiciousFileOperation as exc:
                raise ResourceRefused(f"not a static file: {url}") from exc
            if not found:
                raise ResourceRefused(f"no such static file: {url}")
            path = Path(found if isinstance(found, str) else found[0])
        elif scheme == "file":
            parts = urlsplit(url)
            if parts.netloc not in ("", "localhost"):
                raise ResourceRefused(f"remote file URLs are refused: {url}")
            path = Path(urllib.request.url2pathname(parts.path))
        else:
            raise ResourceRefused(f"PDFs fetch nothing from the network: {url}")
        return self._file_response(path, url)

    @staticmethod
    def _file_response(path: Path, url: str) -> URLFetcherResponse:
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise ResourceRefused(f"no such file: {url}") from exc
        if not resolved.is_file() or not any(
            resolved.is_relative_to(root) for root in allowed_roots()
        ):
            raise ResourceRefused(f"outside the PDF and static folders: {url}")
        content_type = mimetypes.guess_type(resolved.name)[0] or "application/octet-stream"
        return URLFetcherResponse(
            path2url(str(resolved)), resolved.read_bytes(), {"Content-Type": content_type}
        )


_local = threading.local()


def _font_config() -> FontConfiguration:
    """One font configuration per thread: fontconfig lookups are reused between renders."""
    config = getattr(_local, "font_config", None)
    if config is None:
        config = _local.font_config = FontConfiguration()
    return config


def render_html(template_name: str, context: dict[str, Any], *, language: str) -> str:
    """The HTML of a PDF template in ``language`` (autoescaped like every template)."""
    if not template_name.startswith(PDF_TEMPLATE_PREFIX) or ".." in template_name:
        raise ValueError(f"PDF templates live under {PDF_TEMPLATE_PREFIX}: {template_name!r}")
    with translation.override(language):
        return render_to_string(
            template_name,
            {
                # A document may word its page counter in another language (a contract:
                # the prevailing one, whatever language it was rendered in).
                "page_counter_css": page_counter_css(),
                **context,
                "html_lang": html_lang(language),
            },
        )


def render_document(template_name: str, context: dict[str, Any], *, language: str) -> Document:
    """The laid-out WeasyPrint document (``.pages``, ``.write_pdf()``)."""
    html = render_html(template_name, context, language=language)
    return HTML(
        string=html, base_url=path2url(str(PDF_TEMPLATE_DIR) + "/"), url_fetcher=LocalFetcher()
    ).render(font_config=_font_config())


def render_pdf(template_name: str, context: dict[str, Any], *, language: str) -> bytes:
    """Render ``templates/pdf/...`` to HTML in ``language``, then to PDF bytes."""
    return render_document(template_name, context, language=language).write_pdf()


def html_lang(language: str) -> str:
    """The ``lang`` attribute: ``zh-Hans`` picks Simplified Chinese glyph forms."""
    return "zh-Hans" if language.lower().startswith("zh") else language


def css_string(text: str) -> str:
    """``text`` as a quoted CSS string, safe inside ``<style>``."""
    out = []
    for ch in text:
        if ch in '"\\' or ch in "<>&" or ord(ch) < 0x20:
            out.append(f"\\{ord(ch):x} ")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def css_content(text: str) -> SafeString:
    """``text`` as a CSS ``content`` value, for page margin boxes (escaped)."""
    return mark_safe(css_string(text))  # noqa: S308 - css_string escapes quotes, <, >, &


def page_counter_css() -> SafeString:
    """The CSS ``content`` for "Page X of Y" in the active language (via gettext)."""
    marker = "\x00"
    text = _("Page %(page)s of %(pages)s") % {
        "page": f"{marker}page{marker}",
        "pages": f"{marker}pages{marker}",
    }
    parts = []
    for i, piece in enumerate(text.split(marker)):
        if i % 2:
            parts.append(f"counter({'pages' if piece == 'pages' else 'page'})")
        elif piece:
            parts.append(css_string(piece))
    return mark_safe(" ".join(parts))  # noqa: S308 - every piece is escaped by css_string


# --- Stored documents -------------------------------------------------------------------


def normalise_language(language: str) -> str:
    code = (language or "").lower()
    known = {c.lower(): c for c, _name in settings.LANGUAGES}
    if code in known:
        return known[code]
    if code.startswith("zh"):
        return "zh-hans"
    if code.split("-")[0] in known:
        return known[code.split("-")[0]]
    raise ValueError(f"no PDF language {language!r}; choose one of {sorted(known)}")


def store_document(
    *,
    model: type[Any],
    owner: dict[str, Any],
    language: str,
    data: bytes,
    name: str,
    keep: Callable[[Any], bool],
) -> Any:
    """Store rendered PDF bytes once per (owner, language), with their SHA-256.

    Safe with several workers: the unique (owner, language) row decides; a loser deletes
    its file and returns the stored row. A stored row for which ``keep`` says yes is never
    replaced; otherwise the new file replaces it and the old file is deleted after commit.
    """
    digest = sha256_of(data)
    with transaction.atomic():
        document = model.objects.select_for_update().filter(**owner, language=language).first()
        if document is None:
            document = model(**owner, language=language, sha256=digest, size=len(data))
            document.file.save(name, ContentFile(data), save=False)
            try:
                with transaction.atomic():
                    document.save()
                return document
            except IntegrityError:
                # Another worker stored it first: keep theirs, drop our file.
                logger.info("%s [%s]: stored by another worker meanwhile", owner, language)
                document.file.delete(save=False)
                document = model.objects.select_for_update().get(**owner, language=language)
        if keep(document):
            return document  # stored meanwhile by another worker: never replaced
        old_name = document.file.name
        document.file.save(name, ContentFile(data), save=False)
        document.sha256 = digest
        document.size = len(data)
        document.created_at = timezone.now()
        document.save(update_fields=["file", "sha256", "size", "created_at"])
        storage = document.file.storage
        if old_name and old_name != document.file.name:
            transaction.on_commit(lambda: storage.delete(old_name))
        return document
