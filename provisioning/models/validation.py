"""Validation runs, rules as data and acceptance reports.

- ``ValidationRule``: one acceptance rule (``provisioning.validation.rules.Rule``) as an
  admin-editable row with its source text; seeded from ``default_rules.DEFAULT_RULES``
  (``validation_rules_seed``).
- ``ValidationRun``: one run of the agent on a set of nodes (quick or acceptance
  profile), with its lifecycle (pending → running → passed | failed; pending →
  cancelled), optionally for an order; ``ValidationNodeResult`` per node (accepted,
  reasons with codes and texts); ``ValidationArtifact`` every raw output and agent
  document with its SHA-256; ``ValidationReport`` the acceptance report PDF per language.
- ``ValidationCheck``: one agent check as it ran, written line by line while the agent
  runs (planned, running, then finished with that check's own verdict and metrics), so
  the staff run page shows each check as it finishes.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.lifecycle import Lifecycle
from core.models import LifecycleEvent, StoredDocument
from inventory.models import Node
from provisioning.validation import rules as pure
from provisioning.validation.seeding import rule_fields

__all__ = [
    "VALIDATION_RUN_TRANSITIONS",
    "LiveCheckStatus",
    "LiveCheckVerdict",
    "NodeValidation",
    "ValidationArtifact",
    "ValidationCheck",
    "ValidationNodeResult",
    "ValidationProfile",
    "ValidationReport",
    "ValidationRule",
    "ValidationRun",
    "ValidationRunEvent",
    "ValidationRunStatus",
    "ValidationScope",
    "ValidationTrigger",
]


class ValidationProfile(models.TextChoices):
    QUICK = "quick", _("quick health check")
    ACCEPTANCE = "acceptance", _("acceptance")
    BURN_IN = "burn_in", _("acceptance and 24-hour burn-in")


class ValidationScope(models.TextChoices):
    NODE = "node", _("per node")
    CLUSTER = "cluster", _("per cluster")


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def _equals(text: str) -> float | int | str | None:
    text = text.strip()
    if not text:
        return None
    if text == pure.BASELINE:
        return pure.BASELINE
    try:
        number = Decimal(text)
    except ArithmeticError:
        return text
    return int(number) if number == number.to_integral_value() else float(number)


class ValidationRule(models.Model):
    """An acceptance rule as data (SuperBench style): metric, GPU model, baseline,
    criterion, with its source. Exactly one criterion kind: ``min_variance`` on
    ``(measured − baseline)/baseline``, or ``min_value``/``max_value``, or ``equals``."""

    metric = models.CharField(_("metric"), max_length=64)
    gpu_model = models.CharField(
        _("GPU model"),
        max_length=32,
        help_text=_("A model key (H100, H200, A100-80G, …), “*” for any GPU, or “cpu”."),
    )
    fabric = models.CharField(
        _("fabric"), max_length=16, blank=True, help_text=_("Only on this fabric (ndr400 …).")
    )
    scope = models.CharField(
        _("scope"), max_length=8, choices=ValidationScope.choices, default=ValidationScope.NODE
    )
    check_name = models.CharField(
        _("agent check"), max_length=32, blank=True, help_text=_("The check that measures it.")
    )
    message_size_bytes = models.BigIntegerField(_("message size (bytes)"), null=True, blank=True)
    gpu_count = models.PositiveSmallIntegerField(
        _("GPUs per node"),
        null=True,
        blank=True,
        help_text=_("Only for nodes with this many GPUs (empty: any)."),
    )
    unit = models.CharField(_("unit"), max_length=16, blank=True)
    baseline = models.DecimalField(
        _("baseline"), max_digits=16, decimal_places=4, null=True, blank=True
    )
    baseline_from = models.CharField(
        _("baseline from"),
        max_length=64,
        blank=True,
        help_text=_("Take the baseline from the node's expected figures (e.g. gpu_count)."),
    )
    baseline_multiplier_from = models.CharField(
        _("baseline multiplied by"), max_length=64, blank=True
    )
    min_variance = models.DecimalField(
        _("minimum variance"), max_digits=8, decimal_places=4, null=True, blank=True
    )
    min_value = models.DecimalField(
        _("minimum"), max_digits=16, decimal_places=4, null=True, blank=True
    )
    min_inclusive = models.BooleanField(_("minimum included"), default=True)
    max_value = models.DecimalField(
        _("maximum"), max_digits=16, decimal_places=4, null=True, blank=True
    )
    equals = models.CharField(_("equals"), max_length=32, blank=True)
    max_below_median = models.DecimalField(
        _("max. below node median"), max_digits=6, decimal_places=4, null=True, blank=True
    )
    required = models.BooleanField(_("required"), default=True)
    active = models.BooleanField(_("active"), default=True)
    source = models.TextField(_("source"))
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering = ["scope", "gpu_model", "metric", "fabric", "pk"]
        verbose_name = _("validation rule")
        verbose_name_plural = _("validation rules")
        indexes = [models.Index(fields=["active", "gpu_model"], name="validation_rule_idx")]

    def __str__(self) -> str:
        return f"{self.gpu_model} {self.key}" + (f" ({self.fabric})" if self.fabric else "")

    @property
    def key(self) -> str:
        return pure.metric_key(self.metric, self.message_size_bytes)

    def as_rule(self) -> pure.Rule:
        """The pure rule the evaluation uses (raises ``ValueError`` when inconsistent)."""
        return pure.Rule(
            metric=self.metric,
            gpu_model=self.gpu_model,
            source=self.source,
            baseline=self.baseline,
            min_variance=_float(self.min_variance),
            min_value=_float(self.min_value),
            max_value=_float(self.max_value),
            equals=_equals(self.equals),
            min_inclusive=self.min_inclusive,
            fabric=self.fabric or None,
            message_size_bytes=self.message_size_bytes,
            required=self.required,
            check=self.check_name or None,
            scope=self.scope,  # type: ignore[arg-type]
            unit=self.unit,
            baseline_from=self.baseline_from or None,
            baseline_multiplier_from=self.baseline_multiplier_from or None,
            max_below_median=_float(self.max_below_median),
            gpu_count=self.gpu_count,
        )

    @classmethod
    def fields_from_rule(cls, rule: pure.Rule) -> dict[str, Any]:
        return rule_fields(rule)

    def clean(self) -> None:
        try:
            self.as_rule()
        except (ValueError, TypeError) as exc:
            raise ValidationError(
                gettext("This rule is inconsistent: %(error)s") % {"error": exc}
            ) from exc


class ValidationRunStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    RUNNING = "running", _("running")
    PASSED = "passed", _("passed")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


VALIDATION_RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    ValidationRunStatus.PENDING: frozenset(
        {ValidationRunStatus.RUNNING, ValidationRunStatus.CANCELLED, ValidationRunStatus.FAILED}
    ),
    ValidationRunStatus.RUNNING: frozenset(
        {ValidationRunStatus.PASSED, ValidationRunStatus.FAILED}
    ),
    ValidationRunStatus.PASSED: frozenset(),
    ValidationRunStatus.FAILED: frozenset(),
    ValidationRunStatus.CANCELLED: frozenset(),
}

FINISHED_RUN_STATUSES = (ValidationRunStatus.PASSED, ValidationRunStatus.FAILED)


class ValidationTrigger(models.TextChoices):
    PROVISIONING = "provisioning", _("provisioning run")
    STAFF = "staff", _("staff re-check")
    IDLE_SWEEP = "idle_sweep", _("idle-node sweep")
    HEALTH = "health", _("health rule")


class ValidationRun(models.Model):
    """The agent run on a set of nodes and the verdict."""

    profile = models.CharField(
        _("profile"), max_length=12, choices=ValidationProfile.choices, default="acceptance"
    )
    trigger = models.CharField(
        _("started by"), max_length=16, choices=ValidationTrigger.choices, default="staff"
    )
    order = models.ForeignKey(
        "billing.Order",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="validation_runs",
        verbose_name=_("order"),
    )
    nodes = models.ManyToManyField(
        "inventory.Node", related_name="validation_runs", verbose_name=_("nodes")
    )
    status = models.CharField(
        _("status"),
        max_length=12,
        choices=ValidationRunStatus.choices,
        default=ValidationRunStatus.PENDING,
    )
    status_changed_at = models.DateTimeField(_("status changed"), auto_now_add=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("requested by"),
    )
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    cluster_accepted = models.BooleanField(_("cluster accepted"), null=True, blank=True)
    cluster_reasons = models.JSONField(_("cluster reasons"), default=list, blank=True)
    cluster_verdict = models.JSONField(_("cluster verdict"), default=dict, blank=True)
    cluster_metrics = models.JSONField(_("cluster measurement"), default=dict, blank=True)
    rules_snapshot = models.JSONField(_("rules applied"), default=list, blank=True)
    error = models.TextField(_("error"), blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    lifecycle = Lifecycle(
        choices=ValidationRunStatus,
        transitions=VALIDATION_RUN_TRANSITIONS,
        event_model="provisioning.ValidationRunEvent",
        subject_field="run",
        describe=lambda run: gettext("Validation run %(id)s") % {"id": run.pk},
        changed_at_field="status_changed_at",
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("validation run")
        verbose_name_plural = _("validation runs")
        indexes = [models.Index(fields=["status", "trigger"], name="validation_run_status_idx")]

    def __str__(self) -> str:
        return gettext("Validation run %(id)s") % {"id": self.pk}

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_RUN_STATUSES


class ValidationRunEvent(LifecycleEvent):
    run = models.ForeignKey(
        ValidationRun, on_delete=models.CASCADE, related_name="events", verbose_name=_("run")
    )

    class Meta(LifecycleEvent.Meta):
        verbose_name = _("validation run event")
        verbose_name_plural = _("validation run events")


class ValidationNodeResult(models.Model):
    """One node's verdict in a run: accepted or not, with every reason (code and text)."""

    run = models.ForeignKey(
        ValidationRun, on_delete=models.CASCADE, related_name="results", verbose_name=_("run")
    )
    node = models.ForeignKey(
        "inventory.Node",
        on_delete=models.PROTECT,
        related_name="validation_results",
        verbose_name=_("node"),
    )
    hostname = models.CharField(_("hostname"), max_length=100)
    gpu_model = models.CharField(_("GPU model judged"), max_length=64)
    device = models.CharField(_("device"), max_length=16, blank=True)
    accepted = models.BooleanField(_("accepted"))
    reasons = models.JSONField(_("reasons"), default=list, blank=True)
    notes = models.JSONField(_("notes"), default=list, blank=True)
    rule_results = models.JSONField(_("rule results"), default=list, blank=True)
    report = models.JSONField(_("agent document"), default=dict, blank=True)
    report_sha256 = models.CharField(_("document SHA-256"), max_length=64, blank=True)
    created_at = models.DateTimeField(_("recorded"), auto_now_add=True)

    class Meta:
        ordering = ["run", "hostname"]
        verbose_name = _("node result")
        verbose_name_plural = _("node results")
        constraints = [
            models.UniqueConstraint(fields=["run", "node"], name="validation_result_unique")
        ]

    def __str__(self) -> str:
        return f"{self.hostname}: {'accepted' if self.accepted else 'rejected'}"

    @property
    def reason_texts(self) -> list[str]:
        return [str(r.get("text", r)) if isinstance(r, dict) else str(r) for r in self.reasons]


