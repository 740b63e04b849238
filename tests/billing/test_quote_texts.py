"""Issue 9, point 17 (the quote's small things): "Draft (draft)" loses its echo, a
self-service quote is prepared by the provider's sales team, and the quote names the
price book that priced it and that the price holds for the whole term."""

from __future__ import annotations

import subprocess
from decimal import Decimal

import pytest

from accounts.models import Organisation
from billing.quotes import documents as quote_documents
from billing.quotes import services as qs

pytestmark = pytest.mark.django_db


def _text(quote, tmp_path) -> str:
    path = tmp_path / "q.pdf"
    path.write_bytes(quote_documents.render_quote_pdf(quote=quote, language="en"))
    out = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True)
    return " ".join(out.stdout.split())


def _quote(demo, actor):
    return qs.quote_create(
        site=demo["sz"],
        organisation=Organisation.objects.get(pk=demo["org"].pk),
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=actor,
        extra_discount=Decimal("0"),
    )


def test_a_draft_says_draft_once_and_names_its_price_book(demo, tmp_path):
    text = _text(_quote(demo, demo["sales"]), tmp_path)
    assert "Draft (draft)" not in text and "Draft: for review only" in text
    assert f"Priced from the price book “{demo['sz_book'].display_name}”" in text
    assert "the prices hold for the whole term" in text
    assert "Prepared by: " + (demo["sales"].get_full_name() or "sales") in text


def test_a_self_service_quote_is_prepared_by_the_sales_team(demo, tmp_path, settings):
    settings.PORTAL_SALES_CONTACT_NAME = "Wang Fang"
    text = _text(_quote(demo, demo["customer"]), tmp_path)
    assert "Prepared by: Wang Fang" in text
    assert settings.PORTAL_PROVIDER_EMAIL in text
    assert demo["customer"].email not in text.split("Prepared by")[1]
