"""What contracts do when the layers below say something happened (signals)."""

from __future__ import annotations

from typing import Any

from accounts.models import Organisation
from accounts.signals import legal_entity_completed
from billing.contracts.services import contracts_draft_waiting


def _on_legal_entity_completed(sender: Any, *, organisation: Organisation, **kwargs: Any) -> None:
    contracts_draft_waiting(organisation=organisation, actor=kwargs.get("actor"))


def connect_signals() -> None:
    legal_entity_completed.connect(
        _on_legal_entity_completed, dispatch_uid="billing.contracts.legal_entity_completed"
    )
