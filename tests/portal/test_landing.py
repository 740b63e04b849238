"""Issue 9, point 2: the configuration survives sign-up and verification; staff who log
in land on their own pages, not on a 403."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils.translation import override

pytestmark = pytest.mark.django_db

PASSWORD = "Gpu-Journey-2026!kx"
CONFIG = "/en/configure/?site=SZ&node_type=h100-8x-nvlink&node_count=2&term=month&duration=1"


def url(name: str) -> str:
    with override("en"):
        return reverse(name)


def test_sign_up_and_verify_come_back_to_the_configuration(
    client, demo, mailoutbox, eager_celery, django_capture_on_commit_callbacks
):
    login_page = client.get(url("accounts:login"), {"next": CONFIG}).content.decode()
    signup_link = f"{url('accounts:signup')}?next={quote(CONFIG, safe='/')}"
    assert signup_link.replace("&", "&amp;") in login_page or signup_link in login_page
    page = client.get(url("accounts:signup"), {"next": CONFIG}).content.decode()
    assert f'name="next" value="{CONFIG.replace("&", "&amp;")}"' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url("accounts:signup"),
            {
                "email": "mei.lin@example.com",
                "full_name": "Mei Lin",
                "company_name": "Zhujiang AI Lab",
                "password1": PASSWORD,
                "password2": PASSWORD,
                "next": CONFIG,
            },
        )
    assert response.status_code == 302
    link = re.search(r"https?://\S+/accounts/verify/\S+", mailoutbox[-1].body).group(0)
    response = client.get(link.removeprefix(settings.PORTAL_BASE_URL))
    assert response.status_code == 302
    assert response["Location"] == CONFIG
    assert client.session.get("_auth_user_id")


def test_a_next_to_another_site_is_not_kept(
    client, demo, mailoutbox, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            url("accounts:signup"),
            {
                "email": "evil@example.com",
                "full_name": "Eve",
                "company_name": "Evil",
                "password1": PASSWORD,
                "password2": PASSWORD,
                "next": "https://evil.example/steal",
            },
        )
    link = re.search(r"https?://\S+/accounts/verify/\S+", mailoutbox[-1].body).group(0)
    response = client.get(link.removeprefix(settings.PORTAL_BASE_URL))
    assert response["Location"] == url("accounts:organisation_settings")


@pytest.mark.parametrize(
    ("username", "landing"),
    [
        ("sales", "sales:quote_list"),
        ("manager", "sales:quote_list"),
        ("ops", "admin:index"),
        ("finance", "admin:index"),
        ("support", "support_staff_queue"),
        ("admin", "admin:index"),
        ("customer", "accounts:organisations"),
    ],
)
def test_everyone_lands_on_a_page_of_their_own(client, demo, username, landing):
    user = get_user_model().objects.get(username=username)
    password = f"{username}-demo-2026"
    response = client.post(url("accounts:login"), {"email": user.email, "password": password})
    assert response.status_code == 302, response.content.decode()[:500]
    assert response["Location"] == url(landing)
    assert client.get(response["Location"]).status_code == 200


def test_the_back_office_carries_the_product_name(client, demo, settings):
    client.force_login(get_user_model().objects.get(username="admin"))
    for lang in ("en", "zh-hans"):
        with override(lang):
            html = client.get(reverse("admin:index")).content.decode()
        assert "Django" not in html.split("</title>")[0]
        assert settings.PORTAL_PROVIDER_BRAND in html


@pytest.mark.parametrize(
    ("lang", "message"),
    [
        ("zh-hans", "密码太短，至少需要 8 个字符。"),
        ("en", "This password is too short. It must contain at least 8 characters."),
    ],
)
def test_a_short_password_is_refused_in_the_page_language(client, lang, message):
    # Django 5.2's own zh_Hans catalogue lacks this message: it came out in English.
    with override(lang):
        signup = reverse("accounts:signup")
    html = client.post(
        signup,
        {
            "email": "short@example.com",
            "full_name": "Short",
            "company_name": "Short Ltd",
            "password1": "Ab1!xyz",
            "password2": "Ab1!xyz",
        },
    ).content.decode()
    assert message in html
