"""Checks on names people type (organisations, customers, quote contacts, signers).

Emoji are refused at input, with a clear message, everywhere a name is entered: the
quote, invoice and contract PDFs embed Noto Sans CJK, which has no emoji, and a name
that prints as empty boxes on a contract is worse than one the customer retypes. So are
text that prints differently from what was typed or prints nothing: direction overrides
and isolates (U+202A–U+202E, U+2066–U+2069: "Acme\u202eLtd" shows as "AcmedtL"), other
control characters, a name of invisible characters only (zero-width spaces) and floods
of combining marks stacked on one letter ("Zalgo" text). A name longer than its field is
refused too, never cut: ``name_check`` is what services call, ``no_emoji`` the validator
on model and form fields (its name is older than the other checks; migrations name it),
and ``core.forms.NameField`` the form field (no ``maxlength`` attribute, which makes a
browser cut a pasted name silently).
"""

from __future__ import annotations

import re
import unicodedata

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from core.errors import DomainError

# Pictographs, emoticons, transport and map symbols, supplemental symbols, flags
# (regional indicators and tag sequences), dingbats and miscellaneous symbols, the
# emoji variation selector and the zero-width joiner that glues emoji sequences.
EMOJI = re.compile(
    "["
    "\U0001f000-\U0001faff"
    "\U00002600-\U000027bf"
    "\U00002b00-\U00002bff"
    "\U00002300-\U000023ff"
    "\U0000fe0f\U0000200d\U000020e3"
    "\U000e0020-\U000e007f"
    "]"
)


#: Direction overrides, embeddings and isolates, and the bare direction marks.
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
#: Combining marks one letter may carry (Vietnamese needs 2, Indic and Tibetan up to 4).
MAX_COMBINING_RUN = 4


def has_emoji(value: str) -> bool:
    return bool(value) and EMOJI.search(value) is not None


def _longest_combining_run(value: str) -> int:
    longest = run = 0
    for char in value:
        run = run + 1 if unicodedata.category(char) in ("Mn", "Me") else 0
        longest = max(longest, run)
    return longest


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name (a code), or ``None``: ``emoji``, ``bidi``,
    ``control``, ``invisible`` (no letter, digit or symbol that prints) or ``marks``."""
    if has_emoji(value):
        return "emoji"
    if BIDI_CONTROLS.search(value):
        return "bidi"
    if any(unicodedata.category(c) == "Cc" and not c.isspace() for c in value):
        return "control"
    if value and not any(unicodedata.category(c)[0] in "LNSP" for c in value):
        return "invisible"
    if _longest_combining_run(unicodedata.normalize("NFC", value)) > MAX_COMBINING_RUN:
        return "marks"
    return None


def _messages() -> dict[str, str]:
    return {
        "emoji": _(
            "Names cannot contain emoji or pictographs; use letters, digits and punctuation."
        ),
        "bidi": _(
            "Names cannot contain text-direction control characters (they make a name "
            "display in another order than it was typed)."
        ),
        "control": _("Names cannot contain control characters."),
        "invisible": _(
            "This name has no visible character: use letters or digits (invisible "
            "characters such as zero-width spaces do not count)."
        ),
        "marks": _(
            "This name stacks more than %(n)s accents or other combining marks on one "
            "letter; type each letter with at most %(n)s."
        )
        % {"n": MAX_COMBINING_RUN},
    }


def no_emoji(value: str) -> None:
    """Field validator for names: refuse emoji and pictographs, direction controls,
    control characters, invisible-only names and floods of combining marks."""
    problem = name_problem(str(value))
    if problem is not None:
        raise ValidationError(_messages()[problem], code=problem)


def name_check(value: str, *, max_length: int, label: str) -> str:
    """``value`` with its whitespace collapsed (and in Unicode's composed form, NFC),
    refused (``DomainError``, naming ``label``) when it is longer than ``max_length``
    characters or fails ``name_problem``; never shortened."""
    value = " ".join(str(value).split())
    if len(value) > max_length:
        raise DomainError(
            _("%(label)s can be at most %(max)s characters; this one has %(n)s.")
            % {"label": label, "max": max_length, "n": len(value)}
        )
    problem = name_problem(value)
    if problem == "emoji":
        raise DomainError(
            _("%(label)s cannot contain emoji or pictographs; use letters, digits and punctuation.")
            % {"label": label}
        )
    if problem is not None:
        raise DomainError(
            _("%(label)s is refused: %(reason)s") % {"label": label, "reason": _messages()[problem]}
        )
    return unicodedata.normalize("NFC", value)
