"""The monitoring series and GPUs through the API against a real Prometheus holding two
organisations' series (the panel's backfilled fixture): a key sees only its order's
nodes, whatever it puts in the query string, and the other organisation's order is a
404."""

from __future__ import annotations

import pytest

from tests.integration.test_monitoring_panel import backfilled, two_orgs  # noqa: F401
from tests.portal.api.conftest import ApiClient, make_key

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_a_key_reads_only_its_own_orders_series(backfilled, demo):  # noqa: F811
    mine, theirs, a, b = (backfilled[k] for k in ("mine", "theirs", "a", "b"))
    api = ApiClient(make_key(demo["org"], demo["customer"]).secret)
    url = f"/api/v1/orders/{mine.number}/monitoring/"
    for query in ({}, {"metric": "sm", "range": "hour", "node": b.hostname}):
        body = api.get(url, query).json()
        assert {s["node"] for s in body["series"]} == {a.hostname}, query
        assert {s["gpu"] for s in body["series"]} == {"0", "1"}
        points = [p for s in body["series"] for p in s["points"]]
        assert points and all(abs(p["value"] - 90.0) < 0.01 for p in points)  # SM in %
        assert body["unit"] == "%" and body["start"] < points[0]["time"] <= body["end"]
    crafted = api.get(url, {"metric": 'sm"}} or up{{', "range": "hour"})
    assert crafted.status_code == 400 and crafted.json()["errors"][0]["field"] == "metric"
    gpus = api.get(f"/api/v1/orders/{mine.number}/gpus/").json()
    assert [(g["node"], g["serial"]) for g in gpus] == [(a.hostname, f"SER-{a.hostname}")]
    assert api.get(f"/api/v1/orders/{theirs.number}/monitoring/").status_code == 404
    assert api.get(f"/api/v1/orders/{theirs.number}/gpus/").status_code == 404
