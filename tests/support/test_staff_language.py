"""What the reviewer saw on the support desk: the ticket page said "合同等级: 合同", and
support's ticket emails went out in ``LANGUAGE_CODE`` whatever language each engineer
reads. Now the page names the support tier and the signed contract it runs on, and each
engineer's email comes in the language they last chose (logging in, or switching in the
page header)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core import mail
from django.urls import reverse
from django.utils import translation

from accounts.models import CustomerProfile
from billing.models import ContractStatus
from portal.support import services
from tests.factories import run_outbox

pytestmark = pytest.mark.django_db

SUBJECT = {"en": "Ticket opened: Training stalls", "zh-hans": "工单已提交：Training stalls"}


def url(name, *args, lang="en"):
    with translation.override(lang):
        return reverse(name, args=args)


def open_ticket(demo, order=None):
    return services.ticket_open(
        organisation=demo["org"],
        actor=demo["customer"],
        subject="Training stalls",
        body="NCCL hangs after step 300.",
        category="other",
        priority="normal",
        language="en",
        order=order,
    )


def _subjects() -> dict[str, str]:
    """Each recipient's subject (one email per language, several people each)."""
    return {to: m.subject for m in mail.outbox for to in m.to}


def test_the_ticket_page_names_the_support_tier_and_the_signed_contract(
    client, demo, served, support
):
    order = served["order"]
    contract = order.contracts.filter(status__in=services.SIGNED_CONTRACT_STATUSES).get()
    under_contract = open_ticket(demo, order)
    question = open_ticket(demo)
    client.force_login(support)
    page = client.get(url("support_staff_ticket", under_contract.pk, lang="zh-hans"))
    html = page.content.decode()
    assert f'<dd id="ticket-tier">合同支持 · 合同 {contract.number}</dd>' in html
    assert "合同等级" not in html
    html = client.get(url("support_staff_ticket", question.pk, lang="zh-hans")).content.decode()
    assert '<dd id="ticket-tier">标准支持</dd>' in html
    # The customer reads the same on their page, in English here.
    client.force_login(demo["customer"])
    html = client.get(url("support_ticket", under_contract.pk)).content.decode()
    assert f'<dd id="ticket-tier">contract support · contract {contract.number}</dd>' in html
    # A contract not yet signed does not count.
    type(contract).objects.filter(pk=contract.pk).update(status=ContractStatus.CANCELLED)
    html = client.get(url("support_ticket", under_contract.pk)).content.decode()
    assert f"contract {contract.number}" not in html


def test_each_engineer_gets_the_ticket_email_in_the_language_they_chose(client, demo, support):
    colleague = get_user_model().objects.create_user(
        "support2", email="support2@example.com", password="colleague-pass-2026"
    )
    colleague.groups.add(Group.objects.get(name="Support"))
    # The demo's engineer switches to English in the page header; the colleague has not
    # chosen a language yet (the site's default, Chinese, then).
    client.force_login(support)
    client.post(reverse("set_language"), {"language": "en", "next": "/zh-hans/"})
    assert CustomerProfile.objects.get(user=support).language == "en"
    open_ticket(demo)
    run_outbox(services.EMAIL_TASK)
    sent = _subjects()
    assert SUBJECT["en"] in sent[support.email]
    assert SUBJECT["zh-hans"] in sent[colleague.email]
    # The colleague logs in on the English pages: their next email is English.
    client.logout()
    answer = client.post(
        url("accounts:login"), {"email": colleague.email, "password": "colleague-pass-2026"}
    )
    assert answer.status_code == 302
    assert CustomerProfile.objects.get(user=colleague).email_verified  # still verified
    mail.outbox.clear()
    open_ticket(demo)
    run_outbox(services.EMAIL_TASK)
    sent = _subjects()
    assert SUBJECT["en"] in sent[support.email] and SUBJECT["en"] in sent[colleague.email]
    # Switching back to Chinese: Chinese again.
    client.post(reverse("set_language"), {"language": "zh-hans", "next": "/en/"})
    mail.outbox.clear()
    open_ticket(demo)
    run_outbox(services.EMAIL_TASK)
    sent = _subjects()
    assert SUBJECT["zh-hans"] in sent[colleague.email] and SUBJECT["en"] in sent[support.email]
