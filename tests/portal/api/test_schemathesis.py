"""schemathesis against the served schema (``/api/v1/schema/``), bounded in examples per
operation: no answer is a 500 and none breaks the schema it documents."""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.portal.api.conftest import make_key

schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", get_wsgi_application())

EXAMPLES_PER_OPERATION = 3


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """As Django's test client does: requests do not close the test's connection (its
    transaction holds the demo data)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_server_error_and_every_answer_matches_the_schema(case, demo):
    key = make_key(demo["org"], demo["customer"])
    case.call_and_validate(
        headers={"Authorization": f"Bearer {key.secret}"},
        checks=[not_a_server_error, response_schema_conformance],
    )
