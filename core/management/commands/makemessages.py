"""``makemessages`` that also extracts the system texts stored as codes (``core.texts``):
``Text("…")`` and ``Plural("…", "…", n)`` (Django documents overriding
``xgettext_options`` this way), and ``N_("…")``: pure modules' tables of texts marked with
``core.i18n_hook.gettext_noop`` under that short name (the seed rules' sources)."""

from django.core.management.commands import makemessages


class Command(makemessages.Command):
    xgettext_options = [
        *makemessages.Command.xgettext_options,
        "--keyword=Text",
        "--keyword=Plural:1,2",
        "--keyword=N_",
    ]
