"""The one check every lifecycle uses: is ``source -> target`` in its transition table?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

from portal.errors import IllegalTransition


def transition_check(
    *,
    table: Mapping[str, frozenset[str]],
    labels: Any,
    what: str,
    source: str,
    target: str,
) -> None:
    """Raise ``IllegalTransition`` with a readable message unless the table allows the move.

    ``labels`` is the ``TextChoices`` class, used for the human names of the statuses.
    """
    if target in table.get(source, frozenset()):
        return
    names = dict(labels.choices)
    allowed = sorted(str(names.get(s, s)) for s in table.get(source, frozenset()))
    raise IllegalTransition(
        _("%(what)s cannot go from “%(source)s” to “%(target)s”. Allowed from here: %(allowed)s.")
        % {
            "what": what,
            "source": names.get(source, source),
            "target": names.get(target, target),
            "allowed": ", ".join(allowed) if allowed else _("none (final state)"),
        }
    )
