"""An order's whole term walked in Chromium in both languages: every page and PDF the
customer sees is scanned for text in the other language.

The term's system texts (order, invoice, payment and node events, delivery, cleaning)
are written while the *other* language is active, the way a Chinese customer's click or
an English-speaking finance clerk would write them; the pages and PDFs must still show
them in the reader's language. Allowed: technical and product names (``tests.zh_text``),
hostnames, addresses, document numbers, and names the customer entered.
"""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import translation

from billing.models import Invoice
from billing.orders.services import invoice_mark_paid_by_transfer
from portal.celery import app
from provisioning import runs
from provisioning.models import ProvisioningRun, RunKind
from provisioning.validation import interface
from tests import factories
from tests.billing.test_payments import make_order
from tests.provisioning.test_runs import drive
from tests.zh_text import TECHNICAL, visible_text

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]+")
WORD = re.compile(r"[A-Za-z][A-Za-z'’]+")
# Latin words a Chinese page may carry: technical and product names.
ALLOWED = TECHNICAL | {
    "AI",
    "NVIDIA",
    "Enterprise",
    "ubuntu",
    "MPI",
    "IPoIB",
    "ssh",
    "API",
    "Webhook",
}
# The delivery kit's tools and formats, and NCCL's algorithm names as NCCL_ALGO spells them.
ALLOWED |= {"Kubernetes", "Slurm", "hostfile", "Ring", "Tree", "CollNet", "NVLS"}
# Chinese an English page may carry: each language's name in the language switcher, and
# the official names of Chinese legal identifiers and tax categories, given beside their
# English (统一社会信用代码, 信息技术服务, 普票/专票) and the ICP filing number.
ALLOWED_CJK = ("简体中文", "统一社会信用代码", "信息技术服务", "普票", "专票", "备案")
ICP_NUMBER = re.compile(r"[\u4e00-\u9fff]ICP备[0-9]+号(-[0-9]+)?")
PRE = re.compile(r"<pre\b.*?</pre>", re.DOTALL)  # ssh config, known_hosts: code
# Technical values: SHA-256 digests, host-key fingerprints and keys, file paths.
VALUES = re.compile(
    r"\bhttps?://\S+"  # an address to copy (a calendar feed's private URL)
    r"|\b[0-9a-f]{64}\b|SHA256:[A-Za-z0-9+/]{43}|(?:ssh-ed25519|ecdsa-sha2-nistp256)"
    r"(?: AAAA[0-9A-Za-z+/=]+)?|~/\.ssh/[a-z_]+"
    r"|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:=[\w,^]+)?"  # environment variables: NCCL_ALGO=Tree
    r"|\b[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+\b"  # commands and files: all_reduce_perf, topology.conf
    r"|\ball-reduce\b"  # the collective's name
)
BETWEEN_CJK = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")  # PDF line breaks


def _run_sent(sent: list, prefix: str) -> int:
    """Run the tasks the live server handed to the broker whose names start with
    ``prefix`` (the documents queue), once each, as a worker would."""
    ran = 0
    while sent:
        task = next((t for t in sent if t.name.startswith(prefix)), None)
        if task is None:
            break
        sent.remove(task)
        app.tasks[task.name](*task.args, **task.kwargs)
        ran += 1
    return ran


