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
