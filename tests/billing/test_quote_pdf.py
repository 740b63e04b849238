"""Quote PDFs: what the customer reads (checked with poppler's pdftotext and pdffonts),
stored once with its SHA-256, drafts re-rendered, the race of two renderers, the
render_quote command, and the URL fetcher that never reaches the network."""

import hashlib
import logging
import re
import shutil
import socket
import subprocess
import threading
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from weasyprint import HTML
from weasyprint.urls import FatalURLFetchingError

from billing.documents.numerals import rmb_upper
from billing.models import AddonPrice, FreeService, NodePrice, Quote, QuoteDocument
from billing.pricing.periods import site_today
from billing.quotes import documents as quote_documents
from billing.quotes.services import ItemSpec, quote_create, quote_send
from core import pdf
from inventory.models import Site

# poppler-utils (pdftotext, pdffonts, pdfinfo) is installed by `make test`; without it
# these tests fail rather than skip.
assert shutil.which("pdftotext") and shutil.which("pdffonts") and shutil.which("pdfinfo"), (
    "poppler-utils is missing: run `make test` (scripts/system_deps.sh installs it)"
)

LEGAL_NAME_ZH = "深圳珠江智算科技有限公司"


# --- helpers --------------------------------------------------------------------------


def pdf_text(data: bytes, tmp_path: Path, *, layout: bool = True) -> str:
    """pdftotext's text: ``layout`` keeps table rows on one line (numbers, headers);
    without it each table cell comes out as one block (names that wrap in a cell)."""
    path = tmp_path / "text.pdf"
    path.write_bytes(data)
    mode = ["-layout"] if layout else []
    return subprocess.run(
        ["pdftotext", *mode, str(path), "-"], capture_output=True, text=True, check=True
    ).stdout


def compact(text: str) -> str:
    """Text without white space: table cells may wrap a long name over lines."""
    return re.sub(r"\s+", "", text)


def pdf_fonts(data: bytes, tmp_path: Path) -> str:
    path = tmp_path / "fonts.pdf"
    path.write_bytes(data)
    return subprocess.run(
        ["pdffonts", str(path)], capture_output=True, text=True, check=True
    ).stdout


def pdf_pages(data: bytes, tmp_path: Path) -> int:
    path = tmp_path / "info.pdf"
    path.write_bytes(data)
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M)[1])


def stored_bytes(document: QuoteDocument) -> bytes:
    with document.file.open("rb") as fh:
        return fh.read()


def amount(value: Decimal) -> str:
    """How the engine's amount is printed: thousands separators, two places."""
    return f"{value:,.2f}"


def make_quote(demo, *, language="zh-hans", send=True, notes="", **kw):
    types, gpus = demo["types"], demo["gpus"]
    items = kw.pop(
        "items",
        [
            ItemSpec(kind="node", quantity=Decimal(2), node_type_id=types["h100-8x-nvlink"].pk),
            ItemSpec(
                kind="node",
                quantity=Decimal(1),
                node_type_id=types["e5-baremetal"].pk,
                card_gpu_model_id=gpus["RTX 3090 24G"].pk,
                cards_per_node=2,
            ),
            ItemSpec(kind="addon", quantity=Decimal(20), addon_code="checkpoint-storage"),
            ItemSpec(kind="addon", quantity=Decimal(5), addon_code="egress"),
            ItemSpec(
                kind="custom",
                quantity=Decimal(1),
                description="On-site acceptance test",
                unit_price=Decimal("5000"),
            ),
        ],
    )
    quote = quote_create(
        site=demo["site"],
        organisation=demo["org"],
        contact_name="王磊",
        contact_email="wang.lei@pearlriver.example",
        term="year",
        duration=1,
        start_date=site_today(demo["site"]) + timedelta(days=7),
        items=items,
        actor=demo["sales"],
        extra_discount=Decimal("0.05"),
        language=language,
        notes=notes,
        **kw,
    )
    if send:
        quote = quote_send(quote=quote, actor=demo["sales"])
    return Quote.objects.get(pk=quote.pk)


