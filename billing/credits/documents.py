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
from core.documents import DocumentKind, register
from core.pdf import css_content

TEMPLATE = "pdf/credit_note.html"


def credit_note_context(note: CreditNote, *, language: str) -> dict[str, Any]:
    note = CreditNote.objects.select_related("invoice", "order__site", "organisation").get(
        pk=note.pk
    )
    site = note.order.site
    zh = language.lower().startswith("zh")
    with translation.override(language):
        the_provider = provider(language, site)
        party = (
            (note.fapiao or {}).get("title")
            or note.organisation.legal_name
            or note.organisation.name
        )
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
            # The note's own number and the customer, as an invoice's pages carry theirs:
            # the invoice it corrects is named once, in the masthead.
            "running_right_css": css_content(f"{note.number} · {party}"),
            "footer_left_css": css_content(f"{the_provider.name} · {the_provider.website}"),
        }


RENDER_TASK = "billing.tasks.document_render_credit_note"


class CreditNoteKind(DocumentKind[CreditNote, CreditNoteDocument]):
    """Rendered once per language and kept (a credit note never changes once issued)."""

    name = "credit_note"
    template = TEMPLATE
    render_task = RENDER_TASK
    model = CreditNoteDocument
    owner_field = "credit_note"

    def context(self, owner: CreditNote, *, language: str) -> dict[str, Any]:
        return credit_note_context(owner, language=language)

    def filename(self, owner: CreditNote, *, language: str) -> str:
        return f"{owner.number}-{language}.pdf"


CREDIT_NOTE = register(CreditNoteKind())


def credit_note_document(*, note: CreditNote, language: str) -> CreditNoteDocument:
    """The credit note's PDF in ``language``, rendered once and kept."""
    return CREDIT_NOTE.document(note, language=language)
