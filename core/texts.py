"""Texts the system writes (events, reasons, history) stored as codes with parameters and
rendered in the language of the page or document that shows them.

A service that records why something happened writes a :class:`Text` instead of a
translated string::

    reason=Text("Created from quote %(n)s v%(v)s.", n=quote.number, v=quote.version)

The first argument is the message's code: its English source, the gettext msgid
(``make messages`` extracts it: ``core/management/commands/makemessages.py`` adds ``Text``
and ``Plural`` to xgettext's keywords). It is stored with its parameters as data
(``{"code": …, "params": {…}}``, :meth:`Text.as_data`), never translated when written, so
the text does not depend on the language of whoever triggered it. Pages and documents
render it with :func:`render` in their own language. A parameter may itself be a Text
(``why`` of a failed step), a number, a ``Decimal``, an aware ``datetime`` (shown in the
active time zone) or a string (names, numbers of documents, tool output: shown as given).

Where an English string is needed (logs, the plain ``reason`` column kept beside the
code, hash chains) use ``text.render("en")``. Rows written before the codes existed hold
plain text only; :func:`recode` (used by the data migrations) recognises the project's
own messages in either language and stores their codes. Text a person typed (a comment, a
reason given in a form) stays as typed: it is the author's words, not a system text.
"""

from __future__ import annotations

import gettext as gettext_module
import re
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone, translation
from django.utils.formats import date_format
from django.utils.functional import Promise
from django.utils.translation import gettext, ngettext

Param = Any
_DATETIME = "$datetime"
_DECIMAL = "$decimal"


class _Missing(dict[str, Any]):
    """A parameter the message names but the row does not hold reads as "?"."""

    def __missing__(self, key: str) -> str:
        return "?"


class Text(str):
    """A system text: its code (the English msgid) and parameters; see the module doc.

    It is a ``str`` whose value is the English rendering, so that it goes wherever a reason
    string went (signatures, logs, comparisons); what stores it keeps the code
    (:func:`stored`), and ``str(text)`` or a template shows it in the active language.
    Slicing or joining it gives a plain string: pass the Text itself, or make the longer
    text a Text with this one as a parameter."""

    code: str
    params: dict[str, Any]
    plural: str | None
    number: int | None  # chooses the plural form

    def __new__(cls, code: str, /, **params: Param) -> Text:
        return cls._make(code, params, None, None)

    @classmethod
    def _make(
        cls, code: str, params: dict[str, Any], plural: str | None, count: int | None
    ) -> Text:
        english = _render(code, params, plural, count, "en")
        self = super().__new__(cls, english)
        self.code, self.params, self.plural, self.number = code, dict(params), plural, count
        return self

    # -- storage -----------------------------------------------------------------------
    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"code": self.code, "params": _encode(self.params)}
        if self.plural is not None:
            data["plural"] = self.plural
            data["count"] = self.number
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Text:
        raw = data.get("params")
        plural = data.get("plural")
        return cls._make(
            str(data.get("code") or ""),
            dict(raw) if isinstance(raw, Mapping) else {},
            None if plural is None else str(plural),
            None if plural is None else int(data.get("count") or 0),
        )

    # -- rendering ---------------------------------------------------------------------
    def render(self, language: str | None = None) -> str:
        """The text in ``language`` (default: the active one)."""
        return _render(self.code, self.params, self.plural, self.number, language)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"Text({self.code!r}, **{self.params!r})"

    __hash__ = str.__hash__


def _render(
    code: str,
    params: Mapping[str, Any],
    plural: str | None,
    count: int | None,
    language: str | None,
) -> str:
    if language is not None:
        with translation.override(language):
            return _render(code, params, plural, count, None)
    if plural is not None:
        template = ngettext(code, plural, count or 0)
    else:
        template = gettext(code) if code else ""
    if "%(" not in template:
        return template
    values = _Missing({k: _decode(_encode(v)) for k, v in params.items()})
    if plural is not None:
        values.setdefault("count", count)
    try:
        return template % values
    except (TypeError, ValueError, KeyError):
        return template


def Plural(singular: str, plural: str, count: int, /, **params: Param) -> Text:
    """A :class:`Text` with a plural form chosen by ``count`` when rendered."""
    return Text._make(singular, params, plural, int(count))


def _encode(value: Any) -> Any:
    if isinstance(value, Text):
        return value.as_data()
    if isinstance(value, Promise):  # a choice's label (``Status.PAID.label``): its msgid
        msgid = _lazy_msgid(value)
        return {"code": msgid, "params": {}} if msgid else str(value)
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, Decimal):
        return {_DECIMAL: str(value)}
    if isinstance(value, datetime):
        return {_DATETIME: value.isoformat()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)  # a model, a hostname object: its name as the writer saw it


def _lazy_msgid(value: Promise) -> str | None:
    """The msgid of a ``gettext_lazy`` proxy, None for any other lazy object."""
    reduced: Any = value.__reduce__()
    try:
        func, args = reduced[1][0], reduced[1][1]
    except (TypeError, ValueError, IndexError):
        return None
    if func is gettext and len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return None


def label(choices: Any, value: str) -> Any:
    """The label of ``value`` in a ``TextChoices`` class as a parameter of a Text: kept as
    its code and shown in the reader's language (``get_FOO_display()`` would freeze the
    writer's)."""
    try:
        return choices(value).label
    except ValueError:
        return value


