"""Seed the acceptance rules from VALIDATION.md (``rules.DEFAULT_RULES``, a pure module).

Idempotent like ``validation_rules_seed`` (the same function,
``provisioning.validation.seeding.seed_rules``, with the historical model): a rule already
stored is left as staff edited it.
"""

from typing import Any

from django.db import migrations

from provisioning.validation.seeding import seed_rules


def seed(apps: Any, schema_editor: Any) -> None:
    seed_rules(
        apps.get_model("provisioning", "ValidationRule"), using=schema_editor.connection.alias
    )


class Migration(migrations.Migration):
    dependencies = [("provisioning", "0002_validation_runs_rules_reports")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
