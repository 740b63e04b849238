"""The Django project: settings, root urls, the Celery app and the customer-facing web."""

from portal.celery import app as celery_app

__all__ = ("celery_app",)
