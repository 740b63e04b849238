"""Issue 25, point 15: the credit-note PDF's later pages carry the note's own running
header (its number and the customer), not a repeat of the invoice it corrects, which the
masthead names once."""

from __future__ import annotations

import subprocess
from decimal import Decimal

import pytest

from billing.credits import services as credits
from billing.credits.documents import CREDIT_NOTE
from billing.orders import services as orders
from tests.billing.test_contracts import make_order

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_later_pages_carry_the_notes_header_not_the_invoices(demo, tmp_path, language):
    order = make_order(demo, term="month", duration=2)
    invoice = order.invoices.get()
    orders.invoice_mark_paid_by_transfer(invoice=invoice, reference="CMB-1", actor=demo["admin"])
    line = credits.CreditLine(
        description="Goodwill credit",
        net=Decimal("1.00"),
        vat_rate=Decimal("0.06"),
        tax_category="it_service",
    )
    note = credits.credit_note_issue(invoice=invoice, lines=[line] * 40, reason="Late.", actor=None)
    path = tmp_path / "note.pdf"
    path.write_bytes(CREDIT_NOTE.render(note, language=language))
    text = subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    first, *later = text.split("\f")
    later = [page for page in later if page.strip()]
    assert later, "forty lines run onto a second page"
    assert invoice.number in first  # the masthead: "Corrects …"
    party = order.organisation.legal_name or order.organisation.name
    for page in later:
        header = next(line for line in page.splitlines() if line.strip())
        assert note.number in header and party in header, header
        assert invoice.number not in header, header
