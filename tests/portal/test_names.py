"""Issue 9: names people type.

Point 16: emoji in organisation, customer and quote-contact names are refused at input
with a clear message (the PDFs' fonts have no emoji; we chose refusal over a colour emoji
font), in forms and in services alike. Point 17: a name longer than its field is refused
with a message, never cut silently."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from accounts import services as account_services
from accounts.forms import OrganisationForm, SignupForm
from accounts.models import Organisation
from billing.quotes import services as qs
from core.errors import DomainError
from core.validators import has_emoji

pytestmark = pytest.mark.django_db

EMOJI_NAMES = ["Pearl River AI 🚀", "珠江智算 🇨🇳", "Li Wei 👩‍💻", "Lab ☁️"]


@pytest.mark.parametrize("name", EMOJI_NAMES)
def test_emoji_are_recognised(name):
    assert has_emoji(name)


@pytest.mark.parametrize(
    "name", ["深圳珠江智算科技有限公司", "Pearl River AI Lab™ (Shenzhen) – R&D", "Zoë Ñúñez"]
)
def test_ordinary_names_are_not_emoji(name):
    assert not has_emoji(name)


def test_signup_refuses_an_emoji_company_name_in_the_form_and_in_the_service():
    form = SignupForm(
        data={
            "email": "a@example.com",
            "full_name": "Li Wei",
            "company_name": "Pearl River AI 🚀",
            "password1": "Correct-horse-battery-42",
            "password2": "Correct-horse-battery-42",
        }
    )
    assert not form.is_valid()
    assert "Names cannot contain emoji" in " ".join(form.errors["company_name"])
    with pytest.raises(DomainError, match="company's name cannot contain emoji"):
        account_services.signup_create(
            email="a@example.com",
            password="Correct-horse-battery-42",
            full_name="Li Wei",
            company_name="Pearl River AI 🚀",
        )
    assert not get_user_model().objects.exists()


def test_signup_refuses_a_company_name_longer_than_its_field_never_cuts_it():
    with pytest.raises(DomainError, match="at most 200 characters; this one has 201"):
        account_services.signup_create(
            email="a@example.com",
            password="Correct-horse-battery-42",
            full_name="Li Wei",
            company_name="A" * 201,
        )
    with pytest.raises(DomainError, match="full name can be at most 150 characters"):
        account_services.signup_create(
            email="a@example.com",
            password="Correct-horse-battery-42",
            full_name="W" * 151,
            company_name="Lab",
        )
    assert not Organisation.objects.exists()
    form = OrganisationForm(data={"name": "B" * 201, "country": "CN"})
    assert not form.is_valid() and "at most 200 characters" in " ".join(form.errors["name"])


def test_organisation_details_refuse_emoji(demo):
    org = demo["org"]
    with pytest.raises(DomainError, match="cannot contain emoji"):
        account_services.organisation_update(
            organisation=org,
            actor=demo["customer"],
            name="Pearl River 🦄",
            legal_name=org.legal_name,
            tax_id=org.tax_id,
            billing_address=org.billing_address,
            country=org.country,
            billing_email=org.billing_email,
        )
    org.refresh_from_db()
    assert org.name == "Pearl River AI Lab"


def _quote(demo, contact_name):
    return qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name=contact_name,
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=demo["start"],
        items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
    )


def test_a_quote_contact_name_with_emoji_or_too_long_is_refused(demo):
    with pytest.raises(DomainError, match="contact name cannot contain emoji"):
        _quote(demo, "Li Wei 😀")
    with pytest.raises(DomainError, match="contact name can be at most 200 characters"):
        _quote(demo, "L" * 201)
    assert _quote(demo, "  李   伟 ").contact_name == "李 伟"
