"""Issue 23, point 2: the cache is a cache. With its Redis down (a dead port), the main
pages are computed and served, logins go on, and nothing answers 500."""

from __future__ import annotations

import logging

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils.translation import override

from core.models import OutboxMessage

DEAD = "redis://127.0.0.1:1/0"  # nothing listens on port 1: connection refused


@pytest.fixture
def dead_cache(settings):
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": DEAD}}
    assert settings.CACHES["default"]["OPTIONS"]["IGNORE_EXCEPTIONS"] is True
    cache.close()
    yield
    cache.close()


@pytest.mark.usefixtures("dead_cache")
def test_the_main_pages_are_served_while_the_cache_is_down(client, demo, caplog):
    caplog.set_level(logging.ERROR, logger="portal.cache")
    pages = ["/zh-hans/", "/en/", "/en/configure/?site=SZ&node_type=" + demo["h100"].code]
    with override("en"):
        pages += [reverse("wizard"), reverse("accounts:login")]
        dashboard = reverse("dashboard")
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    assert "H100" in client.get("/en/").content.decode()  # the catalog, computed
    # Logging in counts failures in the cache (the login throttle): it lets the customer in.
    with override("en"):
        login = reverse("accounts:login")
    response = client.post(
        login, {"email": "customer@example.com", "password": "customer-demo-2026"}
    )
    assert response.status_code == 302, response.content[:300]
    response = client.get(dashboard)
    assert response.status_code == 200
    # A password reset asked meanwhile is still sent (its once-a-minute limit lives in the
    # cache: while the cache is away the limit is not kept, the email is not lost).
    client.logout()
    with override("en"):
        client.post(reverse("accounts:password_reset"), {"email": "customer@example.com"})
    assert OutboxMessage.objects.filter(steps__0__0="accounts.tasks.password_reset_email").exists()
    # Each cache failure is logged, not hidden.
    assert any("Connection" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)
