"""Checks on names people type (organisations, customers, quote contacts, signers).

Emoji are refused at input, with a clear message, everywhere a name is entered: the
quote, invoice and contract PDFs embed Noto Sans CJK, which has no emoji, and a name
that prints as empty boxes on a contract is worse than one the customer retypes. A name
longer than its field is refused too, never cut: ``name_check`` is what services call,
``no_emoji`` the validator on model and form fields.
"""

from __future__ import annotations

import re

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


def has_emoji(value: str) -> bool:
    return bool(value) and EMOJI.search(value) is not None


def no_emoji(value: str) -> None:
    """Field validator: refuse emoji and pictographs in a name."""
    if has_emoji(str(value)):
        raise ValidationError(
            _("Names cannot contain emoji or pictographs; use letters, digits and punctuation."),
            code="emoji",
        )


def name_check(value: str, *, max_length: int, label: str) -> str:
    """``value`` with its whitespace collapsed, refused (``DomainError``, naming ``label``)
    when it is longer than ``max_length`` characters or holds emoji; never shortened."""
    value = " ".join(str(value).split())
    if len(value) > max_length:
        raise DomainError(
            _("%(label)s can be at most %(max)s characters; this one has %(n)s.")
            % {"label": label, "max": max_length, "n": len(value)}
        )
    if has_emoji(value):
        raise DomainError(
            _("%(label)s cannot contain emoji or pictographs; use letters, digits and punctuation.")
            % {"label": label}
        )
    return value