# --- what the PDF says ----------------------------------------------------------------


@pytest.mark.django_db
def test_chinese_pdf_text_totals_fonts_and_amount_in_words(demo, tmp_path):
    quote = make_quote(demo)
    document = quote_documents.quote_document(quote=quote, language="zh-hans")
    data = stored_bytes(document)
    assert data.startswith(b"%PDF")
    text = pdf_text(data, tmp_path)
    flat = compact(pdf_text(data, tmp_path, layout=False))

    assert quote.number in text
    assert LEGAL_NAME_ZH in flat
    assert "91440300MA5DEM0006" in text  # tax ID
    assert "深圳市南山区科技园1号" in flat  # billing address
    # Chinese names come from the price book's data, not from translations.
    assert "检查点存储（分布式三副本）" in flat
    assert "公网出口流量" in flat
    assert "快照" in flat
    assert "环境部署" in flat
    assert "H100年付85折" in flat  # the discount rule's Chinese label
    # The totals are the engine's, to the cent.
    for value in (quote.list_total, quote.net_total, quote.vat_total, quote.gross_total):
        assert amount(abs(value)) in text
    for line in quote.lines.exclude(kind="free"):
        assert amount(line.net) in text, line
    # The total in capital numerals (CNY quote, Chinese PDF).
    assert rmb_upper(quote.gross_total) in flat
    # The configuration: specs from the node types; the placement of the held nodes.
    assert "2× Intel Xeon Platinum 8480+" in text
    assert "8 × H100 80G SXM (80 GB)" in text
    assert "2× 3.84 TB NVMe (RAID1)" in text
    assert "RTX 3090 24G" in text
    assert "InfiniBand NDR 400G" in text
    # A real CJK font is embedded (subset), not a fallback without Chinese glyphs: only the
    # cut-down Noto Sans CJK SC (templates/pdf/fonts/), which has every character of this
    # quote, so the 20 MB system font is not read at all (issue 25, point 14).
    fonts = pdf_fonts(data, tmp_path)
    cjk = [row for row in fonts.splitlines() if "CJK" in row]
    assert cjk, fonts
    assert all(" yes " in row for row in cjk), fonts  # emb, sub, uni columns
    assert all("Noto-Sans-CJK-SC-GB2312" in row for row in cjk), fonts
    assert len(fonts.splitlines()) - 2 == len(cjk), fonts  # nothing but those


@pytest.mark.django_db
def test_english_pdf_text_and_page_numbers(demo, tmp_path):
    quote = make_quote(demo, language="en")
    data = stored_bytes(quote_documents.quote_document(quote=quote, language="en"))
    text = pdf_text(data, tmp_path)
    flat = compact(pdf_text(data, tmp_path, layout=False))
    pages = pdf_pages(data, tmp_path)

    assert quote.number in text
    assert LEGAL_NAME_ZH in flat  # the customer's legal name is Chinese in both
    assert compact("Checkpoint storage (distributed, 3 replicas)") in flat
    assert "Snapshots" in text
    assert amount(quote.gross_total) in text
    assert f"Page 1 of {pages}" in text
    assert f"Page {pages} of {pages}" in text
    # The amount in words is for Chinese PDFs only.
    assert rmb_upper(quote.gross_total) not in flat
    # Every page carries the quote number in its header or the first page's masthead.
    assert text.count(quote.number) >= pages


@pytest.mark.django_db
def test_hong_kong_quote_has_no_rmb_amount_in_words(demo, tmp_path):
    site = Site.objects.get(code="HK")
    demo = {**demo, "site": site}
    quote = make_quote(
        demo,
        items=[
            ItemSpec(
                kind="node", quantity=Decimal(1), node_type_id=demo["types"]["e5-baremetal"].pk
            )
        ],
    )
    assert quote.currency == "HKD"
    data = quote_documents.render_quote_pdf(quote=quote, language="zh-hans")
    text = pdf_text(data, tmp_path)
    flat = compact(pdf_text(data, tmp_path, layout=False))
    assert amount(quote.gross_total) in text
    assert "HK$" in text
    assert rmb_upper(quote.gross_total) not in flat
    assert "元整" not in flat


