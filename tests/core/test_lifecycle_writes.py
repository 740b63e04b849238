"""Every status of a model that declares a ``Lifecycle`` moves through ``core.lifecycle``.

The app code is read with ``ast`` (never imported for this) and each write of a lifecycle's
status field outside ``core/lifecycle.py`` and the migrations fails the test:

- ``x.status = …`` (also ``+=``, annotated, ``setattr(x, "status", …)``) when the value
  names the lifecycle's choices (``PaymentStatus.FAILED``) or ``x`` is named after a
  lifecycle model (``payment``, ``order``, ``run`` …);
- ``….update(status=…)`` on a lifecycle model's manager or with such a value;
- ``bulk_update(…, ["status", …])`` on a lifecycle model's manager, and
  ``x.save(update_fields=[…"status"…])`` on an object named after a lifecycle model.

Creating an object with its initial status (``Model.objects.create(status=…)``,
``Model(status=…)``, ``bulk_create``) is not a move and is allowed (the services record
its creation event). So is the initial status of an object not yet saved, under
``if obj._state.adding:`` (the node CSV import gives a new node "available").

Which models have a lifecycle, their status field and choices come from Django's app
registry, so a new lifecycle is covered without editing this test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.apps import apps

from core.lifecycle import Lifecycle

ROOT = Path(__file__).resolve().parents[2]
APPS = ("core", "accounts", "inventory", "billing", "provisioning", "portal")
MECHANISM = ROOT / "core" / "lifecycle.py"


class Facts:
    """What the checker knows of the project's lifecycles."""

    def __init__(self, lifecycles: list[tuple[type, Lifecycle]]) -> None:
        self.models = {model.__name__ for model, _lc in lifecycles}
        self.fields = {lc.status_field for _model, lc in lifecycles}
        self.choices = {lc.choices.__name__ for _model, lc in lifecycles}
        self.objects = set()  # variable names that stand for a lifecycle model's object
        for model, _lc in lifecycles:
            words = re.findall(r"[A-Z][a-z0-9]*", model.__name__)
            self.objects.add("_".join(w.lower() for w in words))
            self.objects.add(words[-1].lower())


def project_facts() -> Facts:
    found = []
    for model in apps.get_models():
        lifecycle = model.__dict__.get("lifecycle")
        if isinstance(lifecycle, Lifecycle) and model.__module__.split(".")[0] in APPS:
            found.append((model, lifecycle))
    return Facts(found)


