"""The customer's dashboard, under ``/<lang>/account/``: orders, quotes, invoices, members,
billing details; one order's timeline, booked nodes, documents, contract, suspension and
renewal.

Every view is behind ``customer_required`` and reads through ``portal.dashboard.selectors``
with ``request.organisation``: another organisation's order, invoice or document answers
404, exactly like one that does not exist.
"""
