"""Quote services, split by concern; this package's names are the public API.

- ``common``: locking, the one ``move`` through the lifecycle, discount limits;
- ``pricing``: the adapter to the pure pricing engine (previews, stored lines);
- ``holds``: topology-aware placement and holds;
- ``approvals``: discounts above a salesperson's limit;
- ``lifecycle``: create, edit, revise, send, expire;

The customer's accept, reject and a fresh revision after ``NodesGone`` make or refuse an
order: they are ``billing.orders.acceptance``.
"""

from billing.quotes.services.approvals import (
    quote_approve,
    quote_decline_approval,
    quote_request_approval,
)
from billing.quotes.services.common import (
    DEFAULT_VALIDITY_DAYS,
    ItemSpec,
    NodesGone,
    discount_limit,
)
from billing.quotes.services.holds import (
    Held,
    capacity_shortages,
    nodes_place_and_hold,
    nodes_wanted,
    quote_capacity_shortages,
)
from billing.quotes.services.lifecycle import (
    quote_create,
    quote_expire_due,
    quote_expiry,
    quote_revise,
    quote_send,
    quote_send_refusal,
    quote_update,
)
from billing.quotes.services.pricing import priced_lines_as_rows, quote_items, quote_price_preview

__all__ = [
    "DEFAULT_VALIDITY_DAYS",
    "Held",
    "ItemSpec",
    "NodesGone",
    "capacity_shortages",
    "discount_limit",
    "nodes_place_and_hold",
    "nodes_wanted",
    "priced_lines_as_rows",
    "quote_approve",
    "quote_capacity_shortages",
    "quote_create",
    "quote_decline_approval",
    "quote_expire_due",
    "quote_expiry",
    "quote_items",
    "quote_price_preview",
    "quote_request_approval",
    "quote_revise",
    "quote_send",
    "quote_send_refusal",
    "quote_update",
]