class ValidationArtifact(models.Model):
    """A raw output (one check's text, the agent's whole document, the cluster
    measurement), kept as it was with its SHA-256."""

    run = models.ForeignKey(
        ValidationRun, on_delete=models.CASCADE, related_name="artifacts", verbose_name=_("run")
    )
    node = models.ForeignKey(
        "inventory.Node",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="validation_artifacts",
        verbose_name=_("node"),
    )
    check_name = models.CharField(_("check"), max_length=48)
    status = models.CharField(_("check status"), max_length=16, blank=True)
    raw_format = models.CharField(_("format"), max_length=32, blank=True)
    content = models.TextField(_("raw output"), blank=True)
    sha256 = models.CharField(_("SHA-256"), max_length=64)
    size = models.PositiveIntegerField(_("bytes"))
    created_at = models.DateTimeField(_("recorded"), auto_now_add=True)

    class Meta:
        ordering = ["run", "node_id", "pk"]
        verbose_name = _("raw output")
        verbose_name_plural = _("raw outputs")

    def __str__(self) -> str:
        return f"{self.check_name} {self.sha256[:12]}"


class LiveCheckStatus(models.TextChoices):
    PLANNED = "planned", _("waiting")
    RUNNING = "running", _("running")
    COMPLETED = "completed", _("completed")
    FAILED = "failed", _("failed")
    SKIPPED = "skipped", _("skipped")
    UNFINISHED = "unfinished", _("did not finish")


