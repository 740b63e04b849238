"""Reads about accounts: the active organisation, members, invitations.

Other apps' pages scope their queries with ``current_organisation(request)`` (or
``request.organisation`` behind ``customer_required``), never with an id from the URL.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import AbstractUser, AnonymousUser, User
from django.db.models import QuerySet
from django.http import HttpRequest
from django.shortcuts import resolve_url
from django.utils import timezone

from accounts.models import CustomerProfile, Invitation, Membership, Organisation, SshPublicKey

SESSION_KEY = "active_organisation_id"
_CACHE_ATTR = "_accounts_current_membership"


def user_email(user: User | AnonymousUser) -> str:
    """The address a user is known by: the email (lower-cased), else the username."""
    email = (getattr(user, "email", "") or "").strip().lower()
    return email or user.get_username().strip().lower()


def email_verified(user: User | AnonymousUser) -> bool:
    """Whether the user has proved the email address.

    Users without a ``CustomerProfile`` were created by staff (admin, seed data), not by
    sign-up, and count as verified.
    """
    if not user.is_authenticated:
        return False
    try:
        profile = user.customer_profile
    except CustomerProfile.DoesNotExist:
        return True
    return profile.email_verified


def user_languages(user_ids: Iterable[int]) -> dict[int, str]:
    """The language each user last chose (``CustomerProfile.language``), for the users
    that chose one; one query."""
    rows = CustomerProfile.objects.filter(user__in=list(user_ids)).exclude(language="")
    return dict(rows.values_list("user_id", "language"))


def memberships_for_user(user: User) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(user=user)
        .select_related("organisation")
        .order_by("organisation__name", "organisation_id")
    )


def current_membership(request: HttpRequest) -> Membership | None:
    """The logged-in user's membership in the active organisation.

    The active organisation is the one chosen with the switcher (kept in the session) if
    the user still belongs to it, else the first of their organisations by name. ``None``
    for anonymous users and users with no membership. Cached on the request.
    """
    if hasattr(request, _CACHE_ATTR):
        return getattr(request, _CACHE_ATTR)
    membership: Membership | None = None
    if request.user.is_authenticated:
        chosen = request.session.get(SESSION_KEY)
        memberships = memberships_for_user(request.user)
        if chosen is not None:
            membership = memberships.filter(organisation_id=chosen).first()
        if membership is None:
            membership = memberships.first()
            if membership is not None:
                request.session[SESSION_KEY] = membership.organisation_id
    setattr(request, _CACHE_ATTR, membership)
    return membership


def current_organisation(request: HttpRequest) -> Organisation | None:
    """The organisation the logged-in user is working in, or ``None``."""
    membership = current_membership(request)
    return membership.organisation if membership is not None else None


def current_organisation_forget(request: HttpRequest) -> None:
    """Drop the per-request cache (after a switch, or after joining an organisation)."""
    if hasattr(request, _CACHE_ATTR):
        delattr(request, _CACHE_ATTR)


def organisation_members(organisation: Organisation) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(organisation=organisation)
        .select_related("user")
        .order_by("user__first_name", "user__username")
    )


def invitations_open(organisation: Organisation) -> QuerySet[Invitation]:
    return Invitation.objects.filter(
        organisation=organisation,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__gt=timezone.now(),
    ).select_related("invited_by")


def ssh_keys_for_org(organisation: Organisation) -> QuerySet[SshPublicKey]:
    """The organisation's SSH public keys, by name, with who added them."""
    return SshPublicKey.objects.filter(organisation=organisation).select_related("added_by")


def invitation_by_token(token: str) -> Invitation | None:
    if not token or len(token) > 64:
        return None
    return (
        Invitation.objects.select_related("organisation", "invited_by").filter(token=token).first()
    )


def display_name(user: AbstractUser) -> str:
    full = user.get_full_name() if isinstance(user, AbstractUser) else ""
    return full or user.get_username()


def landing_url(user: User) -> str:
    """Where a user lands after logging in without a ``next``: customers on their
    organisations; staff on their own pages (``STAFF_LANDING_BY_GROUP``: quotes for sales),
    the back office otherwise."""
    if not getattr(user, "is_staff", False):
        return resolve_url(settings.LOGIN_REDIRECT_URL)
    names = set(user.groups.values_list("name", flat=True))
    for group, url_name in settings.STAFF_LANDING_BY_GROUP.items():
        if group in names:
            return resolve_url(url_name)
    return resolve_url("admin:index")
