"""API keys: create (shown once), revoke, authenticate, scope checks, the audit of writes.

A key is ``gpk_<prefix>_<secret>``: the prefix (12 hex characters) finds the row, the
SHA-256 of the whole key proves it (the key is 192 random bits, so a fast digest is as
safe as a slow password hash and costs nothing per request). Scopes are per resource
family (``API_FAMILIES``): ``read``, or ``write`` (which includes read).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import (
    ApiAuditEntry,
    ApiKey,
    ApiScope,
    MemberRole,
    Membership,
    Organisation,
)
from core.errors import DomainError

KEY_PREFIX = "gpk_"

# The resource families a key's scopes name (one source: the dashboard form, the command,
# the API's permission checks and the README read this).
API_FAMILIES: dict[str, object] = {
    "catalog": gettext_lazy("catalog, availability, sizing"),
    "quotes": gettext_lazy("estimates and quotes"),
    "orders": gettext_lazy("orders, provisioning, access details"),
    "contracts": gettext_lazy("contracts"),
    "billing": gettext_lazy("invoices, payments, credit notes"),
    "ssh_keys": gettext_lazy("SSH keys"),
    "webhooks": gettext_lazy("webhook endpoints and deliveries"),
    "support": gettext_lazy("support tickets"),
}

# Who may create and revoke keys: a key acts for the organisation.
API_KEY_MANAGERS = (MemberRole.OWNER,)


class ApiKeyRefused(DomainError):
    """The key is unknown, revoked, expired, or used from an address it does not allow.
    ``code`` is the stable machine code of the problem."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def scopes_parse(text: str) -> dict[str, str]:
    """``"catalog:read,orders:write"`` (or ``"*:write"``) → ``{"catalog": "read", ...}``."""
    scopes: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        family, _sep, level = part.partition(":")
        level = level or ApiScope.READ
        if level not in ApiScope.values:
            raise DomainError(
                _("Unknown scope level “%(level)s”: use read or write.") % {"level": level}
            )
        families = list(API_FAMILIES) if family == "*" else [family]
        for name in families:
            if name not in API_FAMILIES:
                raise DomainError(
                    _("Unknown resource family “%(family)s”; known: %(known)s.")
                    % {"family": name, "known": ", ".join(API_FAMILIES)}
                )
            if scopes.get(name) != ApiScope.WRITE:
                scopes[name] = level
    if not scopes:
        raise DomainError(_("Give the key at least one scope."))
    return scopes


def allowed_ips_parse(text: str) -> list[str]:
    """Addresses or networks, separated by commas, spaces or lines (empty: any)."""
    out = []
    for item in text.replace(",", " ").split():
        try:
            out.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise DomainError(
                _("“%(value)s” is not an IP address or network.") % {"value": item}
            ) from None
    return out


def _check_manager(organisation: Organisation, actor: User) -> None:
    if not Membership.objects.filter(
        organisation=organisation, user=actor, role__in=API_KEY_MANAGERS
    ).exists():
        raise DomainError(_("Only an owner of the organisation creates and revokes API keys."))


@dataclass(frozen=True)
class NewKey:
    api_key: ApiKey
    secret: str  # the whole key, shown once


def api_key_create(
    *,
    organisation: Organisation,
    actor: User,
    name: str,
    scopes: dict[str, str],
    expires_at: datetime | None = None,
    allowed_ips: list[str] | None = None,
) -> NewKey:
    """A new key acting as ``actor`` (an owner); the secret is returned once, never stored."""
    _check_manager(organisation, actor)
    name = (name or "").strip()
    if not name:
        raise DomainError(_("Name the key (e.g. “CI pipeline”)."))
    if expires_at is not None and expires_at <= timezone.now():
        raise DomainError(_("The expiry must be in the future."))
    bad = [
        f for f, level in scopes.items() if f not in API_FAMILIES or level not in ApiScope.values
    ]
    if bad or not scopes:
        raise DomainError(_("Choose read or write for at least one resource family."))
    prefix = secrets.token_hex(6)
    secret = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(24)}"
    key = ApiKey.objects.create(
        organisation=organisation,
        name=name[:100],
        prefix=prefix,
        key_hash=_digest(secret),
        scopes=dict(scopes),
        allowed_ips=list(allowed_ips or []),
        expires_at=expires_at,
        created_by=actor,
    )
    return NewKey(api_key=key, secret=secret)


