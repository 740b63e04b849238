"""Numbers and labels as the calculator's texts print them: pure, no Django.

Every user-facing string goes through ``_()`` from ``core.i18n_hook``; numbers are
formatted here and passed in as named placeholders.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from core.i18n_hook import _, gettext_noop

GB = 1e9  # the paper's and the seeds' gigabyte (10^9 bytes): the rule of thumb, ZeRO Fig. 1
GIB = float(2**30)  # memory per GPU is in GiB, as the cards have it ("80G" is 80 GiB)
BILLION = 1e9


FABRIC_LABELS: dict[str, str] = {
    "ib_ndr": gettext_noop("InfiniBand NDR 400G"),
    "ib_hdr": gettext_noop("InfiniBand HDR 200G"),
    "roce_v2": gettext_noop("RoCE v2"),
    "ethernet": gettext_noop("Ethernet"),
}
INTRA_LABELS: dict[str, str] = {
    "nvswitch": gettext_noop("NVLink with NVSwitch"),
    "nvlink": gettext_noop("NVLink"),
    "pcie": gettext_noop("PCIe only"),
}
OPTIMIZER_LABELS: dict[str, str] = {
    "adamw": gettext_noop("Adam/AdamW"),
    "sgd": gettext_noop("SGD with momentum"),
    "adafactor": gettext_noop("Adafactor"),
    "adam8bit": gettext_noop("8-bit Adam"),
}

GB_PLACES = Decimal("0.01")


# --- Formatting -------------------------------------------------------------------------


def rounded(value: float, places: int = 2) -> float:
    return round(value + 0.0, places)


def fmt(value: Decimal | int | float, places: Decimal = GB_PLACES) -> str:
    """1225.50 -> "1,225.5"; 490.00 -> "490"."""
    if isinstance(value, float):
        value = Decimal(repr(value))
    q = Decimal(value).quantize(places, rounding=ROUND_HALF_UP).normalize()
    if q == 0:
        q = Decimal(0)
    return format(q, ",f")


def fmt_gb(value: float) -> str:
    """GB or GiB with one decimal under 100, none above: "31.4", "1,129"."""
    return fmt(value, Decimal("0.1") if abs(value) < 100 else Decimal(1))


def fmt_sci(value: float | Decimal) -> str:
    """4.2E+22 -> "4.2 × 10^22"."""
    mantissa, exponent = f"{float(value):.2e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10^{int(exponent)}"


def billions(count: float) -> str:
    return fmt(count / BILLION, Decimal("0.1"))


def percent(fraction: Decimal | float, places: Decimal = GB_PLACES) -> str:
    """0.9 -> "90%"."""
    return _("%(number)s%%") % {"number": fmt(Decimal(str(fraction)) * 100, places)}


def fabric_label(code: str) -> str:
    label = FABRIC_LABELS.get(code)
    return code if label is None else _(label)


def intra_label(code: str) -> str:
    label = INTRA_LABELS.get(code)
    return code if label is None else _(label)


def then(first: str, second: str) -> str:
    # Translators: two sentences one after the other; drop the space where the language
    # does not put one between sentences.
    return _("%(first)s %(second)s") % {"first": first, "second": second}


def percent_range(low: Decimal, high: Decimal) -> str:
    return _("%(low)s–%(high)s%%") % {"low": fmt(low * 100), "high": fmt(high * 100)}


def round_gb(value: Decimal) -> Decimal:
    return value.quantize(GB_PLACES, rounding=ROUND_HALF_UP)
