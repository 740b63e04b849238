"""Emailing a sent quote to its contact, with the PDF and the link to accept it."""

from __future__ import annotations

from email.utils import formataddr

from django.conf import settings
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from billing.models import Quote, QuoteStatus
from billing.quotes import documents as quote_documents


def quote_email_send(*, quote_id: int) -> str:
    """Email a sent quote once; returns "sent" or "skipped".

    ``emailed_at`` is claimed before sending, so a second run (or a second worker, or a
    retry after the mail server took the message) finds it claimed and sends nothing. A
    failed send gives the claim back, so the retry sends.
    """
    quote = Quote.objects.select_related("organisation", "site", "created_by").get(pk=quote_id)
    if quote.status != QuoteStatus.SENT or quote.emailed_at:
        return "skipped"
    document = quote_documents.quote_document(quote=quote, language=quote.language)
    with translation.override(quote.language):
        link = settings.PORTAL_BASE_URL + reverse("quote_public", args=[quote.token])
        context = {
            "quote": quote,
            "link": link,
            "expiry": quote.expiry_text,
            "holds": quote_documents.quote_holds(quote),
        }
        subject = render_to_string("email/quote_sent_subject.txt", context).strip()
        body = render_to_string("email/quote_sent.txt", context)
        name, email = quote_documents.salesperson(quote)
        # "Li Lei via GPU Cloud" <sales@…>: the provider's configured sender address (one
        # that its mail domain authorises), the salesperson's name; replies go to them.
        sender = _("%(name)s via %(brand)s") % {
            "name": name,
            "brand": settings.PORTAL_PROVIDER_BRAND,
        }
    message = EmailMessage(
        subject=subject,
        body=body,
        from_email=formataddr((sender, settings.PORTAL_QUOTE_FROM_EMAIL)),
        to=[quote.contact_email],
        reply_to=[email] if email else None,
    )
    with document.file.open("rb") as fh:
        message.attach(f"{quote.number}-v{quote.version}.pdf", fh.read(), "application/pdf")
    claimed = Quote.objects.filter(pk=quote.pk, emailed_at__isnull=True).update(
        emailed_at=timezone.now()
    )
    if not claimed:
        return "skipped"
    try:
        message.send()
    except Exception:
        Quote.objects.filter(pk=quote.pk).update(emailed_at=None)
        raise
    return "sent"