@pytest.mark.django_db
def test_long_quote_repeats_the_table_header_on_every_page(demo, tmp_path):
    items = [
        ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["types"]["h100-8x-nvlink"].pk),
        *[
            ItemSpec(
                kind="custom",
                quantity=Decimal(1),
                description=f"Custom service line {i}",
                unit_price=Decimal("100"),
            )
            for i in range(45)
        ],
    ]
    quote = make_quote(demo, language="en", items=items, send=False)
    data = quote_documents.render_quote_pdf(quote=quote, language="en")
    pages = pdf_pages(data, tmp_path)
    assert pages >= 2
    text = pdf_text(data, tmp_path)
    per_page = text.split("\f")
    table_pages = [p for p in per_page if "Custom service line" in p]
    assert len(table_pages) >= 2
    for page in table_pages:
        assert re.search(r"Item\s+Quantity\s+Unit price\s+Periods\s+List\s+Discounts\s+Net", page)
    assert f"Page {pages} of {pages}" in text


@pytest.mark.django_db
def test_user_text_is_escaped_and_fetches_nothing(demo, tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the PDF tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    notes = '<img src="http://evil.example/x.png"> <b>bold</b> & more'
    quote = make_quote(demo, language="en", send=False, notes=notes)
    data = quote_documents.render_quote_pdf(quote=quote, language="en")
    assert '<img src="http://evil.example/x.png"> <b>bold</b> & more' in pdf_text(data, tmp_path)


# --- stored documents -----------------------------------------------------------------


@pytest.mark.django_db
def test_sent_quote_document_is_stored_once_with_its_sha256(demo, monkeypatch):
    quote = make_quote(demo)
    document = quote_documents.quote_document(quote=quote, language="zh-hans")
    data = stored_bytes(document)
    assert document.sha256 == hashlib.sha256(data).hexdigest() == pdf.sha256_of(data)
    assert document.size == len(data)
    assert document.created_at >= quote.sent_at
    assert Path(document.file.path).is_relative_to(Path(settings.MEDIA_ROOT))

    # The price book changes afterwards: the sent quote's document does not.
    book = quote.price_book
    NodePrice.objects.filter(price_book=book).update(monthly=Decimal("1"), daily=Decimal("1"))
    AddonPrice.objects.filter(price_book=book).update(name_zh="改过的名字", price=Decimal("1"))
    FreeService.objects.filter(price_book=book).update(name_zh="改过的服务")

    def must_not_render(*args, **kwargs):
        raise AssertionError("a sent quote's stored document was rendered again")

    monkeypatch.setattr(quote_documents.QUOTE, "render", must_not_render)
    again = quote_documents.quote_document(quote=quote, language="zh-hans")
    assert again.pk == document.pk
    assert again.sha256 == document.sha256
    assert again.created_at == document.created_at
    assert stored_bytes(again) == data
    assert QuoteDocument.objects.filter(quote=quote).count() == 1


@pytest.mark.django_db
def test_each_language_is_its_own_document(demo):
    quote = make_quote(demo)
    zh = quote_documents.quote_document(quote=quote, language="zh-hans")
    en = quote_documents.quote_document(quote=quote, language="en")
    assert zh.pk != en.pk and zh.sha256 != en.sha256
    assert {zh.language, en.language} == {"zh-hans", "en"}
    # Browser-style language codes map onto the stored ones.
    assert quote_documents.quote_document(quote=quote, language="zh-Hans").pk == zh.pk
    with pytest.raises(ValueError):
        quote_documents.quote_document(quote=quote, language="fr")


@pytest.mark.django_db
def test_draft_document_is_rendered_again_on_every_call(
    demo, tmp_path, django_capture_on_commit_callbacks
):
    quote = make_quote(demo, language="en", send=False, notes="First version of the notes.")
    first = quote_documents.quote_document(quote=quote, language="en")
    first_sha, first_path = first.sha256, Path(first.file.path)
    assert "Draft" in pdf_text(stored_bytes(first), tmp_path)
    assert "First version of the notes." in pdf_text(stored_bytes(first), tmp_path)

    Quote.objects.filter(pk=quote.pk).update(notes="Second version of the notes.")
    with django_capture_on_commit_callbacks(execute=True):
        second = quote_documents.quote_document(quote=quote, language="en")
    assert second.pk == first.pk
    assert second.sha256 != first_sha
    assert second.sha256 == pdf.sha256_of(stored_bytes(second))
    assert "Second version of the notes." in pdf_text(stored_bytes(second), tmp_path)
    assert QuoteDocument.objects.filter(quote=quote).count() == 1
    assert not first_path.exists() or first_path == Path(second.file.path)


@pytest.mark.django_db
def test_draft_render_is_replaced_once_the_quote_is_sent(demo, tmp_path):
    quote = make_quote(demo, language="en", send=False)
    draft_doc = quote_documents.quote_document(quote=quote, language="en")
    draft_sha = draft_doc.sha256
    assert "Draft" in pdf_text(stored_bytes(draft_doc), tmp_path)

    quote = quote_send(quote=quote, actor=demo["sales"])
    sent_doc = quote_documents.quote_document(quote=quote, language="en")
    assert sent_doc.pk == draft_doc.pk
    assert sent_doc.sha256 != draft_sha
    assert sent_doc.created_at >= Quote.objects.get(pk=quote.pk).sent_at
    assert "Draft" not in pdf_text(stored_bytes(sent_doc), tmp_path)
    # ...and from then on it is final.
    assert quote_documents.quote_document(quote=quote, language="en").sha256 == sent_doc.sha256


@pytest.mark.django_db(transaction=True)
def test_two_workers_rendering_at_once_keep_one_document(demo, monkeypatch, caplog):
    """Both render, both find no row, both insert: the unique constraint keeps the first,
    the second catches the IntegrityError, drops its file and returns the stored row."""
    caplog.set_level(logging.INFO, logger="core.pdf")
    quote = make_quote(demo)
    rendered = threading.Barrier(2, timeout=30)
    inserting = threading.Barrier(2, timeout=30)
    real_content_file = pdf.ContentFile

    def fake_render(quote, *, language):
        name = threading.current_thread().name
        rendered.wait()  # both have rendered before either stores
        return f"%PDF-1.7 rendered by {name}".encode()

    def content_file(data, *args, **kwargs):
        inserting.wait()  # both found no stored row before either inserts
        return real_content_file(data, *args, **kwargs)

    monkeypatch.setattr(quote_documents.QUOTE, "render", fake_render)
    monkeypatch.setattr(pdf, "ContentFile", content_file)
    results, errors = {}, []

    def worker():
        try:
            results[threading.current_thread().name] = quote_documents.quote_document(
                quote=quote, language="zh-hans"
            )
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, name=f"worker-{i}") for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert "stored by another worker meanwhile" in caplog.text  # the IntegrityError path
    docs = list(results.values())
    assert len(docs) == 2
    assert docs[0].pk == docs[1].pk
    assert docs[0].sha256 == docs[1].sha256
    stored = QuoteDocument.objects.get(quote=quote, language="zh-hans")
    data = stored_bytes(stored)
    assert stored.sha256 == pdf.sha256_of(data)
    assert data in {b"%PDF-1.7 rendered by worker-1", b"%PDF-1.7 rendered by worker-2"}
    # The loser's file was deleted: one PDF on disk for this quote.
    folder = Path(stored.file.path).parent
    assert len(list(folder.glob(f"{quote.number}-v{quote.version}-zh-hans*.pdf"))) == 1