def _pdf_text(data: bytes, tmp_path) -> str:
    path = tmp_path / "doc.pdf"
    path.write_bytes(data)
    return subprocess.run(
        ["pdftotext", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout


def _foreign(text: str, language: str, data: tuple[str, ...]) -> list[str]:
    text = BETWEEN_CJK.sub("", text)
    for value in sorted(data, key=len, reverse=True):
        text = text.replace(value, " ")
    text = VALUES.sub(" ", text)
    if language == "en":
        text = ICP_NUMBER.sub(" ", text)
        for term in ALLOWED_CJK:
            text = text.replace(term, " ")
        found = list(CJK.finditer(text))
    else:
        found = [m for m in WORD.finditer(text) if m.group(0) not in ALLOWED]
    # Each with its surroundings, so that a failure says where it is.
    return [
        f"{m.group(0)} «{' '.join(text[max(0, m.start() - 25) : m.end() + 25].split())}»"
        for m in found
    ]


def test_the_whole_term_reads_in_each_language(pages, settings, monkeypatch, celery_sent, tmp_path):
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    settings.PORTAL_SIMULATED_TIME_SCALE = 0
    settings.PORTAL_SIMULATED_FAIL = {}
    monkeypatch.setattr(
        interface,
        "validate_nodes",
        lambda targets, **kw: interface.ValidationOutcome(
            [interface.NodeResult(t.node_id, t.hostname, True, [], {}) for t in targets], True
        ),
    )
    call_command("seed_demo", verbosity=0)
    demo = factories.demo_objects()
    # The term, its texts written in the language the reader will NOT read them in.
    with translation.override("zh-hans"):
        order = make_order(demo, nodes=2)
        first = Invoice.objects.filter(order=order).order_by("pk").first()
        invoice_mark_paid_by_transfer(
            invoice=first, reference="CMB-20261201-0042", actor=demo["admin"]
        )
    with translation.override("en"):
        run = drive(runs.provisioning_begin(order_id=order.pk))
        assert run.status == "delivered"
    with translation.override("zh-hans"):
        runs.orders_end_due(now=order.end_at + timedelta(hours=1))
        clean = ProvisioningRun.objects.get(order=order, kind=RunKind.CLEAN)
        drive(clean)
    order.refresh_from_db()

    login = Client()
    login.force_login(demo["customer"])
    page = pages.new("customer")
    page.context.add_cookies(
        [
            {
                "name": django_settings.SESSION_COOKIE_NAME,
                "value": login.cookies[django_settings.SESSION_COOKIE_NAME].value,
                "url": pages.base_url,
            }
        ]
    )
    data = (
        order.number,
        order.quote.number,
        first.number,
        "CMB-20261201-0042",
        *(n.hostname for n in factories_nodes(order)),
        *(str(a) for n in factories_nodes(order) for a in (n.ip_address, n.fabric_address) if a),
        *(c.number for c in order.contracts.all()),
    )
    org, seller = demo["org"], order.site.seller
    # Names and identifiers the customer entered, and the parties' own names and details.
    data += tuple(
        str(v)
        for v in (
            org.name,
            org.legal_name,
            org.tax_id,
            org.billing_address,
            org.billing_email,
            org.fapiao_address_phone,
            order.quote.contact_name,
            order.quote.contact_email,
            demo["customer"].email,
            demo["customer"].get_username(),
            demo["customer"].get_full_name(),
            demo["sales"].get_username(),  # who prepared the quote
            f"({order.site.code})",  # the site's code beside its name
            django_settings.PORTAL_PROVIDER_WEBSITE,
            order.site.ssh_jump_host,
            order.site.timezone,
            first.bank_reference,
            *(u.email for u in (demo["sales"], demo["admin"])),
            *(
                getattr(seller, f.name)
                for f in seller._meta.fields
                if f.get_internal_type() in ("CharField", "TextField", "EmailField")
            ),
            django_settings.PORTAL_PROVIDER_EMAIL,
            django_settings.PORTAL_PROVIDER_BRAND,
            django_settings.PORTAL_BANK_SWIFT,
            django_settings.PORTAL_BANK_NAME,
        )
        if v
    )
    found: dict[str, list[str]] = {}
    for language in ("en", "zh-hans"):
        with translation.override(language):
            urls = [
                reverse("dashboard"),
                reverse("dashboard_order", args=[order.number]),
                reverse("dashboard_contract", args=[order.number]),
                reverse("dashboard_order_suspension", args=[order.number]),
                reverse("order_pay", args=[order.number]),
            ]
            pdfs = [
                reverse("dashboard_invoice_pdf", args=[first.number]),
                reverse("dashboard_quote_pdf", args=[order.number]),
            ]
        for url in urls:
            page.goto(url)
            text = visible_text(PRE.sub("", page.content()))
            leaks = _foreign(text, language, data)
            if leaks:
                found[f"{language} {url}"] = sorted(set(leaks))[:60]
        for url in pdfs:
            response = page.request.get(url)
            if not response.headers.get("content-type", "").startswith("application/pdf"):
                _run_sent(celery_sent, "billing.tasks.document_render")
                response = page.request.get(url)
            assert response.headers.get("content-type", "").startswith("application/pdf"), url
            leaks = _foreign(_pdf_text(response.body(), tmp_path), language, data)
            if leaks:
                found[f"{language} {url}"] = sorted(set(leaks))[:60]
    assert not found, "Text in the other language:\n" + "\n".join(
        f"{where}: {words}" for where, words in found.items()
    )
    pages.assert_no_server_errors()


def factories_nodes(order):
    from inventory.models import Node

    return list(Node.objects.filter(reservations__group=order.reservation_group).distinct())
