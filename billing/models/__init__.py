"""Billing's models, one module per concern (Django sees them all as ``billing.*``):
``pricebooks``, ``quotes`` (with sales profiles, seller entities, estimates), ``orders``,
``invoices`` (with invoice lines, credit notes, usage), ``payments`` (with Stripe events,
refunds), ``contracts`` (signatures, the provisioning gate), ``dunning`` (suspensions,
renewals) and ``sla`` (SLA credits)."""

from billing.models.contracts import *  # noqa: F403
from billing.models.dunning import *  # noqa: F403
from billing.models.invoices import *  # noqa: F403
from billing.models.orders import *  # noqa: F403
from billing.models.payments import *  # noqa: F403
from billing.models.pricebooks import *  # noqa: F403
from billing.models.quotes import *  # noqa: F403
from billing.models.sla import *  # noqa: F403
