from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = _("Billing")

    def ready(self) -> None:
        # The pure modules (sizing) translate through this hook, in the active language.
        from django.utils.translation import gettext, ngettext

        from billing import i18n
        from billing.pricing import shop_data

        i18n.set_translator(gettext)
        i18n.set_plural_translator(ngettext)
        # The shop's memo of sites, node types and price books reloads when they change.
        shop_data.connect_signals()
