"""``makemessages`` that also extracts the system texts stored as codes (``core.texts``):
``Text("…")`` and ``Plural("…", "…", n)`` (Django documents overriding
``xgettext_options`` this way)."""

from django.core.management.commands import makemessages


class Command(makemessages.Command):
    xgettext_options = [
        *makemessages.Command.xgettext_options,
        "--keyword=Text",
        "--keyword=Plural:1,2",
    ]
