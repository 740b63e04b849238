"""Forms for the account pages: they parse and check input; services decide."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import PasswordResetForm
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from accounts.models import (
    COUNTRY_CHOICES,
    FapiaoType,
    Invitation,
    MemberRole,
    Organisation,
    tax_id_normalise,
    tax_id_problem,
)
from core.forms import NameField

UserModel = get_user_model()


class SignupForm(forms.Form):
    email = forms.EmailField(
        label=_("Email"),
        max_length=254,
        widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}),
        help_text=_("You log in with this address; we send a link to verify it."),
    )
    full_name = NameField(
        label=_("Full name"),
        max_length=150,
        widget=forms.TextInput(attrs={"autocomplete": "name"}),
    )
    company_name = NameField(
        label=_("Company name"),
        max_length=200,
        widget=forms.TextInput(attrs={"autocomplete": "organization"}),
        help_text=_("We create your company's organisation with you as its owner."),
    )
    password1 = forms.CharField(
        label=_("Password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )
    password2 = forms.CharField(
        label=_("Password again"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def __init__(self, *args: Any, invitation: Invitation | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.invitation = invitation
        if invitation is not None:
            # The address comes from the invitation; the click on its link proved it.
            self.fields["email"].initial = invitation.email
            self.fields["email"].disabled = True
            self.fields["email"].help_text = _("The address this invitation was sent to.")
            del self.fields["company_name"]

    def clean_email(self) -> str:
        return self.cleaned_data["email"].strip().lower()

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        password1, password2 = data.get("password1"), data.get("password2")
        if password1 and password2 and password1 != password2:
            self.add_error("password2", _("The two passwords differ."))
        if password1 and "password1" not in self.errors:
            email = data.get("email", "")
            candidate = UserModel(username=email, email=email, first_name=data.get("full_name", ""))
            try:
                password_validation.validate_password(password1, user=candidate)
            except ValidationError as exc:
                self.add_error("password1", exc)
        return data


class LoginForm(forms.Form):
    # A text field, not an email field: staff log in here with their usernames too.
    email = forms.CharField(
        label=_("Email"),
        max_length=254,
        widget=forms.TextInput(
            attrs={"autocomplete": "username", "inputmode": "email", "autofocus": True}
        ),
    )
    password = forms.CharField(
        label=_("Password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def clean_email(self) -> str:
        return self.cleaned_data["email"].strip()


class OrganisationForm(forms.Form):
    name = NameField(
        label=_("Name"),
        max_length=200,
        help_text=_("How we address your organisation."),
    )
    legal_name = NameField(
        label=_("Legal name"),
        max_length=200,
        required=False,
        help_text=_("As registered: printed on quotes, contracts and the fapiao."),
    )
    country = forms.ChoiceField(label=_("Country"), choices=COUNTRY_CHOICES)
    tax_id = forms.CharField(
        label=_("Tax ID"),
        max_length=64,
        required=False,
        help_text=_(
            "Printed on contracts and the fapiao. In China: the 18-character unified social "
            "credit code (统一社会信用代码); in Hong Kong: the 8-digit business registration "
            "number."
        ),
    )
    billing_address = forms.CharField(
        label=_("Billing address"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("The registered address of your legal entity, printed on contracts."),
    )
    billing_email = forms.EmailField(
        label=_("Billing email"),
        required=False,
        help_text=_("Where invoices and payment reminders go."),
    )
    fapiao_type = forms.ChoiceField(
        label=_("Fapiao type"), choices=FapiaoType.choices, required=False
    )
    fapiao_title = forms.CharField(
        label=_("Fapiao title"),
        max_length=200,
        required=False,
        help_text=_("The buyer's name on the fapiao; the legal name when empty."),
    )
    fapiao_address_phone = forms.CharField(
        label=_("Registered address and phone"),
        max_length=300,
        required=False,
        help_text=_("For a special VAT fapiao (专票)."),
    )
    fapiao_bank_account = forms.CharField(
        label=_("Bank and account number"),
        max_length=300,
        required=False,
        help_text=_("For a special VAT fapiao (专票)."),
    )
    auto_renew = forms.BooleanField(
        label=_("Renew rentals automatically"),
        required=False,
        help_text=_(
            "Before a rental ends we offer a renewal quote for the same nodes; when this is "
            "on and the same nodes are free, it is accepted for you at once."
        ),
    )

    @classmethod
    def for_organisation(cls, organisation: Organisation, data: Any = None) -> OrganisationForm:
        initial = {
            "name": organisation.name,
            "legal_name": organisation.legal_name,
            "country": organisation.country,
            "tax_id": organisation.tax_id,
            "billing_address": organisation.billing_address,
            "billing_email": organisation.billing_email,
            "fapiao_type": organisation.fapiao_type,
            "fapiao_title": organisation.fapiao_title,
            "fapiao_address_phone": organisation.fapiao_address_phone,
            "fapiao_bank_account": organisation.fapiao_bank_account,
            "auto_renew": organisation.auto_renew,
        }
        form = cls(data, initial=initial)
        known = dict(COUNTRY_CHOICES)
        if organisation.country and organisation.country not in known:
            field = form.fields["country"]
            field.choices = [(organisation.country, organisation.country), *COUNTRY_CHOICES]
        return form

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        country = data.get("country")
        if country and "tax_id" in data:
            data["tax_id"] = tax_id_normalise(country=country, tax_id=data["tax_id"])
            problem = tax_id_problem(country=country, tax_id=data["tax_id"])
            if problem:
                self.add_error("tax_id", problem)
        return data


class InviteForm(forms.Form):
    email = forms.EmailField(label=_("Email"), max_length=254)
    role = forms.ChoiceField(label=_("Role"), choices=MemberRole.choices, initial=MemberRole.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=MemberRole.choices)


class SshKeyForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        required=False,
        help_text=_("For example “Li Wei's laptop”; the key's comment when left empty."),
    )
    public_key = forms.CharField(
        label=_("Public key"),
        max_length=16_384,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "class": "code"}),
        help_text=_(
            "One line from your .pub file, e.g. ~/.ssh/id_ed25519.pub. Accepted: ed25519, "
            "ECDSA, or RSA of at least 3072 bits."
        ),
    )


class SwitchForm(forms.Form):
    organisation = forms.IntegerField(widget=forms.HiddenInput)


class PortalPasswordResetForm(PasswordResetForm):
    email = forms.EmailField(
        label=_("Email"),
        max_length=254,
        widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}),
    )
