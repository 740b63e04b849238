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


# --- Issue 25, point 8: text that prints otherwise than typed, or prints nothing -----------

TRICK_NAMES = {
    "bidi": ["Acme\u202eLtd", "Pearl \u2067River\u2069 Lab", "\u200fLab"],
    "invisible": ["\u200b\u200b", "\u200b \ufeff", "\u0301\u0301"],
    "marks": ["Z" + "\u0336\u0334\u0338\u0337\u0335" * 4 + "algo"],
    "control": ["Lab\x00", "Lab\x1b[31m"],
}


@pytest.mark.parametrize(
    ("problem", "name"), [(p, n) for p, names in TRICK_NAMES.items() for n in names]
)
def test_trick_names_are_refused_everywhere_with_a_message(problem, name):
    from core.validators import name_check, name_problem

    assert name_problem(name) == problem
    with pytest.raises(DomainError, match="The organisation's name is refused: "):
        name_check(name, max_length=200, label="The organisation's name")
    form = OrganisationForm(data={"name": name, "country": "CN"})
    assert not form.is_valid() and form.errors["name"]


@pytest.mark.parametrize(
    "name",
    [
        "Nguyễn Văn An",
        "Nguye\u0302\u0303n",
        "क्षत्रिय",
        "བོད་སྐད",
        "深圳珠江智算科技有限公司",
        "O'Brien & Söhne",
    ],
)
def test_real_names_with_accents_and_marks_pass(name):
    from core.validators import name_check, name_problem

    assert name_problem(name) is None
    assert name_check(name, max_length=200, label="x")


def test_signup_refuses_a_bidi_override_and_stores_nothing():
    with pytest.raises(DomainError, match=r"company's name is refused: .*direction"):
        account_services.signup_create(
            email="b@example.com",
            password="Correct-horse-battery-42",
            full_name="Li Wei",
            company_name="Acme\u202egnp.exe",
        )
    assert not get_user_model().objects.exists()


def test_name_inputs_carry_no_maxlength_so_the_browser_never_cuts_a_paste(client):
    html = client.get("/en/accounts/signup/").content.decode()
    assert 'name="company_name"' in html and 'name="full_name"' in html
    for field in ("company_name", "full_name"):
        tag = html.split(f'name="{field}"')[1].split(">")[0]
        assert "maxlength" not in tag, tag
    # The form refuses the long name with its length, instead.
    form = SignupForm(
        data={
            "email": "c@example.com",
            "full_name": "Li Wei",
            "company_name": "C" * 250,
            "password1": "Correct-horse-battery-42",
            "password2": "Correct-horse-battery-42",
        }
    )
    assert not form.is_valid()
    assert "at most 200 characters (it has 250)" in " ".join(form.errors["company_name"])
