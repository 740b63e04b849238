"""Credit note PDFs (红字): ``templates/pdf/credit_note.html`` through ``core.pdf``.

A credit note never changes once issued, so its PDF is rendered once per language and
kept with its SHA-256 (``credit_note_document``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone, translation
from django.utils.translation import gettext as _

from billing.documents.common import provider
from billing.models import CreditNote, CreditNoteDocument
from core import jobs
from core.pdf import css_content, normalise_language, render_pdf, store_document

TEMPLATE = "pdf/credit_note.html"


def credit_note_context(note: CreditNote, *, language: str) -> dict[str, Any]:
    note = CreditNote.objects.select_related("invoice", "order__site", "organisation").get(
        pk=note.pk
    )
    site = note.order.site
    zh = language.lower().startswith("zh")
    with translation.override(language):
        the_provider = provider(language, site)
        lines = [
            {
                "description": (line.get("description_zh") if zh else "") or line["description"],
                "evidence": line.get("detail", {}).get("evidence_zh" if zh else "evidence_en", ""),
                "net": Decimal(line["net"]),
                "vat": Decimal(line["vat"]),
                "vat_rate": Decimal(line["vat_rate"]),
            }
            for line in note.lines
        ]
        return {
            "note": note,
            "invoice": note.invoice,
            "order": note.order,
            "organisation": note.organisation,
            "fapiao": note.fapiao,
            "site": site,
            "site_timezone": site.timezone,
            "provider": the_provider,
            "issued": timezone.localtime(note.issued_at, site.tzinfo),
            "currency": note.currency,
            "lines": lines,
            "running_left_css": css_content(f"{the_provider.brand} · {_('Credit note')}"),
            "running_right_css": css_content(f"{note.number} · {note.invoice.number}"),
            "footer_left_css": css_content(f"{the_provider.name} · {the_provider.website}"),
        }


RENDER_TASK = "billing.tasks.document_render_credit_note"


def stored_credit_note_document(*, note: CreditNote, language: str) -> CreditNoteDocument | None:
    """The stored PDF, or None; never renders."""
    language = normalise_language(language)
    return CreditNoteDocument.objects.filter(credit_note=note, language=language).first()


def credit_note_document_ask(*, note: CreditNote, language: str) -> None:
    """Ask the documents queue for the credit note's PDF (web requests never render)."""
    jobs.enqueue(RENDER_TASK, note.pk, normalise_language(language))


def credit_note_document(*, note: CreditNote, language: str) -> CreditNoteDocument:
    language = normalise_language(language)
    stored = CreditNoteDocument.objects.filter(credit_note=note, language=language).first()
    if stored is not None:
        return stored
    data = render_pdf(TEMPLATE, credit_note_context(note, language=language), language=language)
    return store_document(
        model=CreditNoteDocument,
        owner={"credit_note": note},
        language=language,
        data=data,
        name=f"{note.number}-{language}.pdf",
        keep=lambda document: True,
    )
