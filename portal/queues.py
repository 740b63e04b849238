"""Celery queue names, in one place.

Every task is routed by the module it lives in (see ``TASK_ROUTES``); a worker that
should only provision runs ``celery -A portal worker -Q provisioning``.
"""

DEFAULT = "default"
PROVISIONING = "provisioning"
VALIDATION = "validation"
DOCUMENTS = "documents"
BILLING = "billing"

ALL = (DEFAULT, PROVISIONING, VALIDATION, DOCUMENTS, BILLING)

# Task name pattern -> queue. Order matters: the first match wins.
TASK_ROUTES = {
    "provisioning.tasks.*": {"queue": PROVISIONING},
    "provisioning.validation.tasks.document_*": {"queue": DOCUMENTS},
    "provisioning.validation.tasks.*": {"queue": VALIDATION},
    "billing.tasks.document_*": {"queue": DOCUMENTS},
    "billing.tasks.*": {"queue": BILLING},
    "inventory.tasks.*": {"queue": DEFAULT},
    "portal.tasks.*": {"queue": DEFAULT},
}