class LiveCheckVerdict(models.TextChoices):
    PENDING = "", _("not yet")
    PASSED = "passed", _("passed")
    FAILED = "failed", _("failed")
    NOT_JUDGED = "not_judged", _("no rule reads it")


class ValidationCheck(models.Model):
    """One agent check on one node as the agent reported it while running: for the
    validate step of a provisioning run (``step`` and its ``attempt``) or for a
    stand-alone validation run (``validation_run``). The node's verdict is the run's
    (``ValidationNodeResult``); the verdict here is this check's share of it, shown as
    soon as the check finished."""

    step = models.ForeignKey(
        "provisioning.NodeStep",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="live_checks",
        verbose_name=_("validate step"),
    )
    attempt = models.PositiveSmallIntegerField(_("attempt"), default=0)
    validation_run = models.ForeignKey(
        ValidationRun,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="live_checks",
        verbose_name=_("validation run"),
    )
    node = models.ForeignKey(
        "inventory.Node",
        on_delete=models.CASCADE,
        related_name="validation_checks",
        verbose_name=_("node"),
    )
    name = models.CharField(_("check"), max_length=48)
    position = models.PositiveSmallIntegerField(_("order"), default=0)
    status = models.CharField(
        _("status"),
        max_length=12,
        choices=LiveCheckStatus.choices,
        default=LiveCheckStatus.PLANNED,
    )
    verdict = models.CharField(
        _("verdict"), max_length=12, choices=LiveCheckVerdict.choices, blank=True
    )
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    duration_s = models.DecimalField(
        _("duration (s)"), max_digits=10, decimal_places=3, null=True, blank=True
    )
    raw_sha256 = models.CharField(_("raw output SHA-256"), max_length=64, blank=True)
    metrics = models.JSONField(_("metrics"), default=dict, blank=True)
    reasons = models.JSONField(_("reasons"), default=list, blank=True)

    class Meta:
        ordering = ["node_id", "position", "pk"]
        verbose_name = _("live check")
        verbose_name_plural = _("live checks")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(step__isnull=False) | models.Q(validation_run__isnull=False),
                name="validation_check_has_owner",
            ),
            models.UniqueConstraint(
                fields=["step", "attempt", "name"],
                condition=models.Q(step__isnull=False),
                name="validation_check_step_unique",
            ),
            models.UniqueConstraint(
                fields=["validation_run", "node", "name"],
                condition=models.Q(validation_run__isnull=False),
                name="validation_check_run_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}: {self.status} {self.verdict}".strip()


class ValidationReport(StoredDocument):
    """The acceptance report PDF of a run, stored once per language with its SHA-256."""

    run = models.ForeignKey(
        ValidationRun, on_delete=models.CASCADE, related_name="reports", verbose_name=_("run")
    )
    file = models.FileField(upload_to="acceptance/%Y/", verbose_name=_("file"))

    class Meta:
        verbose_name = _("acceptance report")
        verbose_name_plural = _("acceptance reports")
        constraints = [
            models.UniqueConstraint(fields=["run", "language"], name="validation_report_unique")
        ]

    def __str__(self) -> str:
        return f"{self.run} [{self.language}] {self.sha256[:12]}"


class NodeValidation(Node):
    """The inventory's nodes as the validation admin shows them (a proxy: no table), with
    the staff action that re-runs validation."""

    class Meta:
        proxy = True
        verbose_name = _("node validation")
        verbose_name_plural = _("node validation")
