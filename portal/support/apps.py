from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SupportConfig(AppConfig):
    name = "portal.support"
    label = "support"
    verbose_name = _("Support desk and status pages")

    def ready(self) -> None:
        from portal.support.subscriptions import connect

        connect()
