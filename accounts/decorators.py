"""``customer_required``: the gate in front of every page about an organisation's things.

    from accounts.decorators import customer_required

    @customer_required
    def order_list(request):
        orders = Order.objects.filter(organisation=request.organisation)

    @customer_required(roles=(MemberRole.OWNER, MemberRole.BILLING))
    def invoices(request): ...

Anonymous visitors go to the login page; users who have not verified their email are
sent back to it with a message; users in no organisation (or without one of ``roles``)
get a 403 page that says why. Otherwise ``request.organisation`` and
``request.membership`` are the active organisation and the user's membership in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any, overload

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from accounts import selectors
from accounts.models import MemberRole

View = Callable[..., HttpResponse]


def _gate(request: HttpRequest, roles: frozenset[str] | None) -> HttpResponse | None:
    """``None`` when the request may go on (and ``request.organisation`` is set)."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not selectors.email_verified(request.user):
        logout(request)
        messages.warning(
            request, _("Verify your email address first: open the link in the email we sent.")
        )
        return redirect_to_login(request.get_full_path())
    membership = selectors.current_membership(request)
    if membership is None:
        return render(
            request,
            "accounts/forbidden.html",
            {
                "message": _(
                    "Your account does not belong to any organisation. Ask an owner of your "
                    "company's organisation to invite you."
                )
            },
            status=403,
        )
    if roles is not None and membership.role not in roles:
        labels = ", ".join(str(MemberRole(r).label) for r in sorted(roles))
        return render(
            request,
            "accounts/forbidden.html",
            {
                "message": _(
                    "This page is for the organisation's %(roles)s; your role in %(org)s is "
                    "%(role)s."
                )
                % {
                    "roles": labels,
                    "org": membership.organisation.name,
                    "role": membership.get_role_display(),
                }
            },
            status=403,
        )
    request.organisation = membership.organisation  # type: ignore[attr-defined]
    request.membership = membership  # type: ignore[attr-defined]
    return None


@overload
def customer_required(view: View) -> View: ...
@overload
def customer_required(*, roles: Iterable[str] | None = None) -> Callable[[View], View]: ...
def customer_required(
    view: View | None = None, *, roles: Iterable[str] | None = None
) -> View | Callable[[View], View]:
    """Require a logged-in, verified member (optionally with one of ``roles``)."""
    allowed = frozenset(roles) if roles is not None else None

    def decorate(func: View) -> View:
        @wraps(func)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            refused = _gate(request, allowed)
            if refused is not None:
                return refused
            return func(request, *args, **kwargs)

        return wrapper

    return decorate(view) if view is not None else decorate
