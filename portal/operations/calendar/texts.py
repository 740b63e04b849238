"""The calendar's texts (the bars' hover texts and the conflicts), translated once per
page rather than once per bar, and the address of a maintenance plan (``{}`` for its id),
resolved once in the page's language."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils.translation import gettext as _


@dataclass(frozen=True)
class Texts:
    contract: str
    expires: str
    cleaning: str
    faulty: str
    swap: str
    plan_url: str
    under: str
    unhealthy: str
    asked: str
    over: str

    @classmethod
    def translated(cls) -> Texts:
        return cls(
            contract=_("contract %(number)s"),
            expires=_("hold expires %(at)s"),
            cleaning=_("Cleaning after %(owner)s until %(at)s"),
            faulty=_("Faulty %(from)s – %(to)s"),
            swap=_("Swap %(failed)s → %(spare)s: %(reason)s"),
            plan_url=reverse("operations:maintenance_detail", args=[0]).replace("/0/", "/{}/"),
            under=_("%(node)s is %(state)s under a firm booking"),
            unhealthy=_("unhealthy"),
            asked=_("The hold expires %(at)s and %(customers)s ask for this kind of node"),
            over=_("Maintenance over the booking of %(owners)s"),
        )
