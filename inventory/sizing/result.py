"""The entry points: ``size()`` searches every node type, ``evaluate()`` checks one
layout; both answer a ``SizingResult``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from core.i18n_hook import _
from inventory.sizing.advice import (
    fabric_advice,
    frameworks_text,
    parallelism_text,
    reason_if_none_text,
    what_would_fit_text,
    zero_note,
)
from inventory.sizing.explain import (
    Note,
    RuleOfThumb,
    compute_notes,
    memory_notes,
    rule_comparison_text,
    rule_of_thumb,
)
from inventory.sizing.hardware import NodeOption
from inventory.sizing.inputs import SizingError, SizingInput, validate
from inventory.sizing.plans import OptionOutcome, Plan, plan_layout, search_option
from inventory.sizing.shape import Band, Shape, band_label, band_of, band_rule, shape_of


@dataclass
class SizingResult:
    """The wizard's answer. ``plans`` holds every node type's smallest plan that runs,
    cheapest first; ``cheapest`` and ``fastest`` point into it (None when empty)."""

    input: SizingInput
    shape: Shape
    band: Band
    rule: RuleOfThumb | None
    rule_comparison: str
    memory_lines: list[Note]
    compute_lines: list[Note]
    plans: list[Plan]
    cheapest: Plan | None
    fastest: Plan | None
    outcomes: list[OptionOutcome]
    reason_if_none: str
    what_would_fit: str
    parallelism: str
    frameworks: str
    fabric: str
    topology: str
    notes: list[Note] = field(default_factory=list)

    @property
    def band_label(self) -> str:
        return band_label(self.band)

    @property
    def recommended(self) -> NodeOption | None:
        return self.cheapest.option if self.cheapest else None

    @property
    def node_count(self) -> int:
        return self.cheapest.nodes if self.cheapest else 0

    @property
    def gpu_count(self) -> int:
        return self.cheapest.gpus if self.cheapest else 0

    @property
    def monthly_total(self) -> Decimal | None:
        return self.cheapest.monthly_total if self.cheapest else None

    @property
    def fastest_differs(self) -> bool:
        return (
            self.fastest is not None
            and self.cheapest is not None
            and (self.fastest.option.code, self.fastest.gpus)
            != (self.cheapest.option.code, self.cheapest.gpus)
        )

    @property
    def note_lines(self) -> list[str]:
        return [str(n) for n in self.notes]


def size(inp: SizingInput, options: Sequence[NodeOption]) -> SizingResult:
    """Search every node type for its smallest plan that runs; raise SizingError for bad
    input. A result without any plan is not an error: ``reason_if_none`` and
    ``what_would_fit`` say why and what would."""
    inp = validate(inp)
    shape = shape_of(inp)
    band = band_of(shape)
    outcomes = [search_option(inp, shape, band, option) for option in options]
    plans = [o.plan for o in outcomes if o.plan is not None]
    plans.sort(key=_cheapest_key)
    cheapest = plans[0] if plans else None
    fastest = min(plans, key=_fastest_key) if plans else None
    return _result(inp, shape, band, plans, cheapest, fastest, outcomes, options)


def evaluate(
    inp: SizingInput,
    option: NodeOption,
    *,
    gpus: int,
    tp: int = 1,
    pp: int = 1,
    ep: int | None = None,
) -> SizingResult:
    """Evaluate one layout (``gpus`` GPUs of ``option``, TP × PP) instead of searching:
    its plan comes back in ``plans`` with ``fits`` true or false."""
    inp = validate(inp)
    if gpus < 1 or tp < 1 or pp < 1:
        raise SizingError("gpus", _("GPUs, TP and PP must be at least 1."))
    shape = shape_of(inp)
    band = band_of(shape)
    plan = plan_layout(inp, shape, band, option, gpus=gpus, tp=tp, pp=pp, ep=ep)
    fits = plan if plan.fits else None
    outcome = OptionOutcome(option, fits, plan.problems)
    result = _result(inp, shape, band, [plan], fits, fits, [outcome], [option], search=False)
    return result


def _cheapest_key(plan: Plan) -> tuple[int, Decimal, int, str]:
    if plan.monthly_total is None:
        return (1, Decimal(0), plan.nodes, plan.option.code)
    return (0, plan.monthly_total, plan.nodes, plan.option.code)


def _fastest_key(plan: Plan) -> tuple[float, Decimal, str]:
    if plan.train_days is not None:
        speed = plan.train_days
    elif plan.tokens_per_s is not None:
        speed = -plan.tokens_per_s
    else:
        speed = -plan.gpus * plan.sustained_tflops
    price = plan.monthly_total if plan.monthly_total is not None else Decimal("Infinity")
    return (speed, price, plan.option.code)


def _result(
    inp: SizingInput,
    shape: Shape,
    band: Band,
    plans: list[Plan],
    cheapest: Plan | None,
    fastest: Plan | None,
    outcomes: list[OptionOutcome],
    options: Sequence[NodeOption],
    *,
    search: bool = True,
) -> SizingResult:
    rule = rule_of_thumb(inp, shape) if inp.mode == "train" else None
    shown = cheapest or (plans[0] if plans else None)
    if rule is not None:
        comparison = rule_comparison_text(inp, shape, rule, cheapest)
    else:
        comparison = _(
            "The common rule of thumb (parameters × bytes × 3.5) is for training; for serving "
            "the memory is the weights plus the KV cache, which grows with context and "
            "concurrent sequences."
        )
    fabric, topology = fabric_advice(band, cheapest)
    reason = what = ""
    if cheapest is None:
        reason = reason_if_none_text(shape, outcomes)
        what = what_would_fit_text(inp, shape, options) if search else ""
    notes: list[Note] = []
    if cheapest is not None:
        notes.append(Note(cheapest.band_rule, "seeds"))
        not_zero = zero_note(cheapest, inp.zero_stage if inp.mode == "train" else 0)
        if not_zero:
            notes.append(Note(not_zero, "paper"))
        if band_rule(band) == "3d_parallel" and inp.mode == "train" and inp.zero_stage != 3:
            notes.append(
                Note(
                    _(
                        "At 100B+ the usual practice pairs 3D parallelism with ZeRO stage 3 "
                        "and a fast inter-node network to get past the memory wall."
                    ),
                    "seeds",
                )
            )
    return SizingResult(
        input=inp,
        shape=shape,
        band=band,
        rule=rule,
        rule_comparison=comparison,
        memory_lines=memory_notes(inp, shape, shown),
        compute_lines=compute_notes(inp, shape, shown),
        plans=plans,
        cheapest=cheapest,
        fastest=fastest,
        outcomes=outcomes,
        reason_if_none=reason,
        what_would_fit=what,
        parallelism=parallelism_text(band, cheapest, inp.mode),
        frameworks=frameworks_text(cheapest),
        fabric=fabric,
        topology=topology,
        notes=notes,
    )


# --- JSON -----------------------------------------------------------------------------------
