import pytest

from tests import factories


@pytest.fixture
def sz(db):
    return factories.site("SZ")


@pytest.fixture
def h100(db):
    return factories.node_type("h100-8x")


@pytest.fixture(autouse=True)
def _english():
    """Services raise messages in the active language; tests read them in English.
    (Requests still pick their language from the URL, as in production.)"""
    from django.utils import translation

    with translation.override("en"):
        yield


@pytest.fixture(autouse=True, scope="session")
def _empty_task_queues_at_the_end():
    """Tests that run on-commit callbacks without an eager Celery leave task messages in
    the suite's Redis database, where no worker consumes them: drop them at the end."""
    yield
    import redis
    from django.conf import settings

    from portal import queues

    if settings.CELERY_BROKER_URL.startswith("redis://"):
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        client.delete(*queues.ALL)
        client.close()
