"""Forms of the operations console: parse and check input; the rules live in services."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation
from inventory.models import MaintenanceScope, Node, NodeStatus, NodeType, Rack, Site, Switch
from portal.operations.calendar import ZOOM_DAYS

ZOOM_CHOICES = [
    ("day", _("day")),
    ("week", _("week")),
    ("month", _("month")),
    ("quarter", _("quarter")),
]


class CalendarFilterForm(forms.Form):
    zoom = forms.ChoiceField(label=_("zoom"), choices=ZOOM_CHOICES, required=False)
    start = forms.DateField(
        label=_("from"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    site = forms.ModelChoiceField(
        label=_("site"), queryset=Site.objects.all(), required=False, empty_label=_("all sites")
    )
    node_type = forms.ModelChoiceField(
        label=_("node type"),
        queryset=NodeType.objects.all(),
        required=False,
        empty_label=_("all node types"),
    )
    status = forms.ChoiceField(
        label=_("status"),
        choices=[("", _("any status")), *NodeStatus.choices],
        required=False,
    )
    customer = forms.ModelChoiceField(
        label=_("customer"),
        queryset=Organisation.objects.order_by("name"),
        required=False,
        empty_label=_("all customers"),
    )
    page = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)

    def window(self) -> tuple[str, datetime, datetime]:
        data = self.cleaned_data
        zoom = data.get("zoom") or "week"
        site = data.get("site")
        tz = site.tzinfo if site else timezone.get_default_timezone()
        first: date = data.get("start") or timezone.localdate(timezone.now(), tz)
        start = datetime.combine(first, time.min, tzinfo=tz)
        end = datetime.combine(first + timedelta(days=ZOOM_DAYS[zoom]), time.min, tzinfo=tz)
        return zoom, start, end


def _split_hostnames(text: str) -> list[str]:
    return [h for h in re.split(r"[\s,;]+", text or "") if h]


class MaintenanceForm(forms.Form):
    site = forms.ModelChoiceField(label=_("site"), queryset=Site.objects.all())
    title = forms.CharField(label=_("work"), max_length=200)
    scope = forms.ChoiceField(
        label=_("scope"), choices=MaintenanceScope.choices, widget=forms.RadioSelect
    )
    hostnames = forms.CharField(
        label=_("nodes"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("Hostnames, separated by spaces, commas or lines."),
    )
    rack = forms.ModelChoiceField(
        label=_("rack"), queryset=Rack.objects.select_related("site"), required=False
    )
    switch = forms.ModelChoiceField(
        label=_("switch"), queryset=Switch.objects.select_related("site"), required=False
    )
    start = forms.DateTimeField(
        label=_("starts (site time)"),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"],
    )
    end = forms.DateTimeField(
        label=_("ends (site time)"),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"],
    )
    notice_days = forms.IntegerField(
        label=_("tell customers (days ahead)"), min_value=0, max_value=90
    )
    override_reason = forms.CharField(
        label=_("reason for working over bookings"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_(
            "Only when the window covers active bookings: it then counts as unplanned "
            "downtime for the customers' SLA credits."
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["notice_days"].initial = settings.PORTAL_MAINTENANCE_NOTICE_DAYS
        self.fields["switch"].label_from_instance = lambda s: f"{s.site.code}/{s.name}"  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        site: Site | None = data.get("site")
        scope = data.get("scope")
        if site is not None:
            for name in ("start", "end"):
                value = data.get(name)
                if value is not None:  # typed in the site's zone, read in the page's
                    naive = timezone.make_naive(value) if timezone.is_aware(value) else value
                    data[name] = timezone.make_aware(naive, site.tzinfo)
        if scope == MaintenanceScope.NODES:
            names = _split_hostnames(data.get("hostnames", ""))
            if not names:
                self.add_error("hostnames", _("Name at least one node."))
            else:
                found = dict(Node.objects.filter(hostname__in=names).values_list("hostname", "pk"))
                missing = [n for n in names if n not in found]
                if missing:
                    self.add_error(
                        "hostnames",
                        _("No such node: %(names)s.") % {"names": ", ".join(missing)},
                    )
                data["node_ids"] = sorted(found.values())
        elif scope == MaintenanceScope.RACK and not data.get("rack"):
            self.add_error("rack", _("Choose the rack."))
        elif scope == MaintenanceScope.SWITCH and not data.get("switch"):
            self.add_error("switch", _("Choose the switch."))
        for name in ("rack", "switch"):
            obj = data.get(name)
            if obj is not None and site is not None and obj.site_id != site.pk and scope == name:
                self.add_error(name, _("It is in another site."))
        return data


class ReasonForm(forms.Form):
    reason = forms.CharField(label=_("why"), max_length=500)


class ReportForm(forms.Form):
    first = forms.DateField(
        label=_("from"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    last = forms.DateField(
        label=_("to"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    by = forms.ChoiceField(
        label=_("by"), choices=[("day", _("day")), ("month", _("month"))], required=False
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        first, last = data.get("first"), data.get("last")
        if first and last and last < first:
            raise forms.ValidationError(_("The end comes before the start."))
        if first and last and (last - first).days > 731:
            raise forms.ValidationError(_("Choose at most two years."))
        return data
