"""Billing's Celery tasks, one module per domain. Importing this package registers them
all (Celery's autodiscovery imports ``billing.tasks``).

Tasks are thin: take ids, re-fetch, return early if already done, call a service. Each
declares its queue (``core.queues.CeleryQueue``) on its decorator and keeps the
registered name the outbox and the beat table store (``billing.tasks.<name>``), whatever
module it lives in. Services enqueue by that name through ``core.jobs``, never import
a task.
"""

from billing.tasks import (  # noqa: F401
    contracts,
    documents,
    dunning,
    invoicing,
    orders,
    payments,
    pricing,
    quotes,
    shop,
)
