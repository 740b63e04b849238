"""What the customer tells the wizard (``SizingInput``) and its check (``validate``):
every wrong field raises ``SizingError`` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from core.i18n_hook import _
from inventory.sizing.architectures import ARCHITECTURES
from inventory.sizing.formatting import fmt

MODES: tuple[str, ...] = ("train", "infer")
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8")  # training
INFER_PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8", "int8", "int4", "fp32")
OPTIMIZERS: tuple[str, ...] = ("adamw", "sgd", "adafactor", "adam8bit")
ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)
OFFLOADS: tuple[str, ...] = ("none", "cpu", "nvme")
# The KV cache's precision (inference): "auto" keeps the activations' type (bf16/fp16,
# fp32 for an fp32 model), as vLLM and SGLang do unless told ``--kv-cache-dtype fp8``.
KV_PRECISIONS: tuple[str, ...] = ("auto", "fp8")


DEFAULT_MFU = Decimal("0.40")


MAX_PARAMS_BILLION = Decimal("20000")
MAX_TARGET_DAYS = Decimal("3650")
MAX_SEQ = 1_048_576
MAX_BATCH = 4096
MAX_CONCURRENCY = 100_000


class SizingError(ValueError):
    """Input the wizard cannot size; ``field`` names the input field that is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class SizingInput:
    """What the customer tells the wizard. Both targets (tokens and days), or neither."""

    params_billion: Decimal | None = None
    precision: str = "bf16"
    optimizer: str = "adamw"
    zero_stage: int = 0
    target_tokens_billion: Decimal | None = None
    target_days: Decimal | None = None
    mode: str = "train"
    arch: str = ""
    seq_len: int = 4096
    micro_batch: int = 1
    checkpointing: bool = True
    flash_attention: bool = True
    offload: str = "none"
    context: int = 8192
    concurrency: int = 1
    kv_precision: str = "auto"
    mfu: Decimal = DEFAULT_MFU
    # A custom shape (optional; estimated from the size when left empty).
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    active_params_billion: Decimal | None = None
    experts: int | None = None
    experts_active: int | None = None


# --- Validation -------------------------------------------------------------------------


def _not_a_number(field_name: str) -> str:
    if field_name == "params_billion":
        return _("Model size must be a number.")
    if field_name == "target_tokens_billion":
        return _("Target tokens must be a number.")
    if field_name == "target_days":
        return _("Target days must be a number.")
    return _("Enter a number.")


def _not_finite(field_name: str) -> str:
    if field_name == "params_billion":
        return _("Model size must be a finite number.")
    if field_name == "target_tokens_billion":
        return _("Target tokens must be a finite number.")
    if field_name == "target_days":
        return _("Target days must be a finite number.")
    return _("Enter a finite number.")


def _decimal(value: object, field_name: str) -> Decimal:
    if isinstance(value, bool):
        raise SizingError(field_name, _not_a_number(field_name))
    try:
        if isinstance(value, Decimal):
            number = value
        elif isinstance(value, int):
            number = Decimal(value)
        elif isinstance(value, float | str):
            number = Decimal(str(value).strip())
        else:
            raise SizingError(field_name, _not_a_number(field_name))
    except InvalidOperation as exc:
        raise SizingError(field_name, _not_a_number(field_name)) from exc
    if not number.is_finite():
        raise SizingError(field_name, _not_finite(field_name))
    return number


def _whole(value: object, field_name: str, low: int, high: int) -> int:
    number = _decimal(value, field_name)
    if number != number.to_integral_value() or not low <= number <= high:
        raise SizingError(
            field_name,
            _("Enter a whole number from %(low)s to %(high)s.")
            % {"low": fmt(low), "high": fmt(high)},
        )
    return int(number)


def _optional_whole(value: object, field_name: str, low: int, high: int) -> int | None:
    return None if value in (None, "") else _whole(value, field_name, low, high)


def _model_size(inp: SizingInput) -> dict[str, Any]:
    """The architecture, or the model size when no architecture is chosen."""
    arch = (inp.arch or "").strip()
    if arch and arch not in ARCHITECTURES:
        raise SizingError(
            "arch",
            _("Unknown architecture “%(value)s”: choose one of %(choices)s.")
            % {"value": arch, "choices": ", ".join(ARCHITECTURES)},
        )
    params: Decimal | None = None
    if inp.params_billion is not None and inp.params_billion != "":
        params = _decimal(inp.params_billion, "params_billion")
    if not arch:
        if params is None:
            raise SizingError(
                "params_billion", _("Give the model size, or choose a known architecture.")
            )
        if params <= 0:
            raise SizingError(
                "params_billion", _("Model size must be more than 0 billion parameters.")
            )
        if params > MAX_PARAMS_BILLION:
            raise SizingError(
                "params_billion",
                _(
                    "Model size must be at most %(max)s billion (20T) parameters; "
                    "%(size)s billion is beyond what this wizard can size."
                )
                % {"max": fmt(MAX_PARAMS_BILLION), "size": fmt(params)},
            )
    return {"arch": arch, "params_billion": params}


