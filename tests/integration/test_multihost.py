"""The portal on a real network of hosts (network namespaces and veth pairs on a private
bridge): PostgreSQL, the broker's and the cache's Redis, HAProxy in front of two gunicorn
web hosts, two Celery worker hosts, beat and the back office, each its own host
(tests/integration/multihost). Customer journeys and visitors go through the load
balancer while a worker host is killed in the middle of a provisioning run, a web host is
restarted, a second beat is started and the cache's Redis is stopped and started; nothing
is lost, and a failed request is only one the load balancer could not retry.

The bounded form of ``bench/multihost.py`` (which runs more journeys and reports the
pages' latencies). Needs root and ``ip netns``: without them the test fails and says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from tests.integration.multihost import scenario
from tests.integration.multihost.cluster import Cluster
from tests.integration.multihost.network import Network, NetworkUnavailable, require_netns

# django_db: the suite's test database must exist (its schema is copied; nothing is
# written to it).
pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def network(request: pytest.FixtureRequest, tmp_path: Path) -> Network:
    """A fresh test network, torn down (every process killed, every namespace deleted)
    after the test whatever happens; the hosts' logs are kept in the test's tmp_path."""
    try:
        require_netns()
    except NetworkUnavailable as error:
        pytest.fail(f"the multi-host test cannot run here: {error}", pytrace=False)
    net = Network()
    request.addfinalizer(lambda: net.down(keep_logs=tmp_path / "logs"))
    return net.up()


@pytest.fixture
def migrated_schema(django_db_setup: None) -> str:
    """The suite's test database (migrated, no rows but the data migrations'): its schema
    is copied to the database host instead of migrating there (minutes)."""
    s = connection.settings_dict  # the test database's, once django_db set it up
    return f"postgresql://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def test_nothing_is_lost_while_hosts_die_and_come_back(network, migrated_schema, tmp_path):
    plan = scenario.Plan(journeys=3, visitors=2, concurrency=3, cache_outage_s=3.0)
    cluster = Cluster(network, keys=plan.journeys + plan.visitors, schema_from=migrated_schema)
    figures = scenario.run(cluster, plan, say=lambda message: None)
    logs = f"(hosts' logs: {tmp_path / 'logs'})"
    assert figures["problems"] == [], logs
    # Every journey got its cluster: three orders, once each, delivered.
    assert figures["journeys_delivered"] == 3 and figures["orders_stored"] == 3, figures
    assert figures["runs_delivered"] == 3 and figures["steps_done_twice"] == 0, figures
    # The kill hit a run in flight: the work the dead host held was resumed elsewhere.
    assert figures["runs_relaunched"] >= 1, figures
    # Quote, invoice and acceptance report of each order, stored and intact.
    assert figures["documents"] >= 9, figures
    # Requests went through the load balancer during every event and were answered,
    # save those it could not retry (counted; a portal 5xx would be a problem above).
    assert figures["requests"] > 50, figures
    assert figures["requests_failed"] == figures["requests_failed_lb_unretryable"], figures
    assert figures["beat_runs_doubled"] == 0, figures
