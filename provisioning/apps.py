from typing import Any

from django.apps import AppConfig
from django.apps.registry import Apps
from django.db import router
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _

from provisioning.validation.seeding import seed_empty_table  # pure: no models imported


def seed_validation_rules(
    sender: AppConfig, *, using: str = "default", apps: Apps | None = None, **kwargs: Any
) -> None:
    """After ``migrate`` or ``flush``: an empty rule table gets the seed rules again (see
    ``provisioning.validation.seeding``)."""
    try:
        model = (apps or sender.apps).get_model("provisioning", "ValidationRule")
    except LookupError:  # migrated back before the rules existed
        return
    if router.allow_migrate_model(using, model):
        seed_empty_table(model, using=using)


class ProvisioningConfig(AppConfig):
    name = "provisioning"
    verbose_name = _("Provisioning")

    def ready(self) -> None:
        from provisioning.validation import system_checks  # noqa: F401 - registers them

        post_migrate.connect(seed_validation_rules, sender=self)
        from provisioning.health.signals import connect

        connect()
