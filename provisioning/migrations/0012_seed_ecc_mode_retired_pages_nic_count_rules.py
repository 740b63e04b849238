"""Issue 19: seed rules for the ECC mode (every model with ECC memory), Volta's page
retirement (V100S: retired pages instead of row remapping, no SRAM/DRAM counters) and the
fabric NIC count (InfiniBand node types). Only the rules not stored yet are added
(``seeding.seed_rules``); every stored rule keeps staff's edits."""

from typing import Any

from django.db import migrations

from provisioning.validation.seeding import seed_rules


def seed(apps: Any, schema_editor: Any) -> None:
    seed_rules(apps.get_model("provisioning", "ValidationRule"), using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [("provisioning", "0011_merge_money_and_validation")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
