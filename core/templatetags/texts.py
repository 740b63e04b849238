"""``{{ value|reader }}``: a plain column that holds one of the project's own messages
(written in whichever language was active then: a step's message, a swap's or a credit
note's reason) shown in the language of the page or document (``core.texts.recognise``);
anything else, such as words a person typed or a tool's output, stays as written."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext

from core import texts

register = template.Library()


@register.filter
def reader(value: Any) -> str:
    return texts.in_reader_language(value)


@register.filter
def listing(values: Any) -> str:
    """``a, b, c`` in the page's language (Chinese: ``a、b、c``): items of a sentence."""
    return gettext(", ").join(str(v) for v in values or ())
