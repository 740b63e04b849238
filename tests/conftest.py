import pytest

from tests import factories


@pytest.fixture
def sz(db):
    return factories.site("SZ")


@pytest.fixture
def h100(db):
    return factories.node_type("h100-8x")
