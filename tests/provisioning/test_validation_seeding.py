"""The seed acceptance rules survive what transactional tests do to the database: Django
flushes every table after such a test and sends ``post_migrate``, and the provisioning
app seeds an empty rule table again (the same function as the data migration and
``validation_rules_seed``). A table that has rules is left as staff made it."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from provisioning.models import ValidationRule
from provisioning.validation.default_rules import DEFAULT_RULES


@pytest.mark.django_db(transaction=True)
def test_a_flushed_database_gets_the_seed_rules_back_and_staff_deletions_stay_deleted():
    assert {r.as_rule() for r in ValidationRule.objects.all()} == set(DEFAULT_RULES)
    call_command("flush", interactive=False, verbosity=0)  # as after a transactional test
    assert {r.as_rule() for r in ValidationRule.objects.all()} == set(DEFAULT_RULES)

    ValidationRule.objects.filter(metric="throttled_gpus", gpu_model="*").delete()
    call_command("migrate", interactive=False, verbosity=0)  # the next deployment
    assert not ValidationRule.objects.filter(metric="throttled_gpus", gpu_model="*").exists()
    assert ValidationRule.objects.count() == len(DEFAULT_RULES) - 1


@pytest.mark.django_db
def test_the_azure_lines_migration_updates_unedited_rows_and_keeps_staff_edits():
    """0015: a database seeded before it holds the old sources and the V100S host-copy
    figure 9; the rows nobody edited get the new ones, an edited row keeps its edit."""
    import importlib

    from provisioning.validation.seeding import update_unedited

    migration = importlib.import_module(
        "provisioning.migrations.0015_validation_sources_azure_lines"
    )
    old_nvb = migration.OLD_SOURCES[("h2d_bandwidth_gbps", "d2h_bandwidth_gbps",
                                     "p2p_bandwidth_gbps")]  # fmt: skip
    h2d = ValidationRule.objects.filter(metric="h2d_bandwidth_gbps", gpu_model="V100S")
    h2d.update(min_value=9, source=old_nvb)
    ib = ValidationRule.objects.filter(metric="ib_write_bw_gbps", gpu_model="H100")
    ib.update(source=migration.OLD_SOURCES[("ib_write_bw_gbps",)])
    edited = ValidationRule.objects.filter(metric="d2h_bandwidth_gbps", gpu_model="V100S")
    edited.update(min_value=11, source=old_nvb)  # staff raised it: not the old seed any more

    changed = update_unedited(ValidationRule, migration.previous_seed())

    assert changed == 2
    row = h2d.get()
    assert row.min_value == 10 and "conf/nc6s_v3.conf:38 `check_gpu_bw 10`" in row.source
    assert "conf/nd96isr_h100_v5.conf:60 `check_ib_bw_gdr 380`" in ib.get().source
    assert (edited.get().min_value, edited.get().source) == (11, old_nvb)