def _root_name(node: ast.AST) -> str | None:
    """``Payment`` for ``Payment.objects.filter(…).update``; ``None`` past a call's result
    of something other than a chain."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _names_choices(node: ast.AST | None, facts: Facts) -> bool:
    if node is None:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in facts.choices:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in facts.choices:
            return True
    return False


def _strings(node: ast.AST | None) -> set[str]:
    if not isinstance(node, ast.List | ast.Tuple | ast.Set):
        return set()
    return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _is_adding_guard(test: ast.AST) -> bool:
    return any(
        isinstance(sub, ast.Attribute)
        and sub.attr == "adding"
        and isinstance(sub.value, ast.Attribute)
        and sub.value.attr == "_state"
        for sub in ast.walk(test)
    )


class Checker(ast.NodeVisitor):
    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.adding = 0  # depth of ``if obj._state.adding:`` blocks
        self.found: list[tuple[int, str]] = []

    def _flag(self, node: ast.AST, what: str) -> None:
        self.found.append((node.lineno, what))

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        guarded = _is_adding_guard(node.test)
        self.adding += guarded
        for stmt in node.body:
            self.visit(stmt)
        self.adding -= guarded
        for stmt in node.orelse:
            self.visit(stmt)

    def _status_target(self, target: ast.AST, value: ast.AST | None, node: ast.AST) -> None:
        if not (isinstance(target, ast.Attribute) and target.attr in self.facts.fields):
            return
        owner = target.value.id if isinstance(target.value, ast.Name) else None
        if (owner in self.facts.objects or _names_choices(value, self.facts)) and not self.adding:
            self._flag(node, f"{ast.unparse(target)} = …")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            for sub in ast.walk(target):  # also ``a.status, b = …``
                self._status_target(sub, node.value, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._status_target(node.target, node.value, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._status_target(node.target, node.value, node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) == 3:
            obj, name, value = node.args
            if isinstance(name, ast.Constant) and name.value in self.facts.fields:
                self._status_target(ast.Attribute(value=obj, attr=name.value), value, node)
        elif isinstance(func, ast.Attribute):
            root = _root_name(func.value)
            on_model = root in self.facts.models
            if func.attr == "update":
                for field in self.facts.fields & set(keywords):
                    if on_model or _names_choices(keywords[field], self.facts):
                        self._flag(node, f"{ast.unparse(func)}({field}=…)")
            elif func.attr == "bulk_update" and on_model:
                fields = node.args[1] if len(node.args) > 1 else keywords.get("fields")
                if self.facts.fields & _strings(fields):
                    self._flag(node, f"{ast.unparse(func)}(…, status)")
            elif func.attr == "save" and isinstance(func.value, ast.Name):
                named = func.value.id in self.facts.objects
                if named and self.facts.fields & _strings(keywords.get("update_fields")):
                    self._flag(node, f"{func.value.id}.save(update_fields=[…status…])")
        self.generic_visit(node)


def writes(source: str, facts: Facts) -> list[tuple[int, str]]:
    checker = Checker(facts)
    checker.visit(ast.parse(source))
    return checker.found


def app_modules() -> list[Path]:
    paths = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts or path == MECHANISM:
                continue
            paths.append(path)
    return paths


def test_the_project_declares_its_lifecycles():
    facts = project_facts()
    assert {"Payment", "Order", "Invoice", "Quote", "Node", "Reservation"} <= facts.models
    assert "PaymentStatus" in facts.choices


def test_no_status_field_of_a_lifecycle_is_written_outside_core_lifecycle():
    facts = project_facts()
    found = []
    for path in app_modules():
        for line, what in writes(path.read_text(encoding="utf-8"), facts):
            found.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert found == [], "write the status through core.lifecycle.transition:\n" + "\n".join(found)


# The checker itself: each of these writes is found, each of the allowed forms is not.
WRONG = [
    "payment.status = PaymentStatus.FAILED",
    "obj.status = PaymentStatus.FAILED",
    "order.status = new_status",
    "run.status += 'x'",
    "setattr(node, 'status', 'faulty')",
    "Payment.objects.filter(pk=1).update(status='failed')",
    "qs.update(status=PaymentStatus.FAILED, failure_message='x')",
    "Payment.objects.bulk_update(rows, ['status', 'amount'])",
    "payment.save(update_fields=['status'])",
    "def f():\n    if x:\n        payment.status = 'failed'",
]
ALLOWED = [
    "Payment.objects.create(invoice=i, status=PaymentStatus.SUCCEEDED)",
    "Payment(invoice=i, status=PaymentStatus.PENDING)",
    "row.status = outcome.status",  # a Stripe event: no lifecycle
    "check.status = FAILED",
    "StripeEvent.objects.filter(pk=1).update(status=StripeEventStatus.FLAGGED)",
    "job.save(update_fields=['status'])",
    "if instance._state.adding:\n    instance.status = NodeStatus.AVAILABLE",
    "Payment.objects.filter(status=PaymentStatus.PENDING)",
]


@pytest.fixture(scope="module")
def facts():
    return project_facts()


@pytest.mark.parametrize("source", WRONG)
def test_the_checker_finds_a_status_write(source, facts):
    assert writes(source, facts) != []


@pytest.mark.parametrize("source", ALLOWED)
def test_the_checker_allows_creation_and_other_status_fields(source, facts):
    assert writes(source, facts) == []
