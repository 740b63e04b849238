"""import-linter's contracts (pyproject.toml ``[tool.importlinter]``) hold on the code and
break on a deliberately wrong import.

Each case copies the apps' sources into a temporary folder, adds one import that points the
wrong way and runs ``lint-imports`` there: the contract it breaks must be reported and the
command must fail. (``make test`` also runs ``lint-imports`` on the real tree.)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("core", "accounts", "inventory", "billing", "provisioning", "portal")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy_tree(target: Path) -> None:
    for app in APPS:
        shutil.copytree(
            ROOT / app,
            target / app,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "migrations", "templates"),
        )
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")


def _lint(target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=target,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_contracts_hold_on_the_code(tmp_path):
    _copy_tree(tmp_path)
    result = _lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("inventory/selectors.py", "import billing.models", "Apps point down"),
        ("core/money.py", "from portal import celery", "Apps point down"),
        (
            "billing/pricing/periods.py",
            "from billing.orders import services",
            "Billing's domains point down",
        ),
        (
            "billing/quotes/documents.py",
            "from billing.payments import webhooks",
            "Billing's domains point down",
        ),
        (
            "billing/models/quotes.py",
            "from billing.pricing import catalog",
            "Billing's models import only the pure pricing modules",
        ),
        (
            "inventory/models/sites.py",
            "from inventory.models.nodes import Node",
            "Inventory's models point down",
        ),
        (
            "inventory/services/nodes.py",
            "from inventory.services.maintenance import maintenance_plan_create",
            "Inventory's services point down",
        ),
        ("billing/orders/services.py", "import stripe", "Only the Stripe gateway imports stripe"),
        (
            "provisioning/validation/report.py",
            "import pyhanko.sign",
            "Only the signature module imports pyhanko",
        ),
    ],
)
def test_a_deliberately_wrong_import_breaks_its_contract(tmp_path, module, line, contract):
    _copy_tree(tmp_path)
    path = tmp_path / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = [row for row in result.stdout.splitlines() if " BROKEN" in row]
    assert any(row.startswith(contract) for row in broken), result.stdout
