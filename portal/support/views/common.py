"""What the support views share: the permission gate of the staff pages."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

VIEW_TICKETS = "support.view_ticket"
WORK_TICKETS = "support.change_ticket"
VIEW_INCIDENTS = "support.view_statusincident"
ADD_INCIDENTS = "support.add_statusincident"
CHANGE_INCIDENTS = "support.change_statusincident"

View = Callable[..., HttpResponse]


def permission_required(permission: str) -> Callable[[View], View]:
    """Users holding ``permission`` (by their role's group, or superusers); anonymous
    visitors go to the login page, everyone else gets 403 before anything is looked up.
    The permission decides, never ``is_staff``."""

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not request.user.has_perm(permission):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator
