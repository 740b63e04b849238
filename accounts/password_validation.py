"""Password validators whose messages are translated in this project's catalogue.

Django 5.2 changed the minimum-length message to ``%d character(s)``; its own zh_Hans
catalogue still holds only the older ``%(min_length)d`` text, so the error was shown in
English on Chinese pages.
"""

from __future__ import annotations

from django.contrib.auth import password_validation
from django.utils.translation import ngettext


class MinimumLengthValidator(password_validation.MinimumLengthValidator):
    def get_error_message(self) -> str:
        return ngettext(
            "This password is too short. It must contain at least %(count)d character.",
            "This password is too short. It must contain at least %(count)d characters.",
            self.min_length,
        ) % {"count": self.min_length}
