"""Issue 19: the seed rules read the metrics derived from the raw outputs
(``provisioning.validation.metrics``), some renamed, the all-reduce, P2P and NVLink figures
keyed by GPU count and message size, and the new checks (ECC counters, throttling, MIG,
model and memory, GEMM correctness, per-SKU ib_write_bw). Stored rules whose key is no
longer seeded are removed; rules still seeded keep staff's edits
(``seeding.replace_seed``)."""

from typing import Any

from django.db import migrations

from provisioning.validation.seeding import replace_seed


def reseed(apps: Any, schema_editor: Any) -> None:
    replace_seed(
        apps.get_model("provisioning", "ValidationRule"), using=schema_editor.connection.alias
    )


class Migration(migrations.Migration):
    dependencies = [("provisioning", "0006_validation_rule_gpu_count")]

    operations = [migrations.RunPython(reseed, migrations.RunPython.noop)]
