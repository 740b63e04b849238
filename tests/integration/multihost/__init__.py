"""The multi-host test network (tests/integration/test_multihost.py, bench/multihost.py):
PostgreSQL, the broker's and the cache's Redis, two web hosts behind HAProxy, two worker
hosts and beat, each in its own network namespace; customer journeys driven against the
load balancer while hosts die and come back; the invariants checked afterwards."""
