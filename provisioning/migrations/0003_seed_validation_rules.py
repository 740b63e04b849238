"""Seed the acceptance rules from VALIDATION.md (``rules.DEFAULT_RULES``, a pure module).

Idempotent like ``validation_rules_seed``: a rule already stored is left as staff edited it.
"""

from decimal import Decimal
from typing import Any

from django.db import migrations

from provisioning.validation.rules import DEFAULT_RULES


def _dec(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def seed(apps: Any, schema_editor: Any) -> None:
    model = apps.get_model("provisioning", "ValidationRule")
    for rule in DEFAULT_RULES:
        natural = {
            "metric": rule.metric,
            "gpu_model": rule.gpu_model,
            "fabric": rule.fabric or "",
            "scope": rule.scope,
            "check_name": rule.check or "",
            "message_size_bytes": rule.message_size_bytes,
        }
        if model.objects.filter(**natural).exists():
            continue
        model.objects.create(
            **natural,
            unit=rule.unit,
            baseline=_dec(rule.baseline),
            baseline_from=rule.baseline_from or "",
            baseline_multiplier_from=rule.baseline_multiplier_from or "",
            min_variance=_dec(rule.min_variance),
            min_value=_dec(rule.min_value),
            min_inclusive=rule.min_inclusive,
            max_value=_dec(rule.max_value),
            equals="" if rule.equals is None else str(rule.equals),
            max_below_median=_dec(rule.max_below_median),
            required=rule.required,
            source=rule.source,
        )


class Migration(migrations.Migration):
    dependencies = [("provisioning", "0002_validation_runs_rules_reports")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
