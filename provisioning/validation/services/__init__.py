"""Every write of the validation suite: rules seeded as data, runs created, executed and
stored (documents and raw outputs with SHA-256), staff re-checks, the idle-node sweep.

The judging is ``interface.validate_nodes`` with the rules read from the database; this
package keeps what it measured and moves the run (and, for the idle sweep, failing nodes
to faulty). A provisioning run keeps its outcome by passing ``persist=validation_persister(
order_id=…)`` to ``validate_nodes``.

One module per concern: ``targets`` (what a node is judged as, the runners that reach
it), ``live`` (each check as it finishes), ``storing`` (an outcome kept), ``runs`` (runs,
re-checks, the idle sweep, a saved document judged). The names below are the public
interface, importable from ``provisioning.validation.services`` as before.
"""

from provisioning.validation.services.live import live_checks_recorder
from provisioning.validation.services.runs import (
    EXECUTE_TASK,
    RENDER_REPORT_TASK,
    validation_idle_sweep,
    validation_judge_document,
    validation_node_recheck,
    validation_persister,
    validation_rules_seed,
    validation_run_create,
    validation_run_execute,
)
from provisioning.validation.services.targets import (
    SshNodeRunner,
    agent_runner,
    agent_timeout_s,
    default_runner,
    judged_on_cpu,
    node_expected,
    node_target,
    node_type_target,
    rule_fabric,
    runner_kind,
    ssh_node_runner,
    ssh_settings,
    type_expected,
    type_fabric,
)

__all__ = [
    "EXECUTE_TASK",
    "RENDER_REPORT_TASK",
    "SshNodeRunner",
    "agent_runner",
    "agent_timeout_s",
    "default_runner",
    "judged_on_cpu",
    "live_checks_recorder",
    "node_expected",
    "node_target",
    "node_type_target",
    "rule_fabric",
    "runner_kind",
    "ssh_node_runner",
    "ssh_settings",
    "type_expected",
    "type_fabric",
    "validation_idle_sweep",
    "validation_judge_document",
    "validation_node_recheck",
    "validation_persister",
    "validation_rules_seed",
    "validation_run_create",
    "validation_run_execute",
]