def api_key_revoke(*, organisation: Organisation, key_id: int, actor: User) -> ApiKey:
    """Revoke one of the organisation's keys at once (another organisation's: not found)."""
    _check_manager(organisation, actor)
    with transaction.atomic():
        key = (
            ApiKey.objects.select_for_update().filter(organisation=organisation, pk=key_id).first()
        )
        if key is None:
            raise DomainError(_("No such key."))
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
    return key


def _ip_allowed(key: ApiKey, ip: str | None) -> bool:
    if not key.allowed_ips:
        return True
    if not ip:
        return False
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(net, strict=False) for net in key.allowed_ips)


def _address(ip: str | None) -> str | None:
    """A usable IP address, or None (a client whose address is unknown)."""
    try:
        return str(ipaddress.ip_address(ip)) if ip else None
    except ValueError:
        return None


def api_key_authenticate(*, secret: str, ip: str | None) -> ApiKey:
    """The active key for ``secret`` used from ``ip``, with its organisation and user;
    records the last use (at most once a minute). Raises ``ApiKeyRefused``."""
    ip = _address(ip)
    body = secret[len(KEY_PREFIX) :] if secret.startswith(KEY_PREFIX) else ""
    prefix, _sep, _rest = body.partition("_")
    key = (
        ApiKey.objects.select_related("organisation", "created_by").filter(prefix=prefix).first()
        if prefix
        else None
    )
    if key is None or not hmac.compare_digest(key.key_hash, _digest(secret)):
        raise ApiKeyRefused(_("The API key is not valid."), code="invalid_api_key")
    now = timezone.now()
    if key.revoked_at is not None:
        raise ApiKeyRefused(_("The API key has been revoked."), code="api_key_revoked")
    if key.expires_at is not None and now >= key.expires_at:
        raise ApiKeyRefused(_("The API key has expired."), code="api_key_expired")
    if not _ip_allowed(key, ip):
        raise ApiKeyRefused(
            _("The API key may not be used from this address."), code="ip_not_allowed"
        )
    role = (
        Membership.objects.filter(organisation_id=key.organisation_id, user_id=key.created_by_id)
        .values_list("role", flat=True)
        .first()
    )
    if role is None:
        raise ApiKeyRefused(
            _("The member who created this API key has left the organisation."),
            code="api_key_orphaned",
        )
    if role not in API_KEY_MANAGERS:
        # A key acts as its owner: an owner made a member or viewer no longer has one.
        raise ApiKeyRefused(
            _("The member who created this API key is no longer an owner of the organisation."),
            code="api_key_orphaned",
        )
    if (
        key.last_used_at is None
        or (now - key.last_used_at).total_seconds() >= 60
        or (key.last_used_ip != ip)
    ):
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now, last_used_ip=ip)
        key.last_used_at, key.last_used_ip = now, ip
    return key


def scope_allows(key: ApiKey, family: str, *, write: bool) -> bool:
    level = key.scopes.get(family)
    if write:
        return level == ApiScope.WRITE
    return level in (ApiScope.READ, ApiScope.WRITE)


def api_audit_record(
    *, key: ApiKey, method: str, path: str, status_code: int, idempotency_key: str, ip: str | None
) -> ApiAuditEntry:
    """One row per write request made with a key, whatever its outcome."""
    return ApiAuditEntry.objects.create(
        api_key=key,
        organisation_id=key.organisation_id,
        method=method[:8],
        path=path[:500],
        status_code=status_code,
        idempotency_key=idempotency_key[:200],
        ip=_address(ip),
    )