# --- the command ----------------------------------------------------------------------


@pytest.mark.django_db
def test_render_quote_command(demo, tmp_path, capsys):
    quote = make_quote(demo)
    out = tmp_path / "quote.pdf"
    call_command("render_quote", quote.number, "--out", str(out))
    assert out.read_bytes().startswith(b"%PDF")
    stored = QuoteDocument.objects.get(quote=quote, language="zh-hans")
    assert out.read_bytes() == stored_bytes(stored)

    out_en = tmp_path / "quote-en.pdf"
    call_command(
        "render_quote", quote.number, "--version", "1", "--language", "en", "--out", str(out_en)
    )
    assert out_en.read_bytes().startswith(b"%PDF")
    assert "Page 1 of" in pdf_text(out_en.read_bytes(), tmp_path)

    with pytest.raises(CommandError, match="No quote numbered Q-XX-0000-000000"):
        call_command("render_quote", "Q-XX-0000-000000", "--out", str(out))
    with pytest.raises(CommandError, match="has no version 7"):
        call_command("render_quote", quote.number, "--version", "7", "--out", str(out))


@pytest.mark.django_db
def test_render_quote_command_renders_a_draft_without_storing_it(demo, tmp_path):
    quote = make_quote(demo, send=False)
    out = tmp_path / "draft.pdf"
    call_command("render_quote", quote.number, "--out", str(out))
    assert out.read_bytes().startswith(b"%PDF")
    assert not QuoteDocument.objects.filter(quote=quote).exists()


