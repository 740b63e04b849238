"""Sending a quote: after commit a Celery chain renders the PDF (documents queue) and
then emails it with the link to accept it online. Run eagerly here; the email goes to
Django's locmem outbox (``portal.settings.test``)."""

from datetime import timedelta
from decimal import Decimal

import pytest
from celery.signals import task_prerun
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse
from django.utils import translation

from billing.models import Quote, QuoteDocument
from billing.pricing.periods import site_today
from billing.quotes import documents as quote_documents
from billing.quotes.services import ItemSpec, quote_create, quote_send
from billing.tasks import documents as document_tasks
from billing.tasks import quotes as quote_tasks
from core import pdf
from inventory.models import NodeType
from portal.celery import app


@pytest.fixture
def draft(demo):
    site = demo["sz"]
    return quote_create(
        site=site,
        organisation=demo["org"],
        contact_name="王磊",
        contact_email="wang.lei@pearlriver.example",
        term="month",
        duration=3,
        start_date=site_today(site) + timedelta(days=5),
        items=[
            ItemSpec(
                kind="node",
                quantity=Decimal(2),
                node_type_id=NodeType.objects.get(code="h100-8x-nvlink").pk,
            ),
            ItemSpec(kind="addon", quantity=Decimal(10), addon_code="checkpoint-storage"),
        ],
        actor=get_user_model().objects.get(username="sales"),
        language="zh-hans",
    )


def send(quote, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        quote_send(quote=quote, actor=get_user_model().objects.get(username="sales"))
    return Quote.objects.get(pk=quote.pk)


@pytest.mark.django_db
def test_sending_emails_the_stored_pdf_and_the_link(
    draft, eager_celery, django_capture_on_commit_callbacks, monkeypatch
):
    ran = []

    def record(sender=None, **kwargs):
        ran.append(sender.name)

    task_prerun.connect(record)
    try:
        quote = send(draft, django_capture_on_commit_callbacks)
    finally:
        task_prerun.disconnect(record)
    # The chain: render on the documents queue first, then the email (which finds it: one
    # document, rendered once).
    assert ran == ["billing.tasks.document_render_quote", "billing.tasks.quote_email"]
    assert QuoteDocument.objects.filter(quote=quote).count() == 1

    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["wang.lei@pearlriver.example"]
    assert quote.number in message.subject
    with translation.override(quote.language):  # the link opens in the quote's language
        link = settings.PORTAL_BASE_URL + reverse("quote_public", args=[quote.token])
    assert link.startswith(("http://", "https://"))
    assert f"/q/{quote.token}/" in link
    assert link in message.body
    assert len(message.attachments) == 1
    filename, content, mimetype = message.attachments[0]
    assert mimetype == "application/pdf"
    assert filename == f"{quote.number}-v{quote.version}.pdf"
    assert content.startswith(b"%PDF")

    # The chain's first step stored the document; the email attached exactly those bytes.
    document = QuoteDocument.objects.get(quote=quote, language="zh-hans")
    assert document.sha256 == pdf.sha256_of(content)
    assert quote.emailed_at is not None


@pytest.mark.django_db
def test_a_second_email_run_sends_nothing(draft, eager_celery, django_capture_on_commit_callbacks):
    quote = send(draft, django_capture_on_commit_callbacks)
    assert len(mail.outbox) == 1
    assert quote_tasks.quote_email.delay(quote.pk).get() == "skipped"
    assert quote_tasks.quote_email(quote.pk) == "skipped"
    assert len(mail.outbox) == 1


@pytest.mark.django_db
def test_render_task_is_idempotent_and_email_uses_an_existing_document(
    draft, eager_celery, django_capture_on_commit_callbacks, monkeypatch
):
    # Sent without running the after-commit chain: render first, as the worker would.
    quote = quote_send(quote=draft, actor=get_user_model().objects.get(username="sales"))
    sha = document_tasks.document_render_quote(quote.pk, "zh-hans")
    assert sha == QuoteDocument.objects.get(quote=quote, language="zh-hans").sha256

    def must_not_render(*args, **kwargs):
        raise AssertionError("rendered again")

    monkeypatch.setattr(quote_documents.QUOTE, "render", must_not_render)
    assert document_tasks.document_render_quote.delay(quote.pk, "zh-hans").get() == sha
    assert quote_tasks.quote_email(quote.pk) == "sent"
    assert pdf.sha256_of(mail.outbox[0].attachments[0][1]) == sha


def test_render_task_goes_to_the_documents_queue():
    route = app.amqp.router.route({}, document_tasks.document_render_quote.name)
    assert route["queue"].name == "documents"
    assert app.amqp.router.route({}, quote_tasks.quote_email.name)["queue"].name == "billing"
