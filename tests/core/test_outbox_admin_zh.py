"""Issue 25, point 15: the outbox admin names the work in the page's language; a Chinese
page shows no task identifiers (the list, a message's page, the action's messages)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.translation import override

from core.models import OutboxMessage

pytestmark = pytest.mark.django_db


def test_the_outbox_admin_shows_no_task_identifiers_on_chinese_pages(client, demo):
    known = OutboxMessage.objects.create(
        steps=[["billing.tasks.document_render_quote", [1]], ["billing.tasks.quote_email", [1]]]
    )
    unknown = OutboxMessage.objects.create(steps=[["inventory.tasks.some_future_task", []]])
    client.force_login(demo["admin"])
    with override("zh-hans"):
        pages = [
            client.get(reverse("admin:core_outboxmessage_changelist")),
            client.get(reverse("admin:core_outboxmessage_change", args=[known.pk])),
            client.get(reverse("admin:core_outboxmessage_change", args=[unknown.pk])),
        ]
    for page in pages:
        assert page.status_code == 200
        html = page.content.decode()
        assert ".tasks." not in html and "document_render" not in html
    assert "生成报价单 PDF → 邮件：报价单" in pages[0].content.decode()
    assert "库存任务" in pages[2].content.decode()  # a task nobody labelled: its app's work
    with override("en"):
        english = client.get(reverse("admin:core_outboxmessage_changelist")).content.decode()
    assert "Render the quote PDF → Email: the quote" in english
