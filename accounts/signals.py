"""Signals accounts sends for the layers above it to act on (accounts imports none of them).

``legal_entity_completed`` (sender ``Organisation``, ``organisation=``, ``actor=``): the
organisation's legal name, registration number and registered address are on file after a
change of its details. Billing drafts the contracts that waited for them.
"""

from __future__ import annotations

from django.dispatch import Signal

legal_entity_completed = Signal()
