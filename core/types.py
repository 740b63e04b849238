"""Small types shared by every layer."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

# Who did something: a signed-in user, or ``None`` for the system (beat, a worker, a webhook).
Actor = User | AnonymousUser | None


def actor_or_none(actor: Actor) -> User | None:
    """The user to record on an event row: anonymous visitors are recorded as nobody."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        return None
    return actor  # type: ignore[return-value]
