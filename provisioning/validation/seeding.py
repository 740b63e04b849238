"""Storing the seed acceptance rules (``default_rules.DEFAULT_RULES``, from VALIDATION.md): one
function for the data migration, the ``validation_rules_seed`` service (``seed_demo``,
``manage.py validation_rules_seed``) and the ``post_migrate`` hook.

It takes the model class, so a migration passes its historical model. Idempotent: a
rule already stored (same metric, GPU model, fabric, scope, check and message size) is
left as staff edited it. The ``post_migrate`` hook (``apps.py``) seeds only an empty
table: a database that was just created or flushed (Django's TransactionTestCase
flushes after each test and sends ``post_migrate``, which is how the rules come back for
the next test); a rule staff deleted is not brought back by the next ``migrate``.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.rules import Rule

NATURAL_KEY = ("metric", "gpu_model", "fabric", "scope", "check_name", "message_size_bytes")


def _dec(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def rule_fields(rule: Rule) -> dict[str, Any]:
    """A pure rule as the ``ValidationRule`` row's field values."""
    return {
        "metric": rule.metric,
        "gpu_model": rule.gpu_model,
        "fabric": rule.fabric or "",
        "scope": rule.scope,
        "check_name": rule.check or "",
        "message_size_bytes": rule.message_size_bytes,
        "unit": rule.unit,
        "baseline": _dec(rule.baseline),
        "baseline_from": rule.baseline_from or "",
        "baseline_multiplier_from": rule.baseline_multiplier_from or "",
        "min_variance": _dec(rule.min_variance),
        "min_value": _dec(rule.min_value),
        "min_inclusive": rule.min_inclusive,
        "max_value": _dec(rule.max_value),
        "equals": "" if rule.equals is None else str(rule.equals),
        "max_below_median": _dec(rule.max_below_median),
        "required": rule.required,
        "source": rule.source,
    }


def seed_rules(
    model: Any, rules: Iterable[Rule] = DEFAULT_RULES, *, using: str = "default"
) -> tuple[int, int]:
    """Store the rules not yet in ``model``'s table (two queries). Returns (created, kept)."""
    manager = model._default_manager.db_manager(using)
    existing = set(manager.values_list(*NATURAL_KEY))
    new = []
    kept = 0
    for rule in rules:
        fields = rule_fields(rule)
        key = tuple(fields[k] for k in NATURAL_KEY)
        if key in existing:
            kept += 1
            continue
        existing.add(key)
        new.append(model(**fields))
    manager.bulk_create(new)
    return len(new), kept


def seed_empty_table(model: Any, *, using: str = "default") -> int:
    """Seed ``model``'s table only when it holds no rule at all; returns how many."""
    if model._default_manager.db_manager(using).exists():
        return 0
    return seed_rules(model, using=using)[0]
