"""Imports point down: core ← accounts ← inventory ← billing ← provisioning ← portal.

The test reads every module's imports with ``ast`` (at any depth: an import inside a
function counts too) and fails on one that reaches a higher layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["core", "accounts", "inventory", "billing", "provisioning", "portal"]
RANK = {name: i for i, name in enumerate(LAYERS)}


def imported_packages(source: str) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def violations(layer: str, path: Path, source: str) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line} imports {package} (a higher layer than {layer})"
        for line, package in imported_packages(source)
        if package in RANK and RANK[package] > RANK[layer]
    ]


def test_no_module_imports_a_higher_layer():
    problems = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            problems += violations(layer, path, path.read_text(encoding="utf-8"))
    assert problems == []


@pytest.mark.parametrize(
    ("layer", "line"),
    [
        ("core", "from billing.models import Quote"),
        ("inventory", "import billing.services"),
        ("billing", "from provisioning import tasks"),
        ("provisioning", "from portal.shop.views import catalog"),
        ("accounts", "def f():\n    from inventory import selectors"),
    ],
)
def test_a_deliberately_wrong_import_is_caught(layer, line):
    assert violations(layer, ROOT / layer / "x.py", line) != []


@pytest.mark.parametrize(
    ("layer", "line"),
    [("billing", "from inventory.models import Node"), ("portal", "import core.errors")],
)
def test_imports_that_point_down_are_allowed(layer, line):
    assert violations(layer, ROOT / layer / "x.py", line) == []
