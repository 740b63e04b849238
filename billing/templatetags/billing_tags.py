"""Template helpers for money and priced lines, in the active language."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing.documents import common as document_common
from billing.pricing import engine as pricing
from core.money import money_text

register = template.Library()


@register.filter
def money(value: Decimal | str | None, currency: str = "") -> str:
    """``¥1,234,567.00``: two places, thousands separators, the currency's symbol
    (``core.money.money_text``)."""
    return money_text(value, currency)


@register.filter
def percent(value: Decimal | str | None) -> str:
    if value is None or value == "":
        return ""
    return f"{Decimal(value) * 100:.2f}".rstrip("0").rstrip(".") + "%"


@register.filter
def localized(obj: Any) -> str:
    """The object's name (or a line's description) in the active language."""
    if hasattr(obj, "localized_description"):
        return obj.localized_description()
    if hasattr(obj, "localized_name"):
        return obj.localized_name()
    return str(obj)


COUNTED_UNITS = ("node", "GPU", "card", "tb_month", "tb", "ip_month")


@register.filter
def line_quantity(line: Any) -> str:
    """ "1 node", "16 nodes", "2 IP addresses" (ngettext, as the PDFs say it)."""
    if line.unit in COUNTED_UNITS:
        return document_common.quantity_text(Decimal(line.quantity), line.unit)
    shown = f"{Decimal(line.quantity).normalize():f}"
    return shown if line.unit == "month" else f"{shown} {unit_label(line.unit)}"


@register.filter
def line_periods(line: Any) -> str:
    """ "1 month", "12 months", "30 days"; "—" for one-off lines."""
    return document_common.periods_text(Decimal(line.periods), line.period_unit)


@register.filter
def gpu_count(n: int) -> str:
    """``1 GPU``, ``24 GPUs``."""
    n = int(n or 0)
    return ngettext("%(n)s GPU", "%(n)s GPUs", n) % {"n": n}


@register.filter
def localized_key(data: dict[str, Any], key: str) -> Any:
    """``data[key + "_zh"]`` on a Chinese page when it is set, else ``data[key]`` (stored
    JSON such as a quote's placement keeps both names)."""
    if (translation.get_language() or "").startswith("zh") and data.get(f"{key}_zh"):
        return data[f"{key}_zh"]
    return data.get(key, "")


UNIT_LABELS = {
    "node": lambda: _("node"),
    "GPU": lambda: _("GPU"),
    "card": lambda: _("card"),
    "tb_month": lambda: _("TB·month"),
    "tb": lambda: _("TB"),
    "ip_month": lambda: _("IP·month"),
    "month": lambda: _("month"),
    "once": lambda: _("once"),
    "each": lambda: _("each"),
    "service": lambda: _("service"),
    "day": lambda: _("day"),
}


@register.filter
def unit_label(unit: str) -> str:
    label = UNIT_LABELS.get(unit)
    return label() if label else unit


@register.filter
def adjustment_label(adj: dict[str, Any]) -> str:
    language = translation.get_language() or "en"
    if language.startswith("zh") and adj.get("label_zh"):
        return adj["label_zh"]
    if adj.get("kind") == "sales":
        return _("Sales discount")
    return adj.get("label", "")


@register.filter
def adjustment_reason(adj: dict[str, Any]) -> str:
    """Why a discount applies, in words, from the engine's kind and parameters."""
    p = adj.get("params", {})
    kind = adj.get("kind")
    if kind == "term":
        share = f"{Decimal(p.get('multiplier', '1')) * 100:.0f}%"
        text = _("pay %(share)s of list for this term") % {"share": share}
        if p.get("capped"):
            text += _(" (a shorter term's rate, so committing longer never costs more)")
        return text
    if kind == "promotion":
        return _("%(free)s of %(quantity)s free, valid %(start)s to %(end)s") % {
            "free": p.get("free"),
            "quantity": p.get("quantity"),
            "start": p.get("valid_from"),
            "end": p.get("valid_until"),
        }
    if kind == "sales":
        return _("extra discount of %(percent)s") % {"percent": p.get("percent", "")}
    return ""


@register.filter
def line_note(line: Any) -> str:
    """A priced line's note in the active language (the engine writes English notes)."""
    return document_common.line_note(line, {}, translation.get_language() or "en")


@register.filter
def per_gpu(per_node_month: Decimal | str | None, gpus: int | None) -> Any:
    """A per-node monthly price per GPU-month and GPU-hour (``None`` without GPUs)."""
    if per_node_month in (None, ""):
        return None
    return pricing.gpu_equivalent(
        amount=Decimal(str(per_node_month)), gpus=int(gpus or 0), months=Decimal(1)
    )


@register.filter
def placement_text(group: dict[str, Any]) -> str:
    """A placement group in words: the one sentence of the pages and the PDFs
    (``billing.documents.common.placement_text``)."""
    return document_common.placement_text(group or {})
