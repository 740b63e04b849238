"""The one lifecycle mechanism: every status in the product moves through here.

A model declares its lifecycle next to its fields::

    class Node(models.Model):
        status = models.CharField(choices=NodeStatus.choices, ...)
        lifecycle = Lifecycle(
            choices=NodeStatus,
            transitions=NODE_TRANSITIONS,
            event_model="inventory.NodeEvent",
            subject_field="node",
            describe=lambda node: _("Node %(hostname)s") % {"hostname": node.hostname},
        )

and services move it with :func:`transition` (one object), :func:`transition_many`
(a group moved together, one query for the events and one for the rows) or
:func:`transition_each` (several locked objects, each to its own status: one event insert,
one update per row). Both lock the
rows (``select_for_update``), check every move against the table, write one event row per
object (who, when, from, to, why) and return the locked objects. An illegal move raises
:class:`~core.errors.IllegalTransition` with a readable, translated message and changes
nothing. Nothing else in the project writes a status field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import models, transaction
from django.dispatch import Signal
from django.utils import timezone
from django.utils.translation import gettext as _

from core import texts
from core.errors import IllegalTransition
from core.texts import Text
from core.types import Actor, actor_or_none

# Sent after every write of the mechanism (moves, creations, notes) with ``sender`` the
# subject's model and ``objs`` the objects: a status written with ``QuerySet.update`` sends
# no ``post_save``, so what caches derived data (inventory's availability generation)
# listens here.
written = Signal()


@dataclass(frozen=True)
class Lifecycle:
    """A status field, its allowed moves and where its events are written."""

    choices: type[models.TextChoices]
    transitions: Mapping[str, frozenset[str]]
    event_model: str  # "app_label.ModelName", resolved lazily
    subject_field: str  # the event model's foreign key to the subject
    describe: Callable[[Any], str]  # "Node h100-01": names the object in messages
    status_field: str = "status"
    changed_at_field: str | None = None  # set to the move's time when given
    lock_related: tuple[str, ...] = field(default=())  # select_related when locking

    def events(self) -> type[models.Model]:
        return apps.get_model(self.event_model)

    def label(self, status: str) -> str:
        return str(dict(self.choices.choices).get(status, status))

    def check(self, obj: Any, target: str, *, source: str | None = None) -> None:
        """Raise ``IllegalTransition`` unless ``obj`` may move to ``target`` (from its
        current status, or from ``source`` when the caller holds the stored one)."""
        if source is None:
            source = getattr(obj, self.status_field)
        allowed = self.transitions.get(source, frozenset())
        if target in allowed:
            return
        names = sorted(self.label(s) for s in allowed)
        raise IllegalTransition(
            _(
                "%(what)s cannot go from “%(source)s” to “%(target)s”. "
                "Allowed from here: %(allowed)s."
            )
            % {
                "what": self.describe(obj),
                "source": self.label(source),
                "target": self.label(target),
                "allowed": ", ".join(names) if names else _("none (final state)"),
            }
        )

    def can(self, obj: Any, target: str) -> bool:
        return target in self.transitions.get(getattr(obj, self.status_field), frozenset())


def _lifecycle_of(model: type[models.Model]) -> Lifecycle:
    lifecycle = getattr(model, "lifecycle", None)
    if not isinstance(lifecycle, Lifecycle):
        raise TypeError(f"{model.__name__} declares no Lifecycle")
    return lifecycle


# Why a move happens: one text for all, or a function of each object (e.g. its deadline).
# A system text is a ``core.texts.Text`` (stored as its code and parameters, shown in the
# reader's language); a plain string is words a person typed, kept as typed.
Reason = Text | str | Callable[[Any], Text | str]


def _event(
    lifecycle: Lifecycle, obj: Any, source: str, target: str, actor: Actor, reason: Reason
) -> Any:
    plain, coded = texts.stored(reason(obj) if callable(reason) else reason)
    return lifecycle.events()(
        **{lifecycle.subject_field: obj},
        from_status=source,
        to_status=target,
        actor=actor_or_none(actor),
        reason=plain,
        reason_text=coded,
    )


def _lock(model: type[models.Model], lifecycle: Lifecycle, pks: Iterable[Any]) -> list[Any]:
    qs = model._default_manager.select_for_update()
    if lifecycle.lock_related:  # lock the subject's row only, not the related ones
        qs = model._default_manager.select_for_update(of=("self",)).select_related(
            *lifecycle.lock_related
        )
    return list(qs.filter(pk__in=list(pks)).order_by("pk"))


@transaction.atomic
def transition(
    obj: models.Model,
    *,
    to: str,
    actor: Actor = None,
    reason: Reason,
    updates: Mapping[str, Any] | None = None,
    locked: bool = False,
) -> Any:
    """Move ``obj`` to status ``to``: lock, check, record the event, save, return it.

    ``updates`` are other fields written in the same save (e.g. ``paid_at``). The caller's
    instance gets the new status and updates too. ``locked=True`` says the caller already
    holds this row's lock in the current transaction and ``obj`` was read under it, so the
    row is not read again.
    """
    model = type(obj)
    lifecycle = _lifecycle_of(model)
    if locked:
        rows = [obj]
    else:
        rows = _lock(model, lifecycle, [obj.pk])
        if not rows:
            raise model.DoesNotExist(f"{model.__name__} {obj.pk} is gone")
    fresh = _apply(model, lifecycle, rows, to=to, actor=actor, reason=reason, updates=updates)[0]
    if fresh is not obj:
        _copy_state(lifecycle, fresh, obj, updates)
    return fresh


@transaction.atomic
def transition_many(
    objs: Sequence[models.Model],
    *,
    to: str,
    actor: Actor = None,
    reason: Reason,
    updates: Mapping[str, Any] | None = None,
    locked: bool = False,
) -> list[Any]:
    """Move a group together, all or none: one lock query, one event insert, one update,
    whatever the number of objects. Returns the locked objects in primary-key order.
    ``locked=True``: the caller read ``objs`` under their row locks in this transaction."""
    if not objs:
        return []
    model = type(objs[0])
    lifecycle = _lifecycle_of(model)
    if locked:
        moved = _apply(
            model, lifecycle, list(objs), to=to, actor=actor, reason=reason, updates=updates
        )
        return sorted(moved, key=lambda o: o.pk)
    locked_rows = _lock(model, lifecycle, [o.pk for o in objs])
    moved = _apply(
        model, lifecycle, locked_rows, to=to, actor=actor, reason=reason, updates=updates
    )
    by_pk = {o.pk: o for o in moved}
    for original in objs:
        fresh = by_pk.get(original.pk)
        if fresh is not None and fresh is not original:
            _copy_state(lifecycle, fresh, original, updates)
    return moved


@dataclass(frozen=True)
class Move:
    """One object's move in :func:`transition_each`: its target, why, and other fields."""

    obj: Any
    to: str
    reason: Text | str
    updates: Mapping[str, Any] = field(default_factory=dict)


