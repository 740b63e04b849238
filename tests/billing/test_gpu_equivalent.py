"""Issue 9, point 7: per GPU-hour and GPU-month equivalents beside per-node prices."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils.translation import override

from billing.pricing.engine import HOURS_PER_MONTH, gpu_equivalent
from billing.pricing.periods import site_today
from billing.quotes import documents as quote_documents
from billing.quotes import services as qs


def test_the_equivalent_divides_by_gpus_months_and_hours():
    eq = gpu_equivalent(amount=Decimal("100000"), gpus=8, months=Decimal(1))
    assert eq.per_gpu_month == Decimal("12500.00")
    assert eq.per_gpu_hour == (Decimal("12500") / HOURS_PER_MONTH).quantize(Decimal("0.01"))
    assert eq.per_gpu_hour == Decimal("17.12")
    assert gpu_equivalent(amount=Decimal("3999"), gpus=0, months=Decimal(1)) is None


@pytest.mark.django_db
def test_the_catalog_and_the_configure_page_show_gpu_hours(client, demo):
    with override("en"):
        catalog = client.get(reverse("catalog")).content.decode()
        assert "per GPU-hour" in catalog and "per GPU-month" in catalog
        start = site_today(demo["sz"]) + timedelta(days=7)
        page = client.get(
            reverse("configure"),
            {
                "site": "SZ",
                "node_type": "h100-8x-nvlink",
                "node_count": "2",
                "term": "month",
                "duration": "1",
                "start_date": start.isoformat(),
            },
        )
    eq = page.context["gpu_equivalent"]
    assert eq.per_gpu_month == Decimal("12500.00")  # ¥100,000 per 8-GPU node and month
    assert "¥17.12 per GPU-hour" in page.content.decode()


@pytest.mark.django_db
def test_the_quote_pdf_shows_gpu_hours(demo, tmp_path):
    quote = qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=2,
        start_date=demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(2), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
        extra_discount=Decimal("0"),
    )
    path = tmp_path / "q.pdf"
    path.write_bytes(quote_documents.render_quote_pdf(quote=quote, language="en"))
    text = subprocess.run(
        ["pdftotext", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    assert "¥17.12 per GPU-hour" in " ".join(text.split())
