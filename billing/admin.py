"""Billing's admin: each domain registers its own (Django's autodiscovery imports
``billing.admin``)."""

from billing.contracts import admin as contracts_admin  # noqa: F401
from billing.credits import admin as credits_admin  # noqa: F401
from billing.dunning import admin as dunning_admin  # noqa: F401
from billing.invoicing import admin as invoicing_admin  # noqa: F401
from billing.orders import admin as orders_admin  # noqa: F401
from billing.payments import admin as payments_admin  # noqa: F401
from billing.pricing import admin as pricing_admin  # noqa: F401
from billing.quotes import admin as quotes_admin  # noqa: F401