def transition_each(moves: Sequence[Move], *, actor: Actor = None) -> None:
    """Several objects of one model, each to its own status with its own updates (e.g. a
    step's outcome and the next step's lease in one short transaction): one event insert
    for all, then one update per row. The caller holds every row's lock in the current
    transaction and read the objects under it; an object appears at most once. Checked
    like :func:`transition`: an illegal move raises before anything is written."""
    if not moves:
        return
    model = type(moves[0].obj)
    lifecycle = _lifecycle_of(model)
    if len({id(m.obj) for m in moves}) != len(moves) or any(
        type(m.obj) is not model for m in moves
    ):
        raise ValueError("transition_each: one move per object, all of one model")
    _check_and_record(lifecycle, [(m.obj, m.to, m.reason) for m in moves], actor)
    now = timezone.now()
    manager = model._default_manager
    for move in moves:
        changes: dict[str, Any] = {lifecycle.status_field: move.to, **move.updates}
        if lifecycle.changed_at_field:
            changes[lifecycle.changed_at_field] = now
        # One plain UPDATE per row: cheaper to build than one bulk_update's CASE per field.
        manager.filter(pk=move.obj.pk).update(**changes)
        for name, value in changes.items():
            setattr(move.obj, name, value)
    written.send(sender=model, objs=[m.obj for m in moves])


def _copy_state(
    lifecycle: Lifecycle, source: Any, target: Any, updates: Mapping[str, Any] | None
) -> None:
    names = [lifecycle.status_field, *(updates or {})]
    if lifecycle.changed_at_field:
        names.append(lifecycle.changed_at_field)
    for name in names:
        setattr(target, name, getattr(source, name))


def _check_and_record(
    lifecycle: Lifecycle, moves: Sequence[tuple[Any, str, Reason]], actor: Actor
) -> None:
    """Check every (object, target, reason) move, then write their events in one insert
    (each from the object's current status); an illegal move raises before any write."""
    for obj, to, _reason in moves:
        lifecycle.check(obj, to)
    lifecycle.events().objects.bulk_create(
        [
            _event(lifecycle, obj, getattr(obj, lifecycle.status_field), to, actor, reason)
            for obj, to, reason in moves
        ]
    )


def _apply(
    model: type[models.Model],
    lifecycle: Lifecycle,
    locked: list[Any],
    *,
    to: str,
    actor: Actor,
    reason: Reason,
    updates: Mapping[str, Any] | None,
) -> list[Any]:
    _check_and_record(lifecycle, [(obj, to, reason) for obj in locked], actor)
    changes: dict[str, Any] = {lifecycle.status_field: to, **(updates or {})}
    if lifecycle.changed_at_field:
        changes[lifecycle.changed_at_field] = timezone.now()
    model._default_manager.filter(pk__in=[o.pk for o in locked]).update(**changes)
    for obj in locked:
        for name, value in changes.items():
            setattr(obj, name, value)
    written.send(sender=model, objs=locked)
    return locked


def record_creation(objs: Sequence[models.Model], *, actor: Actor = None, reason: Reason) -> None:
    """The first event of each new object: from nothing to its initial status."""
    if not objs:
        return
    lifecycle = _lifecycle_of(type(objs[0]))
    lifecycle.events().objects.bulk_create(
        [
            _event(lifecycle, obj, "", getattr(obj, lifecycle.status_field), actor, reason)
            for obj in objs
        ]
    )
    written.send(sender=type(objs[0]), objs=list(objs))


def record_note(objs: Sequence[models.Model], *, actor: Actor = None, reason: Reason) -> None:
    """An event that changes no status (e.g. a hold handed to a new owner), for each object
    of a group; the caller holds the rows' locks."""
    if not objs:
        return
    lifecycle = _lifecycle_of(type(objs[0]))
    lifecycle.events().objects.bulk_create(
        [
            _event(
                lifecycle,
                obj,
                getattr(obj, lifecycle.status_field),
                getattr(obj, lifecycle.status_field),
                actor,
                reason,
            )
            for obj in objs
        ]
    )
    written.send(sender=type(objs[0]), objs=list(objs))
