"""Money in the database: one setting for digits and places of every stored amount.

Amounts are ``Decimal``, never float, with a currency column beside them; the pricing
engine (``billing.pricing.engine``) rounds half-up to the cent once per line (its ``ROUNDING``),
and amounts become minor units only at the Stripe boundary (``billing.stripe_api``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import models


def money_field(verbose_name: Any, **kwargs: Any) -> models.DecimalField:
    """A stored amount with the project's digits and places (``MONEY_*`` settings)."""
    return models.DecimalField(
        verbose_name,
        max_digits=settings.MONEY_MAX_DIGITS,
        decimal_places=settings.MONEY_DECIMAL_PLACES,
        **kwargs,
    )


#: The symbol printed before an amount, per currency (others print their code).
CURRENCY_SYMBOLS = {"CNY": "¥", "HKD": "HK$", "USD": "US$"}


def money_text(value: Decimal | str | None, currency: str = "") -> str:
    """``¥1,234,567.00``: two places, thousands separators, the currency's symbol (how
    every page, PDF, email and admin message writes an amount)."""
    if value is None or value == "":
        return ""
    amount = Decimal(value)
    sign = "-" if amount < 0 else ""
    symbol = CURRENCY_SYMBOLS.get(currency, f"{currency} " if currency else "")
    return f"{sign}{symbol}{abs(amount):,.2f}"
