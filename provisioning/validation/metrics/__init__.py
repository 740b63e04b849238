"""The one path from the agent's raw outputs to the metrics the rules read (pure: no
Django). ``derive(document, gpu_model=…, expected=…)`` parses each check's raw output with
the parsers in ``parsers/`` and returns a ``rules.Measurement``: the metrics, each check's
outcome (a damaged output is a ``parse_error``), and the problems the outputs showed
(XID 79, every NVLink inactive, ``-nan`` from nccl-tests, an unfinished agent …), each with
its own reason code.

:data:`METRICS` is the table of every metric: unit, the check that produces it, and
whether it is informational (shown in the report, read by no rule). ``table_problems``
says where the table, the rules and this module disagree (a test and ``make test`` keep
it empty; the README prints the table: ``metric_table_markdown``).

One module per concern: ``table`` (the metric table), ``collect`` (what derivation
collects), ``health``, ``performance``, ``fabric`` (each check's raw output → metrics),
``derive`` (the document → the measurement).
"""

from provisioning.validation.metrics.derive import derive
from provisioning.validation.metrics.table import (
    CLUSTER_INFORMATIONAL,
    METRICS,
    MetricSpec,
    metric_table_markdown,
    table_problems,
)

__all__ = [
    "CLUSTER_INFORMATIONAL",
    "METRICS",
    "MetricSpec",
    "derive",
    "metric_table_markdown",
    "table_problems",
]
