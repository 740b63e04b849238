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

NATURAL_KEY = (
    "metric",
    "gpu_model",
    "fabric",
    "scope",
    "check_name",
    "message_size_bytes",
    "gpu_count",
)


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
        "gpu_count": rule.gpu_count,
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
    # A historical model (an early migration) may lack later fields: seed what it has.
    names = {f.name for f in model._meta.concrete_fields}
    natural = [k for k in NATURAL_KEY if k in names]
    existing = set(manager.values_list(*natural))
    new = []
    kept = 0
    for rule in rules:
        fields = {k: v for k, v in rule_fields(rule).items() if k in names}
        key = tuple(fields[k] for k in natural)
        if key in existing:
            kept += 1
            continue
        existing.add(key)
        new.append(model(**fields))
    manager.bulk_create(new)
    return len(new), kept


def replace_seed(
    model: Any, rules: Iterable[Rule] = DEFAULT_RULES, *, using: str = "default"
) -> tuple[int, int]:
    """For a migration that changes the seed: remove the stored rules whose natural key
    is no longer in the seed (renamed metrics, figures now keyed by size or GPU count),
    then add the new ones. Rows whose key is still seeded keep staff's edits. Returns
    (removed, created)."""
    rules = list(rules)
    manager = model._default_manager.db_manager(using)
    keys = {tuple(rule_fields(r)[k] for k in NATURAL_KEY) for r in rules}
    stale = [pk for pk, *key in manager.values_list("pk", *NATURAL_KEY) if tuple(key) not in keys]
    manager.filter(pk__in=stale).delete()
    created, _kept = seed_rules(model, rules, using=using)
    return len(stale), created


def seed_empty_table(model: Any, *, using: str = "default") -> int:
    """Seed ``model``'s table only when it holds no rule at all; returns how many."""
    if model._default_manager.db_manager(using).exists():
        return 0
    return seed_rules(model, using=using)[0]


def update_unedited(
    model: Any,
    previous: Iterable[tuple[Rule, dict[str, Any]]],
    *,
    using: str = "default",
) -> int:
    """For a migration that changes a seeded rule's figures or source in place (same
    natural key): each ``(rule, old)`` pairs the new seed rule with the field values the
    previous seed stored (``{"source": …, "min_value": …}``). A stored row that still
    holds every old value (staff did not edit it) gets the new rule's values for those
    fields; an edited row is left alone. Returns how many rows changed."""
    manager = model._default_manager.db_manager(using)
    changed = 0
    for rule, old in previous:
        fields = rule_fields(rule)
        key = {k: fields[k] for k in NATURAL_KEY}
        row = manager.filter(**key).first()
        if row is None:
            continue
        if any(_stored(getattr(row, name)) != _stored(value) for name, value in old.items()):
            continue
        for name in old:
            setattr(row, name, fields[name])
        row.save(update_fields=list(old))
        changed += 1
    return changed


def _stored(value: Any) -> Any:
    return _dec(value) if isinstance(value, int | float | Decimal) else value
