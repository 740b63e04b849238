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

# What a band's size asks of the cluster: one node and data parallel; tensor + data
# parallel over NVLink with >= 200 Gb/s between nodes; or the 3D-parallel recipe.
BandRule = Literal["data_parallel", "tensor_data_parallel", "3d_parallel"]


@dataclass(frozen=True)
class SizeBand:
    """One size band: the one source of its boundaries, its name and its rule.

    DESIGN names three bands: under 30B; 30-70B; 100B and up. Between 70B and 100B
    (Llama 3 70B's 70.6B, Qwen2 72B's 72.7B) is a band of its own here so that the page
    names the model's size as it is, but it follows the 30-70B rule (NVLink inside the
    node, >= 200 Gb/s between nodes, tensor + data parallel): the 100B-and-up recipe
    (400 Gb/s InfiniBand, 3D parallel) begins at 100B.
    """

    code: Band
    upper: Decimal | None  # None: no upper bound
    upper_included: bool
    rule: BandRule

    def holds(self, params_billion: Decimal) -> bool:
        if self.upper is None:
            return True
        if self.upper_included:
            return params_billion <= self.upper
        return params_billion < self.upper

    @property
    def label(self) -> str:
        return {
            "<30B": _("under 30B"),
            "30-70B": _("30–70B"),
            "70-100B": _("70–100B (the 30–70B rule applies)"),
            ">=100B": _("100B and up"),
        }[self.code]


SIZE_BANDS: tuple[SizeBand, ...] = (
    SizeBand("<30B", BAND_30B, False, "data_parallel"),
    SizeBand("30-70B", BAND_70B, True, "tensor_data_parallel"),  # 70 included
    SizeBand("70-100B", BAND_100B, False, "tensor_data_parallel"),
    SizeBand(">=100B", None, False, "3d_parallel"),
)
BANDS_BY_CODE: dict[str, SizeBand] = {b.code: b for b in SIZE_BANDS}


def band_rule(band: Band) -> BandRule:
    """The rule a band follows (``SIZE_BANDS``)."""
    return BANDS_BY_CODE[band].rule


def band_label(band: Band) -> str:
    """The band as the page names it, translated."""
    return BANDS_BY_CODE[band].label


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
    """The band of a parameter count in billions (``SIZE_BANDS``)."""
    return next(b.code for b in SIZE_BANDS if b.holds(params_billion))


def band_of(shape: Shape) -> Band:
    return size_band(Decimal(repr(shape.params_total / BILLION)))
