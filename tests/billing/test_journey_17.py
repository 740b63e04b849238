"""Issue 9, point 17: the small things seen on the journey.

The token page pre-fills the logged-in customer's name; a sales draft for more nodes than
are free warns at once; a 100% discount shows one error; quote emails come from the
configured sender with the salesperson's name and reply to them; the admin shows a
site's times in its zone; the quote states the Hong Kong buy-one-get-one rule; quote PDFs
are never rendered inside a web request; ICP filing support is a mainland-only service."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from decimal import Decimal
from email.header import decode_header, make_header

import pytest
from django.core import mail
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from billing.models import FreeService, QuoteDocument
from billing.quotes import documents as quote_documents
from billing.quotes import services as qs
from billing.quotes.services.emails import quote_email_send
from billing.tasks import documents as tasks
from core.models import OutboxMessage

pytestmark = pytest.mark.django_db


def _quote(demo, *, nodes=2, site="sz", node_type="h100", discount="0"):
    return qs.quote_create(
        site=demo[site],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(nodes), node_type_id=demo[node_type].pk)],
        actor=demo["sales"],
        extra_discount=Decimal(discount),
    )


def _asked_renders() -> list:
    return [
        args
        for m in OutboxMessage.objects.all()
        for name, args in m.steps
        if name == quote_documents.RENDER_TASK
    ]


def test_the_token_page_prefills_the_customers_name_and_its_pdf_is_never_rendered_in_the_request(
    demo, client
):
    quote = qs.quote_send(quote=_quote(demo), actor=demo["sales"])
    OutboxMessage.objects.all().delete()  # the send's own render, not run here
    client.force_login(demo["customer"])
    page = client.get(f"/en/q/{quote.token}/").content.decode()
    name = demo["customer"].get_full_name()
    assert name and f'id="accept-name" name="name" required value="{name}"' in page

    response = client.get(f"/en/q/{quote.token}/pdf")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert "being prepared" in response.content.decode()
    assert not QuoteDocument.objects.filter(quote=quote).exists()
    assert _asked_renders() == [[quote.pk, "en"]]
    reload_url = re.search(r'content="3;url=([^"]+)"', response.content.decode()).group(1)
    reload_url = reload_url.replace("&amp;", "&")
    # Reloading before the queue has made it asks nothing more of the queue.
    assert "being prepared" in client.get(reload_url).content.decode()
    assert len(_asked_renders()) == 1

    tasks.document_render_quote(quote.pk, "en")  # the documents queue
    download = client.get(reload_url)
    assert download["Content-Type"] == "application/pdf"
    assert b"".join(download.streaming_content).startswith(b"%PDF")


def test_a_sales_draft_warns_at_once_and_its_pdf_comes_from_the_queue(demo, client):
    client.force_login(demo["sales"])
    short = _quote(demo, nodes=200)
    page = client.get(f"/en/sales/quotes/{short.pk}/").content.decode()
    assert "capacity-shortage" in page and re.search(
        r"Only \d+ of 200 H100 8-GPU NVLink nodes", page
    )
    assert (
        "capacity-shortage"
        not in client.get(f"/en/sales/quotes/{_quote(demo).pk}/").content.decode()
    )

    response = client.get(f"/en/sales/quotes/{short.pk}/pdf?language=en")
    assert "being prepared" in response.content.decode()
    assert _asked_renders() == [[short.pk, "en"]] and not QuoteDocument.objects.exists()
    reload_url = re.search(r'content="3;url=([^"]+)"', response.content.decode()).group(1)
    tasks.document_render_quote(short.pk, "en")
    download = client.get(reload_url.replace("&amp;", "&"))
    assert download["Content-Type"] == "application/pdf"


def test_a_100_percent_discount_shows_one_error(demo, client):
    client.force_login(demo["sales"])
    data = {
        "site": demo["sz"].pk,
        "organisation": demo["org"].pk,
        "contact_name": "Li Wei",
        "contact_email": "li.wei@example.com",
        "language": "en",
        "term": "month",
        "duration": "1",
        "start_date": (timezone.now().date() + timedelta(days=7)).isoformat(),
        "extra_discount": "100",
        "notes": "",
        "lines-TOTAL_FORMS": "1",
        "lines-INITIAL_FORMS": "0",
        "lines-MIN_NUM_FORMS": "0",
        "lines-MAX_NUM_FORMS": "1000",
        "lines-0-kind": "node",
        "lines-0-quantity": "2",
        "lines-0-node_type": demo["h100"].pk,
    }
    page = client.post("/en/sales/quotes/new", data).content.decode()
    errors = re.findall(
        r"<li>([^<]*)</li>",
        "".join(re.findall(r'class="errorlist[^"]*"[^>]*>(.*?)</ul>', page, re.S)),
    )
    assert errors == ["The extra discount must be below 100 percent (at most 99.99)."]
    assert 'hx-trigger="load,' not in page  # the preview does not repeat it on load
    preview = client.post("/en/sales/quotes/preview", data).content.decode()
    assert preview.count("below 100 percent") == 1 and "Fill in the data centre" not in preview


def test_quote_emails_come_from_the_configured_sender_in_the_salespersons_name(demo, settings):
    settings.PORTAL_QUOTE_FROM_EMAIL = "quotes@gpucloud.example"
    settings.PORTAL_PROVIDER_BRAND = "GPU Cloud"
    sales = demo["sales"]
    sales.first_name, sales.last_name, sales.email = "Lei", "Li", "li.lei@gpucloud.example"
    sales.save()
    quote = qs.quote_send(quote=_quote(demo), actor=sales)
    tasks.document_render_quote(quote.pk, quote.language)
    assert quote_email_send(quote_id=quote.pk) == "sent"
    [message] = mail.outbox
    with translation.override(quote.language):  # the quote's language: "Lei Li（GPU Cloud）"
        expected_sender = _("%(name)s via %(brand)s") % {"name": "Lei Li", "brand": "GPU Cloud"}
    assert message.from_email.endswith("<quotes@gpucloud.example>")
    shown = str(make_header(decode_header(message.from_email)))
    assert shown == f"{expected_sender} <quotes@gpucloud.example>"
    assert message.reply_to == ["li.lei@gpucloud.example"]


def test_hong_kong_bare_metal_quotes_state_buy_one_get_one_and_admin_times_are_hong_kong_time(
    demo, client, tmp_path
):
    quote = qs.quote_send(
        quote=_quote(demo, site="hk", node_type="e5", nodes=2), actor=demo["sales"]
    )
    [note] = quote_documents.promotion_notes(quote)
    assert "for every 1 Bare-metal E5 node paid for, 1 more is free" in note
    assert "On this quote 1 of 2 nodes are free." in note
    assert quote_documents.promotion_notes(_quote(demo)) == []  # Shenzhen H100: no promotion

    path = tmp_path / "q.pdf"
    path.write_bytes(quote_documents.render_quote_pdf(quote=quote, language="en"))
    text = " ".join(
        subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True).stdout.split()
    )
    assert "On this quote 1 of 2 nodes are free." in text and "ICP" not in text
    path.write_bytes(quote_documents.render_quote_pdf(quote=quote, language="zh-hans"))
    text_zh = "".join(
        subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True).stdout.split()
    )
    assert "每付费1台E5裸金属服务器节点，另赠1台" in text_zh
    assert "本报价中2台节点里有1台免费" in text_zh and "ICP" not in text_zh

    client.force_login(demo["admin"])
    page = client.get(f"/en/admin/inventory/reservation/?node__site__id__exact={demo['hk'].pk}")
    assert "(Hong Kong Time, UTC+08:00)" in page.content.decode()


def _free_services(site) -> set[str]:
    return set(FreeService.objects.filter(price_book__site=site).values_list("name", flat=True))


def test_icp_filing_support_is_a_mainland_service_only(demo):
    assert "ICP filing support (备案)" in _free_services(demo["sz"])
    assert "ICP filing support (备案)" not in _free_services(demo["hk"])
