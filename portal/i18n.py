"""The language switcher."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views.i18n import set_language as django_set_language


def set_language(request: HttpRequest) -> HttpResponse:
    """Django's ``set_language``, but it translates ``next`` from the language in its own
    path: Django resolves ``next`` in the request's active language, so switching from
    ``/en/…`` while the browser prefers Chinese would otherwise land back on ``/en/…``."""
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    language = translation.get_language_from_path(urlsplit(next_url).path)
    if language:
        with translation.override(language):
            return django_set_language(request)
    return django_set_language(request)
