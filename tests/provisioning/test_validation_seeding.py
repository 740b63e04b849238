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
