"""Forms of the dashboard's API pages: a new API key, a new webhook endpoint."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.api_keys import API_FAMILIES
from accounts.models import ApiScope
from accounts.webhooks import EVENT_TYPES

SCOPE_CHOICES = [("", _("no access")), *ApiScope.choices]


class ApiKeyForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100)
    expires_days = forms.IntegerField(
        label=_("Expires after (days)"),
        min_value=1,
        max_value=3650,
        required=False,
        help_text=_("Empty: the key does not expire."),
    )
    allowed_ips = forms.CharField(
        label=_("IP allow-list"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Addresses or networks (e.g. 203.0.113.0/24), one per line; empty: any."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for family, label in API_FAMILIES.items():
            self.fields[f"scope_{family}"] = forms.ChoiceField(
                label=label, choices=SCOPE_CHOICES, required=False, initial=ApiScope.READ
            )

    def scopes(self) -> dict[str, str]:
        return {
            family: self.cleaned_data[f"scope_{family}"]
            for family in API_FAMILIES
            if self.cleaned_data.get(f"scope_{family}")
        }


class WebhookEndpointForm(forms.Form):
    url = forms.URLField(label=_("URL"), max_length=500, assume_scheme="https")
    description = forms.CharField(label=_("Description"), max_length=200, required=False)
    event_types = forms.MultipleChoiceField(
        label=_("Events"),
        choices=[(code, f"{code}: {label}") for code, label in EVENT_TYPES.items()],
        widget=forms.CheckboxSelectMultiple,
    )
