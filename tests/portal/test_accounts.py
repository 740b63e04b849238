"""Accounts: sign-up, verification, login throttling, password reset, organisations,
members, roles and invitations, seen the way a customer sees them."""

import json
import re
import time
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import Argon2PasswordHasher
from django.core import signing
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override

from accounts import selectors, services, throttle, tokens
from accounts.models import CustomerProfile, Invitation, MemberRole, Membership, Organisation
from core import jobs
from core.errors import DomainError
from portal.celery import app

pytestmark = pytest.mark.django_db

User = get_user_model()
PASSWORD = "Correct-horse-battery-42"


# --- Helpers ----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def private_throttle(monkeypatch):
    """Each test counts failures under its own keys: the Redis cache is shared."""
    monkeypatch.setattr(throttle, "KEY_PREFIX", f"test:{uuid.uuid4().hex}:")


@pytest.fixture
def commit(django_capture_on_commit_callbacks, eager_celery):
    """Run what a request leaves for after the commit: the email tasks, at once (eager)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def url(name, *args, **kwargs):
    with override("en"):
        return reverse(name, args=args, kwargs=kwargs)


def new_client(ip=None):
    return Client(REMOTE_ADDR=ip or f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.7")


def text(response):
    return response.content.decode()


def followed_text(client, response):
    assert response.status_code == 302, text(response)[:2000]
    return text(client.get(response["Location"]))


def link_in(message):
    found = re.search(r"https?://\S+", message.body)
    assert found, message.body
    return found.group(0).removeprefix(settings.PORTAL_BASE_URL)


def logged_in_user_id(client):
    return client.session.get("_auth_user_id")


def customer(email, *, org=None, role=MemberRole.OWNER, org_name="Acme AI", verified=True):
    user = User.objects.create_user(username=email, email=email, password=PASSWORD)
    user.first_name = email.split("@")[0].title()
    user.save()
    CustomerProfile.objects.create(
        user=user, email_verified_at=timezone.now() if verified else None
    )
    org = org or Organisation.objects.create(name=org_name)
    Membership.objects.create(user=user, organisation=org, role=role)
    return user, org


def logged_in(user):
    c = new_client()
    c.force_login(user, backend="accounts.backends.EmailBackend")
    return c


def signup(client, commit, **overrides):
    data = {
        "email": "li.wei@example.com",
        "full_name": "Li Wei",
        "company_name": "Pearl River AI",
        "password1": PASSWORD,
        "password2": PASSWORD,
    }
    data.update(overrides)
    with commit():
        return client.post(url("accounts:signup"), data)


def login(client, email, password=PASSWORD, **extra):
    return client.post(url("accounts:login"), {"email": email, "password": password, **extra})


# --- Sign-up and verification -----------------------------------------------------------


def test_signup_creates_the_user_the_organisation_and_sends_a_verification_email(
    commit, mailoutbox
):
    c = new_client()
    response = signup(c, commit, email="Li.Wei@Example.com")
    page = followed_text(c, response)
    assert "We sent a link to li.wei@example.com" in page

    user = User.objects.get()
    assert user.username == user.email == "li.wei@example.com"
    assert user.password.startswith("argon2")
    assert user.check_password(PASSWORD)
    assert user.get_full_name() == "Li Wei"
    membership = Membership.objects.get(user=user)
    assert membership.organisation.name == "Pearl River AI"
    assert membership.role == MemberRole.OWNER
    assert user.customer_profile.email_verified_at is None
    assert logged_in_user_id(c) is None  # not before the address is verified

    [mail] = mailoutbox
    assert mail.to == ["li.wei@example.com"]
    assert "Verify your email" in mail.subject
    assert "/en/accounts/verify/" in link_in(mail)
    assert "3 days" in mail.body


def test_cannot_log_in_before_verifying_and_can_have_the_email_sent_again(commit, mailoutbox):
    signup(new_client(), commit)
    c = new_client()
    response = login(c, "li.wei@example.com")
    page = followed_text(c, response)
    assert "Your email address is not verified yet" in page
    assert "Resend the email" in page
    assert logged_in_user_id(c) is None

    with commit():
        page = followed_text(c, c.post(url("accounts:verify_resend")))
    assert "We sent a new link to li.wei@example.com" in page
    assert len(mailoutbox) == 2
    # Asking again at once sends nothing more.
    with commit():
        page = followed_text(c, c.post(url("accounts:verify_resend")))
    assert "less than a minute ago" in page
    assert len(mailoutbox) == 2


def test_the_verification_link_verifies_and_logs_in_once(commit, mailoutbox):
    browser = new_client()
    signup(browser, commit)
    link = link_in(mailoutbox[0])

    response = browser.get(link)  # the browser that signed up
    assert response["Location"] == url("accounts:organisation_settings")
    user = User.objects.get()
    assert logged_in_user_id(browser) == str(user.pk)
    assert CustomerProfile.objects.get(user=user).email_verified_at is not None
    assert "your email address is verified" in text(browser.get(response["Location"]))

    # Afterwards the password logs in, and the link does not log anyone in again.
    assert login(new_client(), "li.wei@example.com").status_code == 302
    other = new_client()
    assert "already verified" in followed_text(other, other.get(link))
    assert logged_in_user_id(other) is None


def test_a_forwarded_verification_link_verifies_but_logs_nobody_in(commit, mailoutbox):
    # Login CSRF: a link opened in another browser must not sign that browser into the
    # account of whoever signed up.
    signup(new_client(), commit)
    other = new_client()
    response = other.get(link_in(mailoutbox[0]))
    assert response["Location"] == url("accounts:login")
    assert logged_in_user_id(other) is None
    assert User.objects.get().customer_profile.email_verified_at is not None
    assert login(new_client(), "li.wei@example.com").status_code == 302


def test_a_tampered_verification_link_is_refused(commit, mailoutbox):
    signup(new_client(), commit)
    link = link_in(mailoutbox[0])
    token = link.rstrip("/").rsplit("/", 1)[1]
    tampered = link.replace(token, token[:-3] + ("AAA" if token[-3:] != "AAA" else "BBB"))
    c = new_client()
    response = c.get(tampered)
    assert response.status_code == 400
    assert "This verification link is not valid" in text(response)
    assert logged_in_user_id(c) is None
    assert User.objects.get().customer_profile.email_verified_at is None


def test_an_expired_verification_link_is_refused(commit, monkeypatch):
    c = new_client()
    signup(c, commit)
    user = User.objects.get()
    four_days_ago = time.time() - 4 * 24 * 3600
    with monkeypatch.context() as m:
        m.setattr(signing.time, "time", lambda: four_days_ago)
        token = tokens.email_verification_token(user_id=user.pk, email=user.email)
    response = c.get(url("accounts:verify", token))
    assert response.status_code == 400
    assert "This verification link has expired" in text(response)
    assert logged_in_user_id(c) is None
    # A link signed just under three days ago still works.
    almost_three_days_ago = time.time() - 3 * 24 * 3600 + 60
    with monkeypatch.context() as m:
        m.setattr(signing.time, "time", lambda: almost_three_days_ago)
        token = tokens.email_verification_token(user_id=user.pk, email=user.email)
    assert c.get(url("accounts:verify", token)).status_code == 302
    assert logged_in_user_id(c) == str(user.pk)


def test_a_duplicate_email_creates_nothing_and_reveals_nothing(commit, mailoutbox):
    signup(new_client(), commit)
    fresh = signup(new_client(), commit, email="new.person@example.com", company_name="New")
    taken = signup(new_client(), commit, email="LI.WEI@example.com", company_name="Other")
    # The page answers exactly as for a new account: which addresses exist stays private.
    assert taken.status_code == fresh.status_code == 302
    assert taken["Location"] == fresh["Location"]
    assert User.objects.filter(username__iexact="li.wei@example.com").count() == 1
    assert not Organisation.objects.filter(name="Other").exists()
    # The address's owner is told by email instead.
    notice = mailoutbox[-1]
    assert notice.to == ["li.wei@example.com"]
    assert "already has an account" in notice.body
    assert url("accounts:password_reset") in notice.body


def test_signup_shows_password_problems_next_to_the_fields(commit):
    c = new_client()
    response = signup(c, commit, password1=PASSWORD, password2=PASSWORD + "x")
    assert response.status_code == 400
    assert "The two passwords differ." in text(response)
    response = signup(c, commit, password1="password", password2="password")
    assert "This password is too common." in text(response)
    assert not User.objects.exists()


# --- Login throttling -------------------------------------------------------------------


ATTACKER_IP = "203.0.113.9"
OWNER_IP = "198.51.100.4"


def test_an_attackers_failures_lock_their_pair_but_not_the_owner_on_another_client(
    monkeypatch,
):
    user, org = customer("ops@acme.example")
    attacker = new_client(ATTACKER_IP)
    for _ in range(4):
        response = login(attacker, "ops@acme.example", "wrong")
        assert response.status_code == 400
        assert "The email address or the password is not right." in text(response)
    fifth = login(attacker, "ops@acme.example", "wrong")
    assert fifth.status_code == 429
    assert "Too many failed attempts; try again in 15 minutes." in text(fifth)

    # The (account, client) pair is locked: from there, the right password is refused too,
    # whatever the case of the address.
    sixth = login(attacker, "OPS@acme.example", PASSWORD)
    assert sixth.status_code == 429
    assert "Too many failed attempts; try again in 15 minutes." in text(sixth)
    assert logged_in_user_id(attacker) is None

    # The owner, from their own client, logs in at once.
    owner = new_client(OWNER_IP)
    assert login(owner, "ops@acme.example", PASSWORD).status_code == 302
    assert logged_in_user_id(owner) == str(user.pk)
    # One account attacked does not lock the attacker's whole address either.
    customer("dev@acme.example", org=org)
    assert login(new_client(ATTACKER_IP), "dev@acme.example").status_code == 302

    # The pair's lock runs out after the lockout.
    start = time.time()
    monkeypatch.setattr(throttle, "now", lambda: start + 10 * 60)
    assert "try again in 5 minutes" in text(login(attacker, "ops@acme.example", PASSWORD))
    monkeypatch.setattr(throttle, "now", lambda: start + 16 * 60)
    assert login(attacker, "ops@acme.example", PASSWORD).status_code == 302
    assert logged_in_user_id(attacker) == str(user.pk)


def test_a_client_failing_across_many_distinct_accounts_is_locked_for_new_accounts(settings):
    limit = settings.LOGIN_THROTTLE_IP_MAX_ACCOUNTS
    assert limit == 20  # the documented default
    victim, org = customer("victim@acme.example")
    customer("regular@acme.example", org=org)
    # Someone in the same office (behind the same address) logged in from there before.
    assert login(new_client(ATTACKER_IP), "regular@acme.example").status_code == 302

    attacker = new_client(ATTACKER_IP)
    for n in range(limit):
        assert login(attacker, f"guess{n}@acme.example", "wrong").status_code == 400
    # ``limit`` distinct accounts: not over the limit yet.
    assert throttle.lockout(account="victim@acme.example", ip=ATTACKER_IP) is None
    assert login(attacker, f"guess{limit}@acme.example", "wrong").status_code == 429

    # Over the limit: from this address, accounts that never logged in from it are refused,
    # the right password too, with a message that names the network, not the account.
    response = login(new_client(ATTACKER_IP), "victim@acme.example", PASSWORD)
    assert response.status_code == 429
    assert "Too many failed logins from your network; try again in 15 minutes." in text(response)
    # An account that has logged in from this address before is not kept out, and the
    # victim logs in from anywhere else.
    assert login(new_client(ATTACKER_IP), "regular@acme.example").status_code == 302
    elsewhere = new_client(OWNER_IP)
    assert login(elsewhere, "victim@acme.example").status_code == 302
    assert logged_in_user_id(elsewhere) == str(victim.pk)


def test_as_many_failures_against_one_account_never_lock_the_client(settings):
    limit = settings.LOGIN_THROTTLE_IP_MAX_ACCOUNTS
    _owner, org = customer("ops@acme.example")
    colleague, _ = customer("dev@acme.example", org=org)
    # Count every failure (no pair lock in the way): more failures than the per-address
    # limit, all against one account, are one account for that limit.
    settings.LOGIN_THROTTLE_MAX_FAILURES = 10 * limit
    attacker = new_client(ATTACKER_IP)
    for _ in range(limit + 5):
        assert login(attacker, "ops@acme.example", "wrong").status_code == 400
    assert throttle.lockout(account="dev@acme.example", ip=ATTACKER_IP) is None
    c = new_client(ATTACKER_IP)
    assert login(c, "dev@acme.example").status_code == 302  # never logged in from here
    assert logged_in_user_id(c) == str(colleague.pk)


def test_a_successful_login_clears_the_count_for_the_pair():
    customer("ops@acme.example")
    c = new_client(OWNER_IP)
    for _ in range(4):
        assert login(c, "ops@acme.example", "wrong").status_code == 400
    assert login(c, "ops@acme.example", PASSWORD).status_code == 302
    c = new_client(OWNER_IP)
    for _ in range(4):
        assert login(c, "ops@acme.example", "wrong").status_code == 400
    assert login(c, "ops@acme.example", PASSWORD).status_code == 302


def test_the_client_is_the_address_the_trusted_proxy_saw(settings, rf):
    request = rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.4")
    assert throttle.client_ip(request) == "10.0.0.2"  # no proxy trusted: the header is ignored
    settings.PORTAL_TRUSTED_PROXIES = 1  # one nginx or ALB, which appended what it saw
    assert throttle.client_ip(request) == "198.51.100.4"  # not the client's own "1.2.3.4"


def test_login_follows_a_local_next_but_not_another_site():
    customer("ops@acme.example")
    members = url("accounts:members")
    assert login(new_client(), "ops@acme.example", next=members)["Location"] == members
    away = login(new_client(), "ops@acme.example", next="https://evil.example/")
    assert away["Location"] == url("accounts:organisations")


def test_staff_log_in_with_their_username_and_logout_is_a_post():
    User.objects.create_user(username="sales", email="sales@example.com", password=PASSWORD)
    c = new_client()
    assert login(c, "sales")["Location"] == url("accounts:organisations")
    assert c.get(url("accounts:logout")).status_code == 405
    c.post(url("accounts:logout"))
    assert logged_in_user_id(c) is None


# --- Password reset ---------------------------------------------------------------------


def test_password_reset_answers_the_same_for_known_and_unknown_addresses(commit, mailoutbox):
    customer("ops@acme.example")
    c = new_client()
    with commit():
        known = c.post(url("accounts:password_reset"), {"email": "OPS@acme.example"})
    with commit():
        unknown = c.post(url("accounts:password_reset"), {"email": "nobody@acme.example"})
    assert known.status_code == unknown.status_code == 302
    assert known["Location"] == unknown["Location"]
    assert "If the address is known, we sent an email" in text(c.get(known["Location"]))
    [mail] = mailoutbox
    assert mail.to == ["ops@acme.example"]

    link = link_in(mail)
    assert mail.body.count(settings.PORTAL_BASE_URL) == 1  # an absolute link
    form_page = c.get(link, follow=True)
    assert "Choose a new password" in text(form_page)
    new_password = "Another-long-passphrase-77"
    done = c.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": new_password, "new_password2": new_password},
    )
    assert "Your new password is set" in followed_text(c, done)
    assert login(new_client(), "ops@acme.example", PASSWORD).status_code == 400
    assert login(new_client(), "ops@acme.example", new_password).status_code == 302
    # The link works once.
    assert "This link does not work" in text(c.get(link, follow=True))


def test_a_password_reset_verifies_an_unverified_address(commit, mailoutbox):
    signup(new_client(), commit)
    c = new_client()
    with commit():
        c.post(url("accounts:password_reset"), {"email": "li.wei@example.com"})
    form_page = c.get(link_in(mailoutbox[-1]), follow=True)
    c.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": PASSWORD + "!", "new_password2": PASSWORD + "!"},
    )
    assert login(new_client(), "li.wei@example.com", PASSWORD + "!").status_code == 302


# --- Organisation details ---------------------------------------------------------------


def test_owner_edits_the_details_and_the_chinese_tax_id_format_is_checked():
    owner, org = customer("boss@acme.example")
    c = logged_in(owner)
    page = c.get(url("accounts:organisation_settings"))
    assert page.status_code == 200
    data = {
        "name": "Acme AI",
        "legal_name": "深圳艾克米智能科技有限公司",
        "country": "CN",
        "tax_id": "91440300MA5DEMO001",  # contains an O
        "billing_address": "深圳市南山区科技园 1 号",
        "billing_email": "finance@acme.example",
    }
    response = c.post(url("accounts:organisation_settings"), data)
    assert response.status_code == 400
    assert re.search(r"field-tax_id has-error.*?unified social credit code", text(response), re.S)
    org.refresh_from_db()
    assert org.tax_id == ""

    data["tax_id"] = "91440300MA5D1234X8"  # the check character (GB 32100-2015) is wrong
    response = c.post(url("accounts:organisation_settings"), data)
    assert response.status_code == 400
    assert re.search(r"field-tax_id has-error.*?typing error", text(response), re.S)

    data["tax_id"] = "91440300 ma5d1234x7"  # spaces and lower case are tidied
    response = c.post(url("accounts:organisation_settings"), data)
    assert "The organisation&#x27;s details are saved." in followed_text(c, response)
    org.refresh_from_db()
    assert (org.legal_name, org.tax_id, org.billing_email) == (
        "深圳艾克米智能科技有限公司",
        "91440300MA5D1234X7",
        "finance@acme.example",
    )

    # Other countries' tax numbers are taken as given.
    data.update(country="SG", tax_id="201912345K")
    c.post(url("accounts:organisation_settings"), data)
    org.refresh_from_db()
    assert (org.country, org.tax_id) == ("SG", "201912345K")


def test_billing_members_edit_the_details_plain_members_cannot():
    _owner, org = customer("boss@acme.example")
    billing, _ = customer("money@acme.example", org=org, role=MemberRole.BILLING)
    member, _ = customer("dev@acme.example", org=org, role=MemberRole.MEMBER)
    assert logged_in(billing).get(url("accounts:organisation_settings")).status_code == 200
    c = logged_in(member)
    response = c.get(url("accounts:organisation_settings"))
    assert response.status_code == 403
    assert "your role in Acme AI is member" in text(response)
    response = c.post(url("accounts:organisation_settings"), {"name": "Hacked", "country": "CN"})
    assert response.status_code == 403
    org.refresh_from_db()
    assert org.name == "Acme AI"
    with override("en"), pytest.raises(DomainError, match="Only owners and billing members"):
        services.organisation_update(
            organisation=org,
            actor=member,
            name="Hacked",
            legal_name="",
            tax_id="",
            billing_address="",
            country="CN",
            billing_email="",
        )


# --- Members and invitations ------------------------------------------------------------


def invite(client, commit, email, role=MemberRole.MEMBER):
    with commit():
        return client.post(url("accounts:invite"), {"email": email, "role": role})


def test_an_invited_person_signs_up_through_the_link_and_joins_with_the_role(commit, mailoutbox):
    owner, _org = customer("boss@acme.example")
    boss = logged_in(owner)
    response = invite(boss, commit, "New.Hire@acme.example", MemberRole.BILLING)
    assert "We sent an invitation to new.hire@acme.example" in followed_text(boss, response)
    [mail] = mailoutbox
    assert mail.to == ["new.hire@acme.example"]
    assert "Acme AI" in mail.subject
    link = link_in(mail)
    invitation = Invitation.objects.get()
    assert invitation.token in link
    validity = invitation.expires_at - invitation.created_at
    assert timedelta(days=7) - timedelta(seconds=1) < validity <= timedelta(days=7)
    assert (invitation.invited_by, invitation.role) == (owner, MemberRole.BILLING)

    c = new_client()
    page = text(c.get(link))
    assert "Invitation to Acme AI" in page
    signup_page = c.get(url("accounts:signup") + f"?invitation={invitation.token}")
    assert 'value="new.hire@acme.example"' in text(signup_page)
    assert "company_name" not in text(signup_page)
    with commit():
        response = c.post(
            url("accounts:signup"),
            {
                "invitation": invitation.token,
                "email": "someone.else@example.com",  # ignored: the invitation decides
                "full_name": "New Hire",
                "password1": PASSWORD,
                "password2": PASSWORD,
            },
        )
    assert "You are now a member of Acme AI" in followed_text(c, response)
    user = User.objects.get(username="new.hire@acme.example")
    assert logged_in_user_id(c) == str(user.pk)
    assert Membership.objects.get(user=user).role == MemberRole.BILLING
    assert selectors.email_verified(user)
    assert len(mailoutbox) == 1  # no verification email: the link proved the address
    invitation.refresh_from_db()
    assert invitation.accepted_by == user

    # The link works once.
    again = new_client().get(link)
    assert again.status_code == 410
    assert "This invitation to Acme AI has already been used" in text(again)
    # The members page lists the new member.
    assert "New Hire" in text(boss.get(url("accounts:members")))


def test_a_logged_in_user_with_the_invited_email_accepts(commit, mailoutbox):
    owner, org = customer("boss@acme.example")
    elsewhere, _ = customer("lin@other.example", org_name="Other Lab")
    invite(logged_in(owner), commit, "LIN@other.example", MemberRole.MEMBER)
    c = logged_in(elsewhere)
    link = link_in(mailoutbox[0])
    assert "Accept the invitation" in text(c.get(link))
    response = c.post(link)
    assert "You are now a member of Acme AI" in followed_text(c, response)
    assert Membership.objects.get(user=elsewhere, organisation=org).role == MemberRole.MEMBER
    # The organisation just joined is the active one now.
    assert "Acme AI" in text(c.get(url("accounts:members")))


def test_an_invitation_opened_by_someone_logged_in_with_another_email_is_refused(
    commit, mailoutbox
):
    owner_b, org_b = customer("boss@b.example", org_name="Org B")
    member_a, _org_a = customer("dev@a.example", org_name="Org A", role=MemberRole.MEMBER)
    invite(logged_in(owner_b), commit, "friend@b.example")
    link = link_in(mailoutbox[0])
    c = logged_in(member_a)
    response = c.get(link)
    assert response.status_code == 403
    assert "This invitation is for friend@b.example, but you are logged in as dev@a.example" in (
        text(response)
    )
    assert c.post(link).status_code == 403
    assert not Membership.objects.filter(user=member_a, organisation=org_b).exists()
    assert Invitation.objects.get().accepted_at is None


def test_expired_withdrawn_and_unknown_invitations_say_so(commit, mailoutbox):
    owner, _org = customer("boss@acme.example")
    boss = logged_in(owner)
    invite(boss, commit, "late@acme.example")
    invitation = Invitation.objects.get()
    Invitation.objects.filter(pk=invitation.pk).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    response = new_client().get(link_in(mailoutbox[0]))
    assert response.status_code == 410
    assert "This invitation to Acme AI expired on" in text(response)

    invite(boss, commit, "late@acme.example")  # a fresh one withdraws the old
    fresh = Invitation.objects.get(revoked_at__isnull=True)
    boss.post(url("accounts:invitation_revoke", fresh.pk))
    response = new_client().get(url("accounts:invitation", fresh.token))
    assert "This invitation to Acme AI was withdrawn" in text(response)

    response = new_client().get(url("accounts:invitation", "not-a-real-token"))
    assert response.status_code == 404
    assert "This invitation link is not valid" in text(response)


def test_inviting_an_existing_member_is_refused_next_to_the_email(commit):
    owner, org = customer("boss@acme.example")
    customer("dev@acme.example", org=org, role=MemberRole.MEMBER)
    response = invite(logged_in(owner), commit, "DEV@acme.example")
    assert response.status_code == 400
    assert re.search(
        r"field-email has-error.*?dev@acme.example is already a member", text(response), re.S
    )
    assert not Invitation.objects.exists()


def test_plain_members_cannot_invite_or_manage_members(commit, mailoutbox):
    owner, org = customer("boss@acme.example")
    member, _ = customer("dev@acme.example", org=org, role=MemberRole.MEMBER)
    owner_membership = Membership.objects.get(user=owner)
    c = logged_in(member)
    page = text(c.get(url("accounts:members")))
    assert "boss@acme.example" in page and "Invite someone" not in page
    response = invite(c, commit, "friend@example.com")
    assert response.status_code == 403
    assert "your role in Acme AI is member" in text(response)
    assert (
        c.post(url("accounts:member_role", owner_membership.pk), {"role": "member"}).status_code
        == 403
    )
    assert c.post(url("accounts:member_remove", owner_membership.pk)).status_code == 403
    assert not Invitation.objects.exists() and not mailoutbox
    owner_membership.refresh_from_db()
    assert owner_membership.role == MemberRole.OWNER
    with override("en"), pytest.raises(DomainError, match="Only an owner can invite"):
        services.invitation_create(
            organisation=org, email="x@example.com", role=MemberRole.MEMBER, actor=member
        )


def test_owners_change_roles_and_remove_members_but_never_the_last_owner():
    owner, org = customer("boss@acme.example")
    dev, _ = customer("dev@acme.example", org=org, role=MemberRole.MEMBER)
    boss = logged_in(owner)
    mine = Membership.objects.get(user=owner)
    theirs = Membership.objects.get(user=dev)

    page = followed_text(boss, boss.post(url("accounts:member_role", mine.pk), {"role": "member"}))
    assert "is the last owner of Acme AI and keeps the owner role" in page
    page = followed_text(boss, boss.post(url("accounts:member_remove", mine.pk)))
    assert "is the last owner of Acme AI and cannot be removed" in page
    mine.refresh_from_db()
    assert mine.role == MemberRole.OWNER

    page = followed_text(boss, boss.post(url("accounts:member_role", theirs.pk), {"role": "owner"}))
    assert "Dev is now owner" in page
    # With a second owner, the first may step down.
    boss.post(url("accounts:member_role", mine.pk), {"role": "billing"})
    mine.refresh_from_db()
    assert mine.role == MemberRole.BILLING

    dev_client = logged_in(dev)
    page = followed_text(dev_client, dev_client.post(url("accounts:member_remove", mine.pk)))
    assert "Boss is no longer a member" in page
    assert list(org.memberships.values_list("user__username", "role")) == [
        ("dev@acme.example", "owner")
    ]


def test_another_organisations_members_and_invitations_answer_404(commit):
    owner_a, _org_a = customer("boss@a.example", org_name="Org A")
    owner_b, org_b = customer("boss@b.example", org_name="Org B")
    invite(logged_in(owner_b), commit, "friend@b.example")
    theirs = Membership.objects.get(user=owner_b)
    c = logged_in(owner_a)
    assert c.post(url("accounts:member_role", theirs.pk), {"role": "member"}).status_code == 404
    assert c.post(url("accounts:member_remove", theirs.pk)).status_code == 404
    invitation = Invitation.objects.get()
    assert c.post(url("accounts:invitation_revoke", invitation.pk)).status_code == 404
    assert "boss@b.example" not in text(c.get(url("accounts:members")))
    # Switching to an organisation one does not belong to is not possible either.
    assert (
        c.post(url("accounts:organisation_switch"), {"organisation": org_b.pk}).status_code == 404
    )
    theirs.refresh_from_db()
    assert theirs.role == MemberRole.OWNER


def test_the_active_organisation_switcher(rf):
    user, org_b = customer("boss@acme.example", org_name="Beta Lab")
    org_a = Organisation.objects.create(name="Alpha Lab")
    Membership.objects.create(user=user, organisation=org_a, role=MemberRole.MEMBER)
    c = logged_in(user)
    assert "Alpha Lab" in text(c.get(url("accounts:members")))  # first by name
    response = c.post(
        url("accounts:organisation_switch"),
        {"organisation": org_b.pk, "next": url("accounts:members")},
    )
    assert response["Location"] == url("accounts:members")
    page = text(c.get(response["Location"]))
    assert "Beta Lab" in page and "Invite someone" in page  # owner there

    request = rf.get("/")
    request.user = user
    request.session = {selectors.SESSION_KEY: org_b.pk}
    assert selectors.current_organisation(request) == org_b
    Membership.objects.filter(user=user, organisation=org_b).delete()
    request = rf.get("/")
    request.user = user
    request.session = {selectors.SESSION_KEY: org_b.pk}
    assert selectors.current_organisation(request) == org_a  # no longer a member of B


def test_customer_pages_need_a_verified_member():
    members = url("accounts:members")
    response = new_client().get(members)
    assert response["Location"] == f"{url('accounts:login')}?next={members}"

    loner = User.objects.create_user(username="loner@example.com", email="loner@example.com")
    response = logged_in(loner).get(members)
    assert response.status_code == 403
    assert "does not belong to any organisation" in text(response)

    unverified, _ = customer("new@acme.example", verified=False)
    c = logged_in(unverified)
    response = c.get(members)
    assert response["Location"].startswith(url("accounts:login"))
    assert logged_in_user_id(c) is None


def test_the_members_page_query_count_does_not_grow_with_members(
    django_assert_max_num_queries, commit
):
    owner, org = customer("boss@acme.example")
    for n in range(12):
        customer(f"dev{n}@acme.example", org=org, role=MemberRole.MEMBER)
    boss = logged_in(owner)
    for n in range(5):
        invite(boss, commit, f"new{n}@acme.example")
    with django_assert_max_num_queries(6):
        response = boss.get(url("accounts:members"))
    assert text(response).count("<tr>") == 1 + 13 + 1 + 5


def test_the_admin_login_is_throttled_by_pair_too():
    root = User.objects.create_superuser(
        username="root", email="root@example.com", password=PASSWORD
    )
    attacker = new_client(ATTACKER_IP)
    for _ in range(5):
        attacker.post(url("admin:login"), {"username": "root", "password": "wrong"})
    response = attacker.post(url("admin:login"), {"username": "root", "password": PASSWORD})
    assert response.status_code == 200  # the form again: refused
    assert logged_in_user_id(attacker) is None
    assert "Too many failed attempts" in text(login(new_client(ATTACKER_IP), "root"))
    # The administrator, on another client, logs in to the admin at once.
    admin = new_client(OWNER_IP)
    response = admin.post(url("admin:login"), {"username": "root", "password": PASSWORD})
    assert response.status_code == 302
    assert logged_in_user_id(admin) == str(root.pk)


def test_accepting_twice_says_already_a_member(commit, mailoutbox):
    owner, org = customer("boss@acme.example")
    boss = logged_in(owner)
    dev, _ = customer("dev@other.example", org_name="Other")
    invite(boss, commit, "dev@other.example")
    Membership.objects.create(user=dev, organisation=org, role=MemberRole.MEMBER)
    response = logged_in(dev).post(link_in(mailoutbox[0]))
    assert response.status_code == 409
    assert "You are already a member of Acme AI." in text(response)


# --- Emails after the response, and the same time for known and unknown addresses -------

REAL_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]  # production's cost


@pytest.fixture
def hashings(monkeypatch):
    """The Argon2 hashings done (the slow part of a request: what its time could betray)."""
    done = []
    encode = Argon2PasswordHasher.encode

    def counted(self, password, salt):
        done.append(type(self).__name__)
        return encode(self, password, salt)

    monkeypatch.setattr(Argon2PasswordHasher, "encode", counted)
    return done


def work_of(request, hashings):
    """What answering ``request()`` cost: (Argon2 hashings, database queries)."""
    before = len(hashings)
    with CaptureQueriesContext(connection) as queries:
        request()
    return len(hashings) - before, len(queries)


def test_signup_takes_as_long_for_a_taken_address_as_for_a_new_one(
    settings, django_capture_on_commit_callbacks, hashings, mailoutbox
):
    """Both answers pay the same Argon2 work at production cost (what dominates their
    time) and send their emails only after the response."""
    settings.PASSWORD_HASHERS = REAL_HASHERS
    customer("taken@acme.example")
    c = new_client()
    answers = set()

    def post(email):
        data = {
            "email": email,
            "full_name": "Li Wei",
            "company_name": "Pearl River AI",
            "password1": PASSWORD,
            "password2": PASSWORD,
        }
        with django_capture_on_commit_callbacks() as after_response:
            response = c.post(url("accounts:signup"), data)
        assert response.status_code == 302, text(response)[:500]
        assert after_response and not mailoutbox  # the email task: after the response
        answers.add(response["Location"])

    new = [work_of(lambda n=n: post(f"new{n}@acme.example"), hashings)[0] for n in range(2)]
    taken = [work_of(lambda: post("TAKEN@acme.example"), hashings)[0] for _ in range(2)]
    assert new == taken == [1, 1]
    assert set(hashings) == {"Argon2PasswordHasher"}
    assert answers == {url("accounts:verify_pending")}
    assert User.objects.filter(username__startswith="new").count() == 2
    # The production hasher did the work (the suite's own is a cheap Argon2).
    assert User.objects.get(username="new1@acme.example").password.startswith(
        "argon2$argon2id$v=19$m=102400,t=2,p=8$"
    )


def test_password_reset_takes_as_long_for_an_unknown_address_as_for_a_known_one(
    settings, django_capture_on_commit_callbacks, hashings, mailoutbox
):
    """Known and unknown addresses: the same queries, no hashing, one task enqueued after
    the response; the lookup and the email happen in the task."""
    settings.PASSWORD_HASHERS = REAL_HASHERS
    for n in range(2):
        User.objects.create_user(
            username=f"known{n}@acme.example", email=f"known{n}@acme.example", password=PASSWORD
        )
    c = new_client()
    answers = set()
    tasks = []

    def post(email):
        with django_capture_on_commit_callbacks() as after_response:
            response = c.post(url("accounts:password_reset"), {"email": email})
        assert response.status_code == 302
        assert not mailoutbox
        tasks.append(len(after_response))
        answers.add(response["Location"])

    post("warm-up@acme.example")  # the session's first save
    known = [work_of(lambda n=n: post(f"known{n}@acme.example"), hashings) for n in range(2)]
    unknown = [work_of(lambda n=n: post(f"nobody{n}@acme.example"), hashings) for n in range(2)]
    assert known == unknown
    assert {hashed for hashed, _queries in known} == {0}
    assert len(set(tasks)) == 1
    assert answers == {url("accounts:password_reset_done")}


def test_account_emails_are_tasks_with_ids_and_plain_strings(monkeypatch, commit):
    enqueued = []
    monkeypatch.setattr(jobs, "enqueue", lambda name, *args: enqueued.append((name, args)))
    owner, _org = customer("boss@acme.example")
    signup(new_client(), commit, email="new.person@example.com")
    signup(new_client(), commit, email="boss@acme.example")
    new_client().post(url("accounts:password_reset"), {"email": "boss@acme.example"})
    invite(logged_in(owner), commit, "friend@example.com")
    user = User.objects.get(username="new.person@example.com")
    invitation = Invitation.objects.get()
    assert enqueued == [
        ("accounts.tasks.email_verification_email", (user.pk, "en")),
        ("accounts.tasks.signup_taken_email", ("boss@acme.example", "en")),
        ("accounts.tasks.password_reset_email", ("boss@acme.example", "en")),
        ("accounts.tasks.invitation_email", (invitation.pk, "en")),
    ]
    assert PASSWORD not in json.dumps(enqueued)  # JSON, and no password in a message
    for name, _args in enqueued:
        assert name in app.tasks


def test_the_email_tasks_render_in_the_requests_language(commit, mailoutbox):
    customer("ops@acme.example")
    with override("zh-hans"):
        chinese = reverse("accounts:password_reset")
    with commit():
        new_client().post(chinese, {"email": "ops@acme.example"})
    [mail] = mailoutbox
    assert "/zh-hans/accounts/password/reset/" in mail.body
    assert mail.subject != "Reset your GPU Cloud Portal password"
