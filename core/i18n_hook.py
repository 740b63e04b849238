"""A translation hook for pure modules (inventory/sizing/): no Django import here.

Pure modules wrap every user-facing string in ``_()`` and apply named %-placeholders
after the call, so that ``makemessages`` can extract the literal::

    _("Rounded up from %(a)s to %(b)s GPUs") % {"a": ..., "b": ...}

Until a translator is installed ``_()`` returns the English text unchanged. The Django
layer installs one once at startup: ``core.apps.CoreConfig.ready()`` calls
``set_translator(django.utils.translation.gettext)`` (and ``set_plural_translator``);
the lookup happens when ``_()`` is called, so each call gets the language active at that
moment.

``ngettext(singular, plural, n)`` chooses the plural form (``set_plural_translator``).
``gettext_noop()`` marks a string for extraction without translating it (module-level
tables); translate the value with ``_()`` where it is used. ``makemessages`` knows both
names (``_`` from xgettext's Python defaults, ``gettext_noop`` from Django's keywords).
"""

from __future__ import annotations

from collections.abc import Callable


def _identity(message: str) -> str:
    return message


_translate: Callable[[str], str] = _identity


def set_translator(fn: Callable[[str], str] | None) -> None:
    """Route every ``_()`` call through ``fn``; None puts back the identity (English)."""
    global _translate  # the hook is process-wide by design
    _translate = _identity if fn is None else fn


def get_translator() -> Callable[[str], str]:
    """The translator in use, so that a caller can put it back afterwards."""
    return _translate


def _(message: str) -> str:
    """Translate ``message`` with the installed translator (identity by default)."""
    return _translate(message)


def _english_plural(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


_translate_plural: Callable[[str, str, int], str] = _english_plural


def set_plural_translator(fn: Callable[[str, str, int], str] | None) -> None:
    """Route every ``ngettext()`` call through ``fn``; None puts back English's rule."""
    global _translate_plural  # process-wide, like ``set_translator``
    _translate_plural = _english_plural if fn is None else fn


def ngettext(singular: str, plural: str, n: int) -> str:
    """ "1 node" / "2 nodes": the form for ``n`` in the active language."""
    return _translate_plural(singular, plural, n)


def gettext_noop(message: str) -> str:
    """Mark ``message`` for extraction; return it untranslated."""
    return message
