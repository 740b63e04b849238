from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class InventoryConfig(AppConfig):
    name = "inventory"
    verbose_name = _("Inventory")

    def ready(self) -> None:
        from inventory import availability_generation

        availability_generation.connect_signals()
