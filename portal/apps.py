from importlib import import_module
from importlib.util import find_spec

from django.apps import AppConfig, apps
from django.utils.translation import gettext_lazy as _


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = _("Customer portal")

    def ready(self) -> None:
        # The back office carries the product's name, not "Django administration".
        from django.conf import settings
        from django.contrib import admin
        from django.utils.text import format_lazy

        admin.site.site_header = format_lazy(
            "{} · {}", settings.PORTAL_PROVIDER_BRAND, _("back office")
        )
        admin.site.site_title = admin.site.site_header
        admin.site.index_title = _("Inventory, quotes and payments")
        # What each background task does, for the outbox admin (core.task_labels).
        import_module("portal.task_labels")
        # Services enqueue tasks by name (core.jobs); register every app's tasks in each
        # process (web, worker, shell), so that a name always resolves to its task.
        for config in apps.get_app_configs():
            for module in (f"{config.name}.tasks", f"{config.name}.validation.tasks"):
                if find_spec(module.rsplit(".", 1)[0]) and find_spec(module) is not None:
                    import_module(module)
        import_module("portal.operations.tasks")
        # Webhook events from lifecycle writes and dunning notices (portal.api.events).
        import_module("portal.api.events").connect()
        # The language each user last chose, for their emails (portal.i18n).
        import_module("portal.i18n").connect()
