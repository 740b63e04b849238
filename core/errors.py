"""Domain errors: raised by services, turned into clear messages by views and admin."""

from __future__ import annotations


class DomainError(Exception):
    """A business rule refused the operation. ``message`` is user-facing and translated."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return str(self.message)


class IllegalTransition(DomainError):
    """A lifecycle move that the transition table does not allow."""


class DoubleBooking(DomainError):
    """A reservation would overlap an active one (or a maintenance window) of the same node."""


class NotEnoughCapacity(DomainError):
    """Fewer nodes are free than asked for."""
