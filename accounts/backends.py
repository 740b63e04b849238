"""Log in with an email address (the customers' username) or a staff username, with the
login throttle applied to every login form (the portal's and the admin's)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from accounts import throttle

UserModel = get_user_model()


class EmailBackend(ModelBackend):
    """Customers sign up with username = their lower-cased email; staff accounts keep
    their usernames. The identifier is tried as a username, then lower-cased, then as
    the email of exactly one account (users created by staff before sign-up existed).

    With a request (a login form), the throttle counts each failure against the
    (identifier, client IP) pair and, once per identifier, against the client; while the
    pair is locked (or the client is, for an identifier that never logged in from it)
    nothing is checked: ``PermissionDenied`` makes ``authenticate()`` answer ``None``. The
    portal's login page reads ``throttle.lockout`` to say how long is left; the admin's
    says "incorrect".
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> AbstractBaseUser | None:
        if username is None:
            username = kwargs.get(UserModel.USERNAME_FIELD)
        if not username or password is None:
            return None
        identifier = username.strip()
        ip = throttle.client_ip(request) if request is not None else None
        if ip is not None and throttle.lockout(account=identifier, ip=ip) is not None:
            raise PermissionDenied
        user = self._check(identifier, password)
        if ip is not None:
            if user is None:
                throttle.failure_record(account=identifier, ip=ip)
            else:
                throttle.success_record(account=identifier, ip=ip)
        return user

    def _check(self, identifier: str, password: str) -> AbstractBaseUser | None:
        user = self._find(identifier)
        if user is None:
            # Spend the same time as a wrong password, so the answer's speed tells nothing.
            UserModel().set_password(password)
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None

    def _find(self, identifier: str) -> AbstractBaseUser | None:
        users = UserModel._default_manager
        for candidate in dict.fromkeys([identifier, identifier.lower()]):
            user = users.filter(**{UserModel.USERNAME_FIELD: candidate}).first()
            if user is not None:
                return user
        if "@" in identifier:
            matches = list(users.filter(email__iexact=identifier)[:2])
            if len(matches) == 1:
                return matches[0]
        return None
