import io

import pytest
from django.core.management import call_command

from tests import factories


@pytest.fixture
def media(settings, tmp_path):
    """Stored documents go to a folder of this test's own."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def demo(db, media):
    """The demo data of ``make run`` (``seed_demo``), by short name: sites ``sz``/``hk``,
    node types ``h100``/``a100``/``e5``, users ``sales``/``manager``/``admin``/``customer``,
    the customer organisation ``org``, a start date a week ahead and more."""
    call_command("seed_demo", stdout=io.StringIO())
    return factories.demo_objects()


@pytest.fixture
def online_payments(settings):
    """Stripe keys are set (offline values): card, Alipay and WeChat Pay are offered."""
    settings.STRIPE_SECRET_KEY = "sk_test_offline"
    settings.STRIPE_PUBLISHABLE_KEY = "pk_test_offline"
    settings.STRIPE_PAYMENT_METHODS = ["card", "alipay", "wechat_pay"]
    return settings


@pytest.fixture
def sz(db):
    return factories.site("SZ")


@pytest.fixture
def h100(db):
    return factories.node_type("h100-8x")


@pytest.fixture(autouse=True)
def _shop_data_from_the_database():
    """Each test reads the shop's sites and price books from its own data: the memo of
    ``billing.pricing.shop_data`` outlives the rolled-back transaction of the test before."""
    from billing.pricing import shop_data
    from inventory import availability_generation

    shop_data.forget()
    availability_generation.forget()  # and no instant quote kept by the test before


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
