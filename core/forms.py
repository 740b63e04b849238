"""Form fields every app shares."""

from __future__ import annotations

from typing import Any

from django import forms
from django.forms.widgets import Widget

from core.validators import no_emoji


class NameField(forms.CharField):
    """A person's or an organisation's name: checked by ``core.validators.no_emoji``,
    and a name longer than ``max_length`` is refused with a message, never cut. So the
    input carries no ``maxlength`` attribute: with one, a browser silently drops what is
    typed or pasted beyond it, and the customer never learns their name was cut."""

    default_validators = [no_emoji]

    def widget_attrs(self, widget: Widget) -> dict[str, Any]:
        attrs = super().widget_attrs(widget)
        attrs.pop("maxlength", None)
        return attrs
