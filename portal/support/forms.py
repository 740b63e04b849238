"""The support desk's forms: parse and offer choices; the rules live in the services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation
from inventory.models import Site
from portal.support import selectors
from portal.support.models import (
    Component,
    Impact,
    IncidentPhase,
    SavedReply,
    TicketCategory,
    TicketPriority,
)


class TicketForm(forms.Form):
    order = forms.ChoiceField(label=_("Order"), required=False)
    node = forms.ChoiceField(label=_("Node"), required=False)
    gpu_serial = forms.CharField(
        label=_("GPU serial number"),
        required=False,
        max_length=64,
        help_text=_("As the monitoring panel lists it; the portal finds its node."),
    )
    category = forms.ChoiceField(label=_("Category"), choices=TicketCategory.choices)
    priority = forms.ChoiceField(
        label=_("Priority"), choices=TicketPriority.choices, initial=TicketPriority.NORMAL
    )
    subject = forms.CharField(label=_("Subject"), max_length=200)
    body = forms.CharField(label=_("What happened?"), widget=forms.Textarea(attrs={"rows": 6}))

    def __init__(self, *args: Any, organisation: Organisation, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        orders = list(selectors.ticket_orders(organisation))
        self.orders = {o.number: o for o in orders}
        choices = [("", str(_("— no order —")))] + [
            (o.number, f"{o.number} · {o.get_status_display()}") for o in orders
        ]
        self.fields["order"].choices = choices  # type: ignore[attr-defined]
        nodes: list[tuple[str, str]] = [("", str(_("— the whole order —")))]
        self.nodes: dict[str, Any] = {}
        for order in orders:
            for node in selectors.ticket_nodes(order):
                if node.hostname not in self.nodes:
                    self.nodes[node.hostname] = node
                    nodes.append((node.hostname, f"{node.hostname} · {order.number}"))
        self.fields["node"].choices = nodes  # type: ignore[attr-defined]


class ReplyForm(forms.Form):
    body = forms.CharField(label=_("Your reply"), widget=forms.Textarea(attrs={"rows": 4}))


class StaffReplyForm(forms.Form):
    saved_reply = forms.ModelChoiceField(
        label=_("Saved reply"),
        queryset=SavedReply.objects.filter(active=True),
        required=False,
        empty_label=_("— type the reply —"),
        help_text=_("Used when the reply is left empty."),
    )
    body = forms.CharField(
        label=_("Reply to the customer"), widget=forms.Textarea(attrs={"rows": 5}), required=False
    )
    wait_for_customer = forms.BooleanField(
        label=_("Wait for the customer's answer (pauses the clocks)"), required=False
    )


class NoteForm(forms.Form):
    body = forms.CharField(
        label=_("Internal note (never shown to the customer)"),
        widget=forms.Textarea(attrs={"rows": 3}),
    )


class AssignForm(forms.Form):
    assignee = forms.ChoiceField(label=_("Assign to"))
    reason = forms.CharField(label=_("Why"), max_length=500)

    def __init__(self, *args: Any, staff: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.staff = {str(u.pk): u for u in staff}
        choices = [("", str(_("— nobody —")))] + [(str(u.pk), u.get_username()) for u in staff]
        self.fields["assignee"].choices = choices  # type: ignore[attr-defined]


class PriorityForm(forms.Form):
    priority = forms.ChoiceField(label=_("Priority"), choices=TicketPriority.choices)
    reason = forms.CharField(label=_("Why"), max_length=500)


class ResolveForm(forms.Form):
    resolution = forms.CharField(
        label=_("What was done (sent to the customer)"), widget=forms.Textarea(attrs={"rows": 3})
    )


class IncidentForm(forms.Form):
    site = forms.ModelChoiceField(label=_("Site"), queryset=Site.objects.order_by("code"))
    component = forms.ChoiceField(label=_("Component"), choices=Component.choices)
    impact = forms.ChoiceField(label=_("Impact"), choices=Impact.choices)
    title = forms.CharField(label=_("Title (English)"), max_length=200)
    title_zh = forms.CharField(label=_("Title (Chinese)"), max_length=200)
    body = forms.CharField(
        label=_("First update (English)"), widget=forms.Textarea(attrs={"rows": 3})
    )
    body_zh = forms.CharField(
        label=_("First update (Chinese)"), widget=forms.Textarea(attrs={"rows": 3})
    )
    racks = forms.CharField(label=_("Racks (names, comma-separated)"), required=False)
    switches = forms.CharField(label=_("Switches (names, comma-separated)"), required=False)
    nodes = forms.CharField(label=_("Nodes (hostnames, comma-separated)"), required=False)


class IncidentUpdateForm(forms.Form):
    status = forms.ChoiceField(label=_("Status"), choices=IncidentPhase.choices)
    impact = forms.ChoiceField(label=_("Impact"), choices=Impact.choices)
    body = forms.CharField(label=_("Update (English)"), widget=forms.Textarea(attrs={"rows": 3}))
    body_zh = forms.CharField(label=_("Update (Chinese)"), widget=forms.Textarea(attrs={"rows": 3}))


def names(value: str) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]
