"""API test helpers: keys for the demo organisation (and another), a Bearer client."""

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import api_keys
from accounts.models import Membership, Organisation
from tests.provisioning.test_replacement_paths import rented  # noqa: F401 - a delivered order


class ApiClient(Client):
    """A test client that sends the key and JSON, and an Idempotency-Key on each POST."""

    def __init__(self, key: str, **defaults):
        super().__init__(HTTP_AUTHORIZATION=f"Bearer {key}", **defaults)
        self.key = key

    def post(self, path, data=None, *, idempotency_key=None, **extra):
        extra.setdefault("HTTP_IDEMPOTENCY_KEY", idempotency_key or str(uuid.uuid4()))
        return super().post(path, data or {}, content_type="application/json", **extra)


def make_key(org, user, scopes=None, **kwargs):
    return api_keys.api_key_create(
        organisation=org,
        actor=user,
        name="test",
        scopes=scopes or {family: "write" for family in api_keys.API_FAMILIES},
        **kwargs,
    )


@pytest.fixture
def api_key(demo):
    return make_key(demo["org"], demo["customer"])


@pytest.fixture
def api(api_key):
    return ApiClient(api_key.secret)


@pytest.fixture
def other_org(db):
    user = get_user_model().objects.create_user(
        "rival", "rival@example.com", "rival-pw-12345678", first_name="Rival"
    )
    org = Organisation.objects.create(name="Rival Lab")
    Membership.objects.create(user=user, organisation=org, role="owner")
    return org, user


@pytest.fixture
def other_api(other_org):
    org, user = other_org
    return ApiClient(make_key(org, user).secret)


@pytest.fixture
def config(demo):
    return {
        "site": "SZ",
        "node_type": demo["h100"].code,
        "node_count": 2,
        "term": "month",
        "duration": 1,
        "start_date": (demo["start"] + timedelta(days=0)).isoformat(),
    }


@pytest.fixture(autouse=True)
def generous_limits(settings):
    limit = {"unpaid_orders": 100, "held_nodes": 1000}
    settings.SELF_SERVICE_HOLD_LIMITS = {"verified": limit, "unverified": limit}
