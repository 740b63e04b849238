"""System checks: no setting may judge a real GPU node on the CPU path in production.

``VALIDATION_AGENT_RUNNER=local`` runs the agent next to the worker (it measures the
worker, not the node) and ``PORTAL_REDFISH_IN_BAND=simulated`` makes every Redfish node
"simulated hardware" (judged on the CPU path: ``services.judged_on_cpu``). Both are for the
embedded default (DEBUG) and the test suite only; anywhere else ``manage.py check`` (run by
``migrate``, ``runserver`` and the deployment) refuses to start with ``provisioning.E001``
/ ``provisioning.E002``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register

TEST_SETTINGS = "portal.settings.test"


def simulation_switch_errors(
    *, debug: bool, settings_module: str, runner: str, in_band: str
) -> list[Error]:
    if debug or settings_module == TEST_SETTINGS:
        return []
    errors = []
    if runner == "local":
        errors.append(
            Error(
                "VALIDATION_AGENT_RUNNER=local outside DEBUG and tests: the agent would "
                "measure the worker, not the node.",
                hint="Use auto (by the node's driver) or ssh.",
                id="provisioning.E001",
            )
        )
    if in_band == "simulated":
        errors.append(
            Error(
                "PORTAL_REDFISH_IN_BAND=simulated outside DEBUG and tests: real Redfish "
                "nodes would be validated on the CPU path.",
                hint="Unset PORTAL_REDFISH_IN_BAND (it serves the Redfish emulator only).",
                id="provisioning.E002",
            )
        )
    return errors


@register("provisioning")
def check_simulation_switches(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    return simulation_switch_errors(
        debug=bool(settings.DEBUG),
        settings_module=str(getattr(settings, "SETTINGS_MODULE", "") or ""),
        runner=str(settings.VALIDATION_AGENT_RUNNER),
        in_band=str(settings.PORTAL_REDFISH_IN_BAND),
    )
