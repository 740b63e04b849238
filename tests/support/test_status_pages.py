"""Status pages: the public page of a site shows its components and incidents with their
updates in both languages and names no customer or node; a customer's page is scoped to
the racks, switches and nodes of their orders, with their scheduled maintenance; staff
post and update incidents (who and why kept)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from core.errors import DomainError
from inventory.models import MaintenancePlan, MaintenanceWindow, Rack
from portal.support import services
from portal.support.models import StatusIncident
from tests.zh_text import english_words

pytestmark = pytest.mark.django_db


def url(name, *args, lang="en"):
    with translation.override(lang):
        return reverse(name, args=args)


def incident(demo, actor, *, racks=(), nodes=(), title="Rack power feed lost"):
    return services.status_incident_open(
        site=demo["sz"], component="power", impact="partial", title=title,
        title_zh="机柜电源中断", body="Feed B tripped; on feed A.",
        body_zh="B 路电源跳闸，已切换至 A 路。", actor=actor, racks=racks, nodes=nodes,
    )  # fmt: skip


def test_the_public_page_shows_components_and_incidents_in_both_languages(client, demo, support):
    mine = incident(demo, support)
    services.status_incident_update(
        incident=mine, status="identified", body="Breaker replaced.", body_zh="断路器已更换。",
        actor=support,
    )  # fmt: skip
    page = client.get(url("status_site", "sz")).content.decode()
    assert "Rack power feed lost" in page and "Breaker replaced." in page
    assert 'data-component="power"><th>power</th><td><span class="status component-partial"' in page
    zh = client.get(url("status_site", "sz", lang="zh-hans")).content.decode()
    assert "机柜电源中断" in zh and "断路器已更换。" in zh and "Breaker" not in zh
    assert english_words(zh, data=("SZ", "Shenzhen")) == []
    assert client.get(url("status_index")).status_code == 200
    assert client.get(url("status_site", "nowhere")).status_code == 404
    moves = [(e.from_status, e.to_status, e.actor) for e in mine.events.all()]
    assert moves == [("", "investigating", support), ("investigating", "identified", support)]


def test_a_customer_sees_what_touches_their_servers_and_their_maintenance(
    client, demo, served, support
):
    node = served["node"]
    other_rack = Rack.objects.filter(site=demo["sz"]).exclude(pk=node.rack_id).first()
    theirs = incident(demo, support, racks=[node.rack], title="Their rack")
    elsewhere = incident(demo, support, racks=[other_rack], title="Another rack")
    window = MaintenanceWindow.objects.create(
        node=node, start_at=timezone.now() + timedelta(days=3),
        end_at=timezone.now() + timedelta(days=3, hours=2), reason="BMC firmware",
    )  # fmt: skip
    start = timezone.now() + timedelta(days=5)
    told, untold = (
        MaintenancePlan.objects.create(
            site=demo["sz"],
            title=title,
            start_at=start,
            end_at=start + timedelta(hours=1),
            notice_days=3,
            notify_at=start - timedelta(days=3),
            announced_at=announced,
            status="announced" if announced else "scheduled",
        )
        for title, announced in (("Leaf switch OS upgrade", timezone.now()), ("Not yet told", None))
    )
    for plan in (told, untold):
        MaintenanceWindow.objects.create(
            node=node, plan=plan, start_at=plan.start_at, end_at=plan.end_at, reason=plan.title
        )
    client.force_login(demo["customer"])
    page = client.get(url("support_customer_status")).content.decode()
    assert "Their rack" in page and "Another rack" not in page
    assert f"Your servers affected: {node.hostname}" in page
    assert window.reason in page and told.title in page and untold.title not in page
    # The public page has both, and no hostname.
    public = client.get(url("status_site", "sz")).content.decode()
    assert "Their rack" in public and "Another rack" in public and node.hostname not in public
    assert {theirs.pk, elsewhere.pk} <= set(StatusIncident.objects.values_list("pk", flat=True))


def test_posting_needs_both_languages_and_the_permission(demo, support):
    with pytest.raises(DomainError, match="Chinese"):
        services.status_incident_open(
            site=demo["sz"], component="fabric", impact="degraded", title="IB", title_zh="",
            body="x", body_zh="y", actor=support,
        )  # fmt: skip
    with pytest.raises(DomainError, match="may not"):
        incident(demo, demo["sales"])
    done = incident(demo, support)
    services.status_incident_update(
        incident=done, status="resolved", body="Fixed.", body_zh="已修复。", actor=support
    )
    with pytest.raises(DomainError, match="resolved"):
        services.status_incident_update(
            incident=done, status="monitoring", body="x", body_zh="y", actor=support
        )


def test_the_staff_pages_in_chinese_have_no_english(client, demo, served, support):
    mine = incident(demo, support, racks=[served["node"].rack])
    services.ticket_open(
        organisation=demo["org"], actor=demo["customer"], subject="训练卡住",
        body="第 300 步后卡住。", category="network", priority="high", language="zh-hans",
        order=served["order"],
    )  # fmt: skip
    client.force_login(support)
    node = served["node"]
    data = ("SZ", demo["org"].name, node.hostname, served["order"].number, "support",
            "Rack power feed lost", "Feed B tripped; on feed A.", node.rack.name)  # fmt: skip
    for name, args in (
        ("support_staff_queue", ()),
        ("support_staff_missed", ()),
        ("support_staff_incidents", ()),
        ("support_staff_incident", (mine.pk,)),
    ):
        html = client.get(url(name, *args, lang="zh-hans")).content.decode()
        words = english_words(html, data=data)
        assert words == [], (name, words)