def clip(reason: str, length: int) -> str:
    """A reason cut to ``length`` characters for a column, unless it is a :class:`Text`
    (kept whole: its code is short, its parameters are data)."""
    return reason if isinstance(reason, Text) else reason[:length]


def _decode(value: Any) -> Any:
    if isinstance(value, Mapping):
        if "code" in value and "params" in value:
            return Text.from_data(value).render()
        if _DECIMAL in value:
            return Decimal(str(value[_DECIMAL]))
        if _DATETIME in value:
            at = datetime.fromisoformat(str(value[_DATETIME]))
            if timezone.is_aware(at):
                at = timezone.localtime(at)
            return date_format(at, "Y-m-d H:i")
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return ", ".join(str(_decode(v)) for v in value)
    return value


# -- what the lifecycle mechanism and the models call ------------------------------------

Reasonable = Text | str


def stored(reason: Reasonable) -> tuple[str, dict[str, Any] | None]:
    """What a row keeps of a reason: its English rendering (logs, search, hash chains)
    and, for a system text, its code and parameters (None for text a person typed)."""
    if isinstance(reason, Text):
        return reason.render("en"), reason.as_data()
    return str(reason), None


def render(data: Mapping[str, Any] | None, fallback: str = "") -> str:
    """A stored text in the active language; ``fallback`` (the plain column) when the row
    holds no code (typed by a person, or older than the codes and not recognised)."""
    if isinstance(data, Mapping) and data.get("code"):
        return Text.from_data(data).render()
    return fallback


# -- recognising older rows (data migrations) --------------------------------------------

_PLACEHOLDER = re.compile(r"%\((\w+)\)[sdfi]")


def _pattern(template: str) -> re.Pattern[str] | None:
    parts = _PLACEHOLDER.split(template)
    if len(parts) == 1:
        return None
    literal = re.sub(r"[\W_]+", "", "".join(parts[0::2]))
    if len(literal) < 4:  # "%(a)s %(b)s" would match anything
        return None
    out, seen = [], set()
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(re.escape(part.replace("%%", "%")))
        elif part in seen:
            out.append(f"(?P={part})")
        else:
            seen.add(part)
            out.append(f"(?P<{part}>.+?)")
    return re.compile("^" + "".join(out) + "$", re.DOTALL)


@cache
def _catalogue() -> tuple[dict[str, str], list[tuple[re.Pattern[str], str]]]:
    """The project's own messages: exact text (English or Chinese) → code, and patterns
    for those with parameters (both languages), from the compiled zh-Hans catalogue."""
    exact: dict[str, str] = {}
    patterns: list[tuple[re.Pattern[str], str]] = []
    locale_dirs = [Path(p) for p in getattr(settings, "LOCALE_PATHS", [])]
    catalog: dict[Any, str] = {}
    for directory in locale_dirs:
        try:
            found = gettext_module.translation("django", str(directory), languages=["zh_Hans"])
        except OSError:
            continue
        catalog.update(getattr(found, "_catalog", {}))
    for msgid, msgstr in catalog.items():
        if not isinstance(msgid, str) or not msgid or not isinstance(msgstr, str):
            continue  # plural entries are keyed by (msgid, n): not recognised
        for shown in (msgid, msgstr):
            pattern = _pattern(shown)
            if pattern is None:
                exact.setdefault(shown, msgid)
            else:
                patterns.append((pattern, msgid))
    patterns.sort(key=lambda p: -len(p[0].pattern))  # the most specific first
    return exact, patterns


def recognise(plain: str) -> dict[str, Any] | None:
    """The code and parameters of a stored plain text that is one of the project's
    messages in English or Chinese, else None."""
    plain = (plain or "").strip()
    if not plain:
        return None
    exact, patterns = _catalogue()
    if plain in exact:
        return Text(exact[plain]).as_data()
    for pattern, code in patterns:
        match = pattern.match(plain)
        if match:
            return Text(code, **match.groupdict()).as_data()
    return None


def recode(
    manager: Any, *, plain_field: str = "reason", code_field: str = "reason_text", batch: int = 2000
) -> int:
    """Give the rows of ``manager`` that hold only plain text the code of the message they
    are (the data migrations call this per event model); returns how many were recoded.
    The plain column is left as it was written (a hash chain may cover it)."""
    rows = manager.filter(**{f"{code_field}__isnull": True}).exclude(**{plain_field: ""})
    changed = []
    for row in rows.only("pk", plain_field).iterator(chunk_size=batch):
        data = recognise(getattr(row, plain_field))
        if data is None:
            continue
        setattr(row, code_field, data)
        changed.append(row)
    for start in range(0, len(changed), batch):
        manager.bulk_update(changed[start : start + batch], [code_field])
    return len(changed)


def in_reader_language(value: Any) -> str:
    """A plain column that holds one of the project's own messages (written in whichever
    language was active then) in the active language; anything else (words a person
    typed, a tool's output) as written. Templates: ``{{ value|reader }}``."""
    if value is None:
        return ""
    if isinstance(value, Text):
        return value.render()
    plain = str(value)
    return render(recognise(plain), plain)
