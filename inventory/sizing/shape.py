"""The model as sized: a known architecture's published shape, or one estimated from
the parameter count, and the seeds' size band.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from core.i18n_hook import _
from inventory.sizing.architectures import ARCHITECTURES, Architecture
from inventory.sizing.formatting import BILLION, billions, fmt
from inventory.sizing.inputs import SizingInput

Band = Literal["<30B", "30-70B", "70-100B", ">=100B"]


DEFAULT_VOCAB = 128_256  # estimated vocabulary for a custom shape (Llama-3's)


BAND_30B = Decimal("30")
BAND_70B = Decimal("70")
BAND_100B = Decimal("100")


@dataclass(frozen=True)
class Shape:
    """The model as sized: parameters (total for memory, active for compute) and shape."""

    name: str
    arch: str
    params_total: float
    params_active: float
    expert_params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    experts: int
    experts_active: int
    kv_elems: int
    estimated: bool  # shape estimated from the parameter count

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def total_billions(self) -> str:
        return billions(self.params_total)

    @property
    def active_billions(self) -> str:
        return billions(self.params_active)

    @property
    def dense_params(self) -> float:
        return self.params_total - self.expert_params


# --- The model's shape ------------------------------------------------------------------


def shape_of(inp: SizingInput) -> Shape:
    """The architecture's published shape, or one estimated from the parameter count
    (P ≈ 12·L·h², h ≈ 128·L, 128-wide heads, no grouped-query attention), with whatever
    the customer entered taking precedence."""
    if inp.arch:
        a: Architecture = ARCHITECTURES[inp.arch]
        return Shape(
            name=a.name,
            arch=a.code,
            params_total=a.params_total,
            params_active=a.params_active,
            expert_params=a.expert_params,
            layers=a.layers,
            hidden=a.hidden,
            heads=a.heads,
            kv_heads=a.kv_heads,
            head_dim=a.head_dim,
            ffn=a.ffn,
            vocab=a.vocab,
            experts=a.experts,
            experts_active=a.experts_active,
            kv_elems=a.kv_elems,
            estimated=False,
        )
    params = float(inp.params_billion or 0) * BILLION
    layers_est = max(2, round((params / (12 * 128 * 128)) ** (1 / 3)))
    layers = inp.layers or layers_est
    # Hidden sizes come in multiples of 1,024 (of 128 under that), so that 128-wide heads
    # divide by the usual tensor-parallel degrees.
    raw_hidden = math.sqrt(params / (12 * layers))
    step = 1024 if raw_hidden >= 1024 else 128
    hidden = inp.hidden or max(128, step * round(raw_hidden / step))
    heads = inp.heads or max(1, hidden // 128)
    kv_heads = inp.kv_heads or heads
    head_dim = max(1, hidden // heads)
    experts = inp.experts or 0
    experts_active = inp.experts_active or (min(2, experts) if experts else 0)
    active = float(inp.active_params_billion) * BILLION if inp.active_params_billion else params
    expert_params = 0.0
    if experts > 1 and experts > experts_active and active < params:
        expert_params = (params - active) / (experts - experts_active) * experts
    return Shape(
        name=_("%(size)s B-parameter model") % {"size": fmt(inp.params_billion or 0)},
        arch="",
        params_total=params,
        params_active=active,
        expert_params=min(expert_params, params),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn=4 * hidden,
        vocab=DEFAULT_VOCAB,
        experts=experts if experts > 1 else 0,
        experts_active=experts_active if experts > 1 else 0,
        kv_elems=2 * kv_heads * head_dim,
        estimated=not (inp.layers and inp.hidden and inp.heads),
    )


def size_band(params_billion: Decimal) -> Band:
    """The seeds' bands: < 30B, 30–70B (70 included), 70–100B (ours), ≥ 100B."""
    if params_billion < BAND_30B:
        return "<30B"
    if params_billion <= BAND_70B:
        return "30-70B"
    if params_billion < BAND_100B:
        return "70-100B"
    return ">=100B"


def band_of(shape: Shape) -> Band:
    return size_band(Decimal(repr(shape.params_total / BILLION)))
