"""API keys: shown once and stored hashed, scopes per resource family, expiry, IP
allow-list, last use, an audit row per write, revocation; the command and the dashboard."""

import hashlib
import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from accounts.models import ApiAuditEntry, ApiKey, Membership
from tests.portal.api.conftest import ApiClient, make_key


def test_the_key_is_stored_as_a_digest_only(demo, api_key):
    row = ApiKey.objects.get(pk=api_key.api_key.pk)
    assert api_key.secret.startswith(f"gpk_{row.prefix}_")
    assert row.key_hash == hashlib.sha256(api_key.secret.encode()).hexdigest()
    assert api_key.secret not in str(ApiKey.objects.filter(pk=row.pk).values().first())


def test_bearer_key_reads_and_records_last_use(demo, api, api_key):
    response = api.get("/api/v1/sites/", REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 200
    assert {s["code"] for s in response.json()} == {"SZ", "HK"}
    row = ApiKey.objects.get(pk=api_key.api_key.pk)
    assert row.last_used_at is not None and row.last_used_ip == "203.0.113.7"


def test_a_wrong_missing_revoked_or_expired_key_is_401(demo, api_key):
    assert ApiClient("gpk_nope_nope").get("/api/v1/sites/").json()["code"] == "invalid_api_key"
    anonymous = ApiClient("x").get("/api/v1/sites/", HTTP_AUTHORIZATION="")
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"].startswith("Bearer")
    api_key.api_key.revoked_at = timezone.now()
    api_key.api_key.save()
    revoked = ApiClient(api_key.secret).get("/api/v1/sites/")
    assert revoked.status_code == 401 and revoked.json()["code"] == "api_key_revoked"
    expired = make_key(
        demo["org"], demo["customer"], expires_at=timezone.now() + timedelta(seconds=1)
    )
    ApiKey.objects.filter(pk=expired.api_key.pk).update(expires_at=timezone.now())
    assert ApiClient(expired.secret).get("/api/v1/sites/").json()["code"] == "api_key_expired"


def test_the_ip_allow_list(demo):
    key = make_key(demo["org"], demo["customer"], allowed_ips=["198.51.100.0/24"])
    client = ApiClient(key.secret)
    assert client.get("/api/v1/sites/", REMOTE_ADDR="198.51.100.20").status_code == 200
    refused = client.get("/api/v1/sites/", REMOTE_ADDR="203.0.113.7")
    assert refused.status_code == 401 and refused.json()["code"] == "ip_not_allowed"


def test_scopes_are_per_family_read_or_write(demo, config):
    key = make_key(demo["org"], demo["customer"], scopes={"catalog": "read", "quotes": "read"})
    client = ApiClient(key.secret)
    assert client.get("/api/v1/sites/").status_code == 200
    assert client.get("/api/v1/quotes/").status_code == 200
    assert client.get("/api/v1/orders/").json()["code"] == "insufficient_scope"
    refused = client.post("/api/v1/quotes/", config)
    assert refused.status_code == 403 and refused.json()["code"] == "insufficient_scope"


def test_every_write_leaves_an_audit_row(demo, api, api_key, config):
    api.post("/api/v1/estimates/", config, idempotency_key="audit-1")
    api.post("/api/v1/estimates/", {"site": "SZ"}, idempotency_key="audit-2")
    api.get("/api/v1/sites/")
    rows = list(ApiAuditEntry.objects.filter(api_key=api_key.api_key).order_by("pk"))
    assert [(r.method, r.path, r.status_code, r.idempotency_key) for r in rows] == [
        ("POST", "/api/v1/estimates/", 200, "audit-1"),
        ("POST", "/api/v1/estimates/", 400, "audit-2"),
    ]


def test_the_command_prints_the_key_alone_on_its_last_line(demo):
    out = io.StringIO()
    call_command(
        "api_key_create",
        "--organisation", demo["org"].name, "--scopes", "catalog:read,orders:write",
        "--name", "CI", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    secret = out.getvalue().strip().splitlines()[-1]
    assert secret.startswith("gpk_")
    key = ApiKey.objects.get(prefix=secret.split("_")[1])
    assert key.scopes == {"catalog": "read", "orders": "write"} and key.name == "CI"
    assert ApiClient(secret).get("/api/v1/sites/").status_code == 200
    by_id = io.StringIO()
    call_command(
        "api_key_create",
        "--organisation",
        str(demo["org"].pk),
        "--scopes",
        "*:read",
        "--name",
        "all",
        stdout=by_id,
        stderr=io.StringIO(),
    )
    assert by_id.getvalue().strip().startswith("gpk_")


@pytest.mark.parametrize("lang", ["en", "zh-hans"])
def test_owners_create_keys_on_the_dashboard_shown_once_and_revoke_them(demo, client, lang):
    client.force_login(demo["customer"])
    page = client.post(
        f"/{lang}/account/api-keys/new",
        {"name": "laptop", "scope_catalog": "read", "scope_orders": "write"},
    )
    assert page.status_code == 200
    key = ApiKey.objects.get(organisation=demo["org"], name="laptop")
    assert key.scopes == {"catalog": "read", "orders": "write"}
    secret = page.context["secret"]
    assert secret in page.content.decode()
    assert secret not in client.get(f"/{lang}/account/api-keys/").content.decode()
    client.post(f"/{lang}/account/api-keys/{key.pk}/revoke")
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert ApiClient(secret).get("/api/v1/sites/").status_code == 401


def test_members_who_are_not_owners_cannot_create_keys(demo, client):
    Membership.objects.filter(user=demo["customer"], organisation=demo["org"]).update(role="member")
    client.force_login(demo["customer"])
    assert (
        client.post("/en/account/api-keys/new", {"name": "x", "scope_catalog": "read"}).status_code
        == 403
    )
    assert not ApiKey.objects.filter(name="x").exists()


def test_a_key_stops_when_its_owner_leaves_or_is_no_longer_an_owner(demo, api, api_key):
    membership = Membership.objects.get(organisation=demo["org"], user=demo["customer"])
    assert api.get("/api/v1/orders/").status_code == 200
    Membership.objects.filter(pk=membership.pk).update(role="member")
    demoted = api.get("/api/v1/orders/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert demoted.status_code == 401 and demoted.json()["code"] == "api_key_orphaned"
    Membership.objects.filter(pk=membership.pk).delete()
    left = api.get("/api/v1/orders/", HTTP_ACCEPT_LANGUAGE="en")
    assert left.status_code == 401 and left.json()["code"] == "api_key_orphaned"
    assert "left the organisation" in left.json()["detail"]
    assert "不再是该组织的所有者" in demoted.json()["detail"]
