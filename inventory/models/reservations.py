"""Reservations: a node booked over ``[start_at, end_at)``, their lifecycle and events.

No double booking: PostgreSQL enforces it with the exclusion constraint
``reservation_no_overlap`` (btree_gist, migrations 0002 and 0010, PostgreSQL only):
two *active* reservations (status ``hold`` or ``firm``) of one node may not have
overlapping *held* ranges ``[held_from, held_until)``. A reservation rents
``[start_at, end_at)`` and holds the node from the site's lead time before the start
(provisioning) to its cleaning time after the end, so the named nodes stay the
customer's from provisioning to the end of cleaning. ``reservation_hold`` checks the
same rule first so that SQLite and forms get a clear message, not an IntegrityError.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.lifecycle import Lifecycle
from core.models import LifecycleEvent
from inventory.models.nodes import Node

__all__ = [
    "ACTIVE_RESERVATION_STATUSES",
    "RESERVATION_TRANSITIONS",
    "Reservation",
    "ReservationEvent",
    "ReservationStatus",
]


class ReservationStatus(models.TextChoices):
    HOLD = "hold", _("hold")
    FIRM = "firm", _("firm")
    RELEASED = "released", _("released")
    EXPIRED = "expired", _("expired")
    ENDED = "ended", _("ended")


# The reservation lifecycle: a tentative hold becomes firm, or is released or expires.
RESERVATION_TRANSITIONS: dict[str, frozenset[str]] = {
    ReservationStatus.HOLD: frozenset(
        {ReservationStatus.FIRM, ReservationStatus.RELEASED, ReservationStatus.EXPIRED}
    ),
    ReservationStatus.FIRM: frozenset({ReservationStatus.RELEASED, ReservationStatus.ENDED}),
    ReservationStatus.RELEASED: frozenset(),
    ReservationStatus.EXPIRED: frozenset(),
    ReservationStatus.ENDED: frozenset(),
}
ACTIVE_RESERVATION_STATUSES = (ReservationStatus.HOLD, ReservationStatus.FIRM)


class Reservation(models.Model):
    """A node booked over the half-open range ``[start_at, end_at)``.

    The kind is the status while active: ``hold`` (tentative, with ``expires_at``) or
    ``firm``. ``group`` ties the nodes of one booking together; ``owner_ref`` names what
    the booking belongs to (``quote:Q-SZ-2026-000123``, ``order:42``).
    """

    node = models.ForeignKey(
        Node, on_delete=models.PROTECT, related_name="reservations", verbose_name=_("node")
    )
    start_at = models.DateTimeField(_("starts"))
    end_at = models.DateTimeField(_("ends"))
    # The node is kept from provisioning to the end of cleaning (``Site.held_range``);
    # no two active reservations of a node overlap on this range.
    held_from = models.DateTimeField(_("held from"))
    held_until = models.DateTimeField(_("held until"))
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=ReservationStatus.choices,
        default=ReservationStatus.HOLD,
    )
    expires_at = models.DateTimeField(
        _("hold expires"), null=True, blank=True, help_text=_("Only for holds.")
    )
    group = models.UUIDField(_("booking"), default=uuid.uuid4, db_index=True)
    owner_ref = models.CharField(_("belongs to"), max_length=100, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    lifecycle = Lifecycle(
        choices=ReservationStatus,
        transitions=RESERVATION_TRANSITIONS,
        event_model="inventory.ReservationEvent",
        subject_field="reservation",
        describe=lambda r: gettext("The booking of %(hostname)s") % {"hostname": r.node.hostname},
        lock_related=("node",),
    )

    class Meta:
        ordering = ["start_at", "node_id"]
        verbose_name = _("reservation")
        verbose_name_plural = _("reservations")
        indexes = [
            models.Index(
                fields=["node", "end_at", "start_at"],
                name="resv_active_node_range_idx",
                condition=Q(status__in=["hold", "firm"]),
            ),
            models.Index(
                fields=["expires_at"], name="resv_hold_expiry_idx", condition=Q(status="hold")
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(end_at__gt=models.F("start_at")),
                name="reservation_end_after_start",
                violation_error_message=_("A reservation must end after it starts."),
            ),
            models.CheckConstraint(
                condition=Q(held_from__lte=models.F("start_at"))
                & Q(held_until__gte=models.F("end_at")),
                name="reservation_held_covers_rental",
                violation_error_message=_("A reservation holds its node over its whole rental."),
            ),
            models.CheckConstraint(
                condition=~Q(status="hold") | Q(expires_at__isnull=False),
                name="reservation_hold_has_expiry",
                violation_error_message=_("A hold needs an expiry time."),
            ),
        ]

    def __str__(self) -> str:
        span = f"[{self.start_at:%Y-%m-%d %H:%M}, {self.end_at:%Y-%m-%d %H:%M})"
        return f"{self.node_id} {span} {self.get_status_display()}"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RESERVATION_STATUSES


class ReservationEvent(LifecycleEvent):
    reservation = models.ForeignKey(
        Reservation, on_delete=models.CASCADE, related_name="events", verbose_name=_("reservation")
    )

    class Meta(LifecycleEvent.Meta):
        ordering = ["-created_at", "-id"]
        verbose_name = _("reservation event")
        verbose_name_plural = _("reservation events")

    def __str__(self) -> str:
        return f"{self.reservation_id}: {self.from_label()} → {self.to_label()}"
