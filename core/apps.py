from django.apps import AppConfig
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from core import i18n_hook


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = _("Core")

    def ready(self) -> None:
        # The pure modules (inventory.sizing) translate through this hook, in the active
        # language.
        i18n_hook.set_translator(gettext)
        i18n_hook.set_plural_translator(ngettext)