def _method(inp: SizingInput) -> dict[str, Any]:
    """Precision, optimizer, ZeRO stage and offload."""
    choices = PRECISIONS if inp.mode == "train" else INFER_PRECISIONS
    if inp.precision not in choices:
        raise SizingError(
            "precision",
            _("Unknown precision “%(value)s”: choose one of %(choices)s.")
            % {"value": inp.precision, "choices": ", ".join(choices)},
        )
    if inp.optimizer not in OPTIMIZERS:
        raise SizingError(
            "optimizer",
            _("Unknown optimizer “%(value)s”: choose one of %(choices)s.")
            % {"value": inp.optimizer, "choices": ", ".join(OPTIMIZERS)},
        )
    stage = inp.zero_stage
    if isinstance(stage, str) and stage.strip().isdigit():
        stage = int(stage.strip())
    if isinstance(stage, bool) or not isinstance(stage, int) or stage not in ZERO_STAGES:
        raise SizingError("zero_stage", _("ZeRO stage must be 0, 1, 2 or 3."))
    offload = inp.offload or "none"
    if offload not in OFFLOADS:
        raise SizingError(
            "offload",
            _("Unknown offload “%(value)s”: choose one of %(choices)s.")
            % {"value": offload, "choices": ", ".join(OFFLOADS)},
        )
    kv_precision = inp.kv_precision or "auto"
    if kv_precision not in KV_PRECISIONS:
        raise SizingError(
            "kv_precision",
            _("Unknown KV cache precision “%(value)s”: choose one of %(choices)s.")
            % {"value": kv_precision, "choices": ", ".join(KV_PRECISIONS)},
        )
    if inp.mode == "train" and offload != "none" and stage == 0:
        raise SizingError(
            "offload",
            _("Offloading optimizer states needs ZeRO stage 1, 2 or 3 (ZeRO-Offload)."),
        )
    return {"zero_stage": stage, "offload": offload, "kv_precision": kv_precision}


def _run(inp: SizingInput) -> dict[str, Any]:
    """Sequence, micro-batch, context, concurrent sequences and MFU."""
    numbers = {
        "seq_len": _whole(inp.seq_len, "seq_len", 1, MAX_SEQ),
        "micro_batch": _whole(inp.micro_batch, "micro_batch", 1, MAX_BATCH),
        "context": _whole(inp.context, "context", 1, MAX_SEQ),
        "concurrency": _whole(inp.concurrency, "concurrency", 1, MAX_CONCURRENCY),
    }
    mfu = _decimal(inp.mfu, "mfu")
    if not Decimal("0.01") <= mfu <= 1:
        raise SizingError("mfu", _("MFU must be between 0.01 and 1 (1%–100%)."))
    return {**numbers, "mfu": mfu}


def _targets(inp: SizingInput) -> dict[str, Any]:
    """Target tokens and days: both, or neither."""
    tokens = days = None
    if inp.target_tokens_billion not in (None, ""):
        tokens = _decimal(inp.target_tokens_billion, "target_tokens_billion")
        if tokens <= 0:
            raise SizingError(
                "target_tokens_billion", _("Target tokens must be more than 0 billion.")
            )
    if inp.target_days not in (None, ""):
        days = _decimal(inp.target_days, "target_days")
        if days <= 0:
            raise SizingError("target_days", _("Target days must be more than 0."))
        if days > MAX_TARGET_DAYS:
            raise SizingError(
                "target_days",
                _("Target days must be at most %(max)s (ten years).")
                % {"max": fmt(MAX_TARGET_DAYS)},
            )
    if tokens is not None and days is None:
        raise SizingError(
            "target_days",
            _("Give the number of days as well as the target tokens, or leave both empty."),
        )
    if days is not None and tokens is None:
        raise SizingError(
            "target_tokens_billion",
            _("Give the target tokens as well as the number of days, or leave both empty."),
        )
    return {"target_tokens_billion": tokens, "target_days": days}


def _custom_shape(inp: SizingInput, params: Decimal | None) -> dict[str, Any]:
    """The shape the customer entered (all optional): active parameters, experts,
    layers, hidden size, heads and KV heads."""
    active = None
    if inp.active_params_billion not in (None, ""):
        active = _decimal(inp.active_params_billion, "active_params_billion")
        if active <= 0 or (params is not None and active > params):
            raise SizingError(
                "active_params_billion",
                _("Active parameters must be more than 0 and at most the model size."),
            )
    experts = _optional_whole(inp.experts, "experts", 1, 4096)
    experts_active = _optional_whole(inp.experts_active, "experts_active", 1, 4096)
    if experts and experts_active and experts_active > experts:
        raise SizingError("experts_active", _("Active experts cannot be more than the experts."))
    layers = _optional_whole(inp.layers, "layers", 1, 1000)
    hidden = _optional_whole(inp.hidden, "hidden", 64, 262_144)
    heads = _optional_whole(inp.heads, "heads", 1, 4096)
    kv_heads = _optional_whole(inp.kv_heads, "kv_heads", 1, 4096)
    if heads and kv_heads and (kv_heads > heads or heads % kv_heads):
        raise SizingError(
            "kv_heads", _("KV heads must divide the attention heads (grouped-query attention).")
        )
    if hidden and heads and hidden % heads:
        raise SizingError("heads", _("The hidden size must be a multiple of the heads."))
    return {
        "active_params_billion": active,
        "experts": experts,
        "experts_active": experts_active,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
    }


def validate(inp: SizingInput) -> SizingInput:
    """Check the input and return it with numbers normalised; raise SizingError.

    The checks run in the order of the form (the first wrong field is the one named)."""
    if inp.mode not in MODES:
        raise SizingError("mode", _("Choose training or inference."))
    model = _model_size(inp)
    method = _method(inp)
    run = _run(inp)
    targets = _targets(inp)
    shape = _custom_shape(inp, model["params_billion"])
    return replace(
        inp,
        **model,
        **method,
        **run,
        **targets,
        **shape,
        checkpointing=bool(inp.checkpointing),
        flash_attention=bool(inp.flash_attention),
    )
