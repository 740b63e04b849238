"""The language switcher, and the language each user last chose.

A user's language (``CustomerProfile.language``) is recorded where they choose it: when
they log in (the page's language) and when they switch in the page header, never on
every request. Emails rendered for one person alone (support's ticket notifications to
staff) use it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.signals import user_logged_in
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.translation import gettext_noop
from django.views.i18n import set_language as django_set_language

from accounts import services as account_services

# Translators: the suffix Django's forms put after a field's label ("Order:"). Django's
# own Chinese catalogue keeps the ASCII colon; this catalogue's entry (LOCALE_PATHS comes
# first) gives the full-width one: "订单：".
LABEL_SUFFIX = gettext_noop(":")


def set_language(request: HttpRequest) -> HttpResponse:
    """Django's ``set_language``, but it translates ``next`` from the language in its own
    path: Django resolves ``next`` in the request's active language, so switching from
    ``/en/…`` while the browser prefers Chinese would otherwise land back on ``/en/…``.
    A logged-in user's choice is remembered for their emails."""
    if request.method == "POST" and request.user.is_authenticated:
        account_services.user_language_set(
            user=request.user, language=request.POST.get("language", "")
        )
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    language = translation.get_language_from_path(urlsplit(next_url).path)
    if language:
        with translation.override(language):
            return django_set_language(request)
    return django_set_language(request)


def _logged_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    """The language of the page the user logged in on is the one they read."""
    if request is None:
        return
    language = translation.get_language_from_path(request.path_info)
    if language:
        account_services.user_language_set(user=user, language=language)


def connect() -> None:
    user_logged_in.connect(_logged_in, dispatch_uid="portal.i18n.logged_in")