# --- the fetcher: local files only ----------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/logo.png",
        "https://example.com/style.css",
        "ftp://example.com/x.png",
        "file:///etc/passwd",
        "file://example.com/share/x.png",
        f"file://{settings.BASE_DIR}/portal/settings/base.py",
        f"file://{settings.BASE_DIR}/templates/pdf/../../portal/settings/base.py",
        "static:../../portal/settings/base.py",
        "static:/etc/passwd",
        "static:portal/does-not-exist.png",
        "javascript:alert(1)",
    ],
)
def test_fetcher_refuses_anything_but_local_pdf_and_static_files(url):
    with pytest.raises(pdf.ResourceRefused):
        pdf.LocalFetcher().fetch(url)


def test_fetcher_serves_pdf_templates_static_files_and_data_urls():
    fetcher = pdf.LocalFetcher()
    css = fetcher.fetch(f"file://{settings.BASE_DIR}/templates/pdf/quote.css")
    assert css.content_type == "text/css"
    assert b"@page" in css.read()
    static = fetcher.fetch("static:portal/portal.css")
    assert static.content_type == "text/css"
    assert (
        static.read() == (Path(settings.BASE_DIR) / "portal/static/portal/portal.css").read_bytes()
    )
    data = fetcher.fetch("data:text/plain;base64,aGVsbG8=")
    assert data.read() == b"hello"


def test_http_image_stops_rendering_without_touching_the_network(monkeypatch):
    calls = []
    monkeypatch.setattr(socket.socket, "connect", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: calls.append(a))
    html = HTML(
        string='<p>x</p><img src="http://example.com/logo.png">',
        url_fetcher=pdf.LocalFetcher(),
    )
    with pytest.raises(FatalURLFetchingError):
        html.write_pdf()
    assert calls == []


def test_render_pdf_only_renders_pdf_templates():
    with pytest.raises(ValueError):
        pdf.render_pdf("billing/quote_public.html", {}, language="en")
    with pytest.raises(ValueError):
        pdf.render_pdf("pdf/../billing/quote_public.html", {}, language="en")


def test_minimal_document_embeds_the_cjk_font(tmp_path):
    data = pdf.render_pdf("pdf/fonts_sample.html", {}, language="zh-hans")
    assert "CJK" in pdf_fonts(data, tmp_path)
    assert "报价单" in pdf_text(data, tmp_path)
