"""What a background task does, in words staff read (the outbox admin shows these, never
the task's registered name: a Chinese page names no Python identifiers).

The top layer registers the labels of every app's tasks (``portal.task_labels``, from
``PortalConfig.ready``); a name nobody registered reads as its app's kind of work."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

_LABELS: dict[str, Promise | str] = {}

_BY_APP: dict[str, Promise] = {
    "accounts": _("an account email"),
    "billing": _("billing work"),
    "core": _("the outbox relay"),
    "inventory": _("inventory work"),
    "portal": _("portal work"),
    "provisioning": _("provisioning work"),
}


def register(labels: Mapping[str, Promise | str]) -> None:
    _LABELS.update(labels)


def label(name: str) -> str:
    """The task's label in the active language."""
    found = _LABELS.get(name)
    if found is not None:
        return str(found)
    by_app = _BY_APP.get(name.split(".", 1)[0])
    return str(by_app) if by_app is not None else gettext("a background task")
