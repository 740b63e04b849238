"""Accounts: sign-up, email verification, invitations, memberships, organisation details.

Every write is here, keyword-only, in its own transaction, and refuses with a translated
``DomainError``. Emails go out after the response: the request enqueues a task by name
(``core.jobs``, after the commit) with ids and plain strings; the task calls one of the
``*_deliver`` services below, which re-fetches, renders in the request's language and
sends. So a request's time never depends on a mail server, nor on whether an address
has an account.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.models import AbstractBaseUser, AbstractUser
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import formats, timezone, translation
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts import selectors, signals, throttle, tokens
from accounts.models import (
    CustomerProfile,
    Invitation,
    MemberRole,
    Membership,
    Organisation,
    SshPublicKey,
)
from accounts.ssh_keys import InvalidSshKey, parse_public_key
from core import jobs
from core.errors import DomainError
from core.validators import name_check

logger = logging.getLogger(__name__)

UserModel = get_user_model()

INVITATION_VALIDITY = timedelta(days=7)
RESEND_INTERVAL_SECONDS = 60


class EmailTaken(DomainError):
    """Sign-up with an address that already has an account."""


class VerificationLinkProblem(DomainError):
    """A verification link that is altered, expired, or for another address."""


class AlreadyVerified(DomainError):
    """A verification link for an address that is verified already (links work once)."""


class InvitationClosed(DomainError):
    """An invitation link that is unknown, used, withdrawn or expired."""


class InvitationForSomeoneElse(DomainError):
    """An invitation opened by a logged-in user with another email address."""


# --- Helpers ----------------------------------------------------------------------------


def email_normalise(email: str) -> str:
    """Addresses are compared and stored lower-cased; they are the login identifier."""
    email = (email or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError as exc:
        raise DomainError(_("Enter a valid email address.")) from exc
    return email


def _email_taken(email: str) -> bool:
    return UserModel._default_manager.filter(
        Q(username__iexact=email) | Q(email__iexact=email)
    ).exists()


def _password_check(password: str, user: AbstractBaseUser) -> None:
    try:
        password_validation.validate_password(password, user=user)
    except ValidationError as exc:
        raise DomainError(" ".join(exc.messages)) from exc


def _absolute(path: str) -> str:
    return settings.PORTAL_BASE_URL + path


def _when(moment: datetime) -> str:
    return formats.date_format(timezone.localtime(moment), "Y-m-d H:i T")


def _language() -> str:
    """The request's language, for the email a task renders later."""
    return translation.get_language() or settings.LANGUAGE_CODE


def _mail_send(*, template: str, to: str, context: dict) -> None:
    """Render ``email/accounts_<template>[_subject].txt`` in the active language and send.
    A mail server failure raises, so the task retries it."""
    subject = render_to_string(f"email/accounts_{template}_subject.txt", context).strip()
    body = render_to_string(f"email/accounts_{template}.txt", context)
    send_mail(subject, body, None, [to])


def signup_taken_notify(*, email: str) -> None:
    """Sign-up with an address that has an account: tell its owner by email instead of
    telling whoever typed it (the page answers as for a new account: no enumeration).
    Sent after the response, like the new account's verification email."""
    jobs.enqueue("accounts.tasks.signup_taken_email", email_normalise(email), _language())


def signup_taken_deliver(*, email: str, language: str) -> str:
    """The "someone tried to sign up with your address" email (from the task)."""
    with translation.override(language):
        if not _email_taken(email):
            return "no account"
        context = {
            "email": email,
            "login_url": _absolute(reverse("accounts:login")),
            "reset_url": _absolute(reverse("accounts:password_reset")),
        }
        _mail_send(template="signup_taken", to=email, context=context)
    return "sent"


def _role_check(
    *, organisation: Organisation, actor: AbstractBaseUser, roles: Iterable[str], refusal: str
) -> Membership:
    membership = Membership.objects.filter(organisation=organisation, user=actor).first()
    if membership is None or membership.role not in set(roles):
        raise DomainError(refusal)
    return membership


def _lock_organisation(organisation: Organisation) -> Organisation:
    return Organisation.objects.select_for_update().get(pk=organisation.pk)


def _owner_count(organisation: Organisation) -> int:
    return Membership.objects.filter(organisation=organisation, role=MemberRole.OWNER).count()


def _role_valid(role: str) -> str:
    if role not in MemberRole.values:
        raise DomainError(_("Choose a role: owner, member or billing."))
    return role


# --- Sign-up and email verification -----------------------------------------------------


@transaction.atomic
def signup_create(
    *,
    email: str,
    password: str,
    full_name: str,
    company_name: str = "",
    invitation_token: str | None = None,
) -> AbstractUser:
    """A new customer account: the user (username = email), the profile, and either a new
    organisation with the user as owner (email to verify) or, through an invitation, a
    membership with the invited role (the click on the emailed link verified the address).
    """
    email = email_normalise(email)
    full_name = name_check(full_name, max_length=150, label=_("Your full name"))
    if not full_name:
        raise DomainError(_("Enter your full name."))
    invitation = None
    if invitation_token:
        invitation = _invitation_lock_open(invitation_token)
        if invitation.email != email:
            raise InvitationForSomeoneElse(
                _("This invitation is for %(invited)s; sign up with that address.")
                % {"invited": invitation.email}
            )
    else:
        company_name = name_check(company_name, max_length=200, label=_("Your company's name"))
        if not company_name:
            raise DomainError(_("Enter your company's name."))
    user = UserModel(username=email, email=email, first_name=full_name)
    _password_check(password, user)
    # Hash before asking whether the address is taken: both answers cost the same Argon2
    # work, so the response time does not tell which addresses have accounts.
    user.set_password(password)
    taken = _("An account with this email exists. Log in, or reset your password.")
    if _email_taken(email):
        raise EmailTaken(taken)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError as exc:  # the same address signed up a moment ago
        raise EmailTaken(taken) from exc
    now = timezone.now()
    CustomerProfile.objects.create(user=user, email_verified_at=now if invitation else None)
    if invitation is not None:
        _invitation_join(invitation=invitation, user=user, now=now)
    else:
        organisation = Organisation.objects.create(name=company_name)
        Membership.objects.create(organisation=organisation, user=user, role=MemberRole.OWNER)
        email_verification_send(user=user)
    logger.info("Sign-up: %s (invited: %s)", email, bool(invitation))
    return user


def email_verification_send(*, user: AbstractBaseUser) -> None:
    """Email the user a signed link, valid for three days, that verifies the address
    (after the commit, from a task)."""
    jobs.enqueue("accounts.tasks.email_verification_email", user.pk, _language())


def email_verification_deliver(*, user_id: int, language: str) -> str:
    """The verification email (from the task): the link is signed now, for the address the
    account has now; nothing is sent to a verified or deactivated account."""
    user = UserModel._default_manager.filter(pk=user_id, is_active=True).first()
    if user is None:
        return "no account"
    if selectors.email_verified(user):
        return "already verified"
    address = selectors.user_email(user)
    token = tokens.email_verification_token(user_id=user.pk, email=address)
    with translation.override(language):
        context = {
            "user": user,
            "name": selectors.display_name(user),
            "link": _absolute(reverse("accounts:verify", args=[token])),
            "days": tokens.EMAIL_VERIFICATION_MAX_AGE.days,
        }
        _mail_send(template="verify", to=address, context=context)
    return "sent"


def email_verification_resend(*, user: AbstractBaseUser) -> bool:
    """Send the verification email again, at most once a minute. ``False``: not sent
    (already verified, or asked again too soon)."""
    if selectors.email_verified(user):
        raise AlreadyVerified(_("Your email address is already verified; log in."))
    if not throttle.send_allowed(
        kind="verify", subject=str(user.pk), every=RESEND_INTERVAL_SECONDS
    ):
        return False
    email_verification_send(user=user)
    return True


def email_verify(*, token: str) -> AbstractUser:
    """Mark the address in a verification link as verified; the link works once."""
    days = tokens.EMAIL_VERIFICATION_MAX_AGE.days
    expired = ngettext(
        "This verification link has expired: links are valid for %(days)s day. Log in "
        "and we will send you a new one.",
        "This verification link has expired: links are valid for %(days)s days. Log in "
        "and we will send you a new one.",
        days,
    ) % {"days": days}
    invalid = _(
        "This verification link is not valid. Check that you opened the whole link from "
        "the email, or log in and we will send you a new one."
    )
    try:
        claim = tokens.email_verification_read(token)
    except tokens.VerificationLinkExpired as exc:
        raise VerificationLinkProblem(expired) from exc
    except tokens.VerificationLinkInvalid as exc:
        raise VerificationLinkProblem(invalid) from exc
    with transaction.atomic():
        user = UserModel._default_manager.select_for_update().filter(pk=claim.user_id).first()
        if user is None or not user.is_active or selectors.user_email(user) != claim.email:
            raise VerificationLinkProblem(invalid)
        profile, _created = CustomerProfile.objects.select_for_update().get_or_create(user=user)
        if profile.email_verified_at is not None:
            raise AlreadyVerified(_("Your email address is already verified; log in."))
        profile.email_verified_at = timezone.now()
        profile.save(update_fields=["email_verified_at"])
    return user


def password_reset_request(*, email: str) -> None:
    """Someone asked for a password reset link for ``email``. The request does the same
    work whether or not the address has an account: it enqueues the task, and the task
    looks the address up and emails a link to each matching account (none: nothing)."""
    jobs.enqueue("accounts.tasks.password_reset_email", email.strip().lower(), _language())


def password_reset_deliver(*, email: str, language: str) -> int:
    """Email a reset link to every active account of ``email`` with a usable password
    (Django's rules); how many were sent. The token is made here, from the account."""
    sent = 0
    with translation.override(language):
        for user in PasswordResetForm().get_users(email):
            context = {
                "email": email,
                "user": user,
                "uid": urlsafe_base64_encode(force_bytes(user.pk)),
                "token": default_token_generator.make_token(user),
                "base_url": settings.PORTAL_BASE_URL,
            }
            _mail_send(template="password_reset", to=selectors.user_email(user), context=context)
            sent += 1
    return sent


def email_mark_verified(*, user: AbstractBaseUser) -> None:
    """The user proved the address another way (a password reset link, an invitation)."""
    with transaction.atomic():
        profile, _created = CustomerProfile.objects.select_for_update().get_or_create(user=user)
        if profile.email_verified_at is None:
            profile.email_verified_at = timezone.now()
            profile.save(update_fields=["email_verified_at"])


# --- Organisation details ---------------------------------------------------------------


@transaction.atomic
def organisation_update(
    *,
    organisation: Organisation,
    actor: AbstractBaseUser,
    name: str,
    legal_name: str,
    tax_id: str,
    billing_address: str,
    country: str,
    billing_email: str,
    fapiao_type: str = "ordinary",
    fapiao_title: str = "",
    fapiao_address_phone: str = "",
    fapiao_bank_account: str = "",
    auto_renew: bool | None = None,
) -> Organisation:
    """Change the details printed on quotes, contracts and fapiao (owners and billing),
    and whether rentals renew automatically (``None``: unchanged)."""
    organisation = _lock_organisation(organisation)
    _role_check(
        organisation=organisation,
        actor=actor,
        roles=(MemberRole.OWNER, MemberRole.BILLING),
        refusal=_("Only owners and billing members can change the organisation's details."),
    )
    organisation.name = name_check(name, max_length=200, label=_("The organisation's name"))
    organisation.legal_name = name_check(legal_name, max_length=200, label=_("The legal name"))
    organisation.tax_id = tax_id
    organisation.billing_address = billing_address.strip()
    organisation.country = country.strip().upper()
    organisation.billing_email = billing_email.strip().lower()
    organisation.fapiao_type = fapiao_type or "ordinary"
    organisation.fapiao_title = " ".join(fapiao_title.split())
    organisation.fapiao_address_phone = " ".join(fapiao_address_phone.split())
    organisation.fapiao_bank_account = " ".join(fapiao_bank_account.split())
    if auto_renew is not None:
        organisation.auto_renew = auto_renew
    if len(organisation.country) != 2 or not organisation.country.isalpha():
        raise DomainError(_("Choose a country."))
    try:
        organisation.full_clean()  # normalises and checks the tax ID for the country
    except ValidationError as exc:
        raise DomainError(" ".join(exc.messages)) from exc
    organisation.save()
    if organisation.legal_details_complete:
        # Contracts that waited for the legal entity can be drafted now (billing listens).
        signals.legal_entity_completed.send(
            sender=Organisation, organisation=organisation, actor=actor
        )
    return organisation


# --- Invitations ------------------------------------------------------------------------


def invitation_check(invitation: Invitation | None, *, now: datetime | None = None) -> Invitation:
    """The invitation if it can still be accepted; otherwise why not."""
    now = now or timezone.now()
    if invitation is None:
        raise InvitationClosed(
            _(
                "This invitation link is not valid. Check that you opened the whole link "
                "from the email, or ask for a new invitation."
            )
        )
    org = invitation.organisation.name
    if invitation.accepted_at is not None:
        raise InvitationClosed(
            _("This invitation to %(org)s has already been used. Log in to reach it.")
            % {"org": org}
        )
    if invitation.revoked_at is not None:
        raise InvitationClosed(
            _("This invitation to %(org)s was withdrawn. Ask an owner for a new one.")
            % {"org": org}
        )
    if now >= invitation.expires_at:
        raise InvitationClosed(
            _("This invitation to %(org)s expired on %(when)s. Ask an owner for a new one.")
            % {"org": org, "when": _when(invitation.expires_at)}
        )
    return invitation


def invitation_check_invitee(*, invitation: Invitation, user: AbstractBaseUser) -> None:
    """Only the invited address may accept."""
    you = selectors.user_email(user)
    if you != invitation.email:
        raise InvitationForSomeoneElse(
            _(
                "This invitation is for %(invited)s, but you are logged in as %(you)s. "
                "Log out and open the link again, or ask for an invitation for %(you)s."
            )
            % {"invited": invitation.email, "you": you}
        )


def _invitation_lock_open(token: str) -> Invitation:
    invitation = (
        Invitation.objects.select_for_update(of=("self",))
        .select_related("organisation")
        .filter(token=token)
        .first()
        if token and len(token) <= 64
        else None
    )
    return invitation_check(invitation)


def _invitation_join(
    *, invitation: Invitation, user: AbstractBaseUser, now: datetime
) -> Membership:
    if Membership.objects.filter(organisation=invitation.organisation, user=user).exists():
        raise DomainError(
            _("You are already a member of %(org)s.") % {"org": invitation.organisation.name}
        )
    membership = Membership.objects.create(
        organisation=invitation.organisation, user=user, role=invitation.role
    )
    invitation.accepted_at = now
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    return membership


@transaction.atomic
def invitation_create(
    *, organisation: Organisation, email: str, role: str, actor: AbstractBaseUser
) -> Invitation:
    """Invite an address to join with a role (owners only). Inviting the same address again
    withdraws the earlier invitation and sends a new link."""
    email = email_normalise(email)
    role = _role_valid(role)
    organisation = _lock_organisation(organisation)
    _role_check(
        organisation=organisation,
        actor=actor,
        roles=(MemberRole.OWNER,),
        refusal=_("Only an owner can invite people to the organisation."),
    )
    already = Membership.objects.filter(organisation=organisation).filter(
        Q(user__username__iexact=email) | Q(user__email__iexact=email)
    )
    if already.exists():
        raise DomainError(
            _("%(email)s is already a member of %(org)s.")
            % {"email": email, "org": organisation.name}
        )
    now = timezone.now()
    Invitation.objects.filter(
        organisation=organisation, email=email, accepted_at__isnull=True, revoked_at__isnull=True
    ).update(revoked_at=now)
    invitation = Invitation.objects.create(
        organisation=organisation,
        email=email,
        role=role,
        token=tokens.invitation_token(),
        invited_by=actor,
        expires_at=now + INVITATION_VALIDITY,
    )
    jobs.enqueue("accounts.tasks.invitation_email", invitation.pk, _language())
    return invitation


def invitation_email_deliver(*, invitation_id: int, language: str) -> str:
    """The invitation email (from the task); nothing for one used, withdrawn or expired."""
    invitation = (
        Invitation.objects.select_related("organisation", "invited_by")
        .filter(pk=invitation_id)
        .first()
    )
    if invitation is None:
        return "no invitation"
    try:
        invitation_check(invitation)
    except InvitationClosed:
        return "closed"
    with translation.override(language):
        context = {
            "invitation": invitation,
            "organisation": invitation.organisation,
            "inviter": selectors.display_name(invitation.invited_by)
            if invitation.invited_by
            else invitation.organisation.name,
            "role": invitation.get_role_display(),
            "link": _absolute(reverse("accounts:invitation", args=[invitation.token])),
            "expires": _when(invitation.expires_at),
        }
        _mail_send(template="invitation", to=invitation.email, context=context)
    return "sent"


@transaction.atomic
def invitation_accept(*, token: str, user: AbstractBaseUser) -> Membership:
    """The logged-in invitee joins with the invited role. The click on the emailed link
    proves the address, so an unverified one becomes verified."""
    invitation = _invitation_lock_open(token)
    invitation_check_invitee(invitation=invitation, user=user)
    membership = _invitation_join(invitation=invitation, user=user, now=timezone.now())
    email_mark_verified(user=user)
    return membership


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: AbstractBaseUser) -> Invitation:
    organisation = _lock_organisation(invitation.organisation)
    _role_check(
        organisation=organisation,
        actor=actor,
        roles=(MemberRole.OWNER,),
        refusal=_("Only an owner can withdraw invitations."),
    )
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if invitation.accepted_at is not None:
        raise DomainError(_("This invitation has been accepted already."))
    if invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
    return invitation


# --- Memberships ------------------------------------------------------------------------


def _membership_lock(membership: Membership) -> Membership:
    locked = (
        Membership.objects.select_for_update(of=("self",))
        .select_related("user", "organisation")
        .filter(pk=membership.pk)
        .first()
    )
    if locked is None:
        raise DomainError(_("This person is no longer a member."))
    return locked


def _names(membership: Membership) -> dict[str, str]:
    return {
        "name": selectors.display_name(membership.user),
        "org": membership.organisation.name,
    }


@transaction.atomic
def membership_change_role(
    *, membership: Membership, role: str, actor: AbstractBaseUser
) -> Membership:
    """Owners change roles; the last owner keeps the owner role."""
    role = _role_valid(role)
    organisation = _lock_organisation(membership.organisation)
    _role_check(
        organisation=organisation,
        actor=actor,
        roles=(MemberRole.OWNER,),
        refusal=_("Only an owner can change members' roles."),
    )
    membership = _membership_lock(membership)
    if membership.role == role:
        return membership
    if membership.role == MemberRole.OWNER and _owner_count(organisation) <= 1:
        raise DomainError(
            _(
                "%(name)s is the last owner of %(org)s and keeps the owner role. Make "
                "another member an owner first."
            )
            % _names(membership)
        )
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor: AbstractBaseUser) -> None:
    """Owners remove members (themselves too); the last owner stays."""
    organisation = _lock_organisation(membership.organisation)
    _role_check(
        organisation=organisation,
        actor=actor,
        roles=(MemberRole.OWNER,),
        refusal=_("Only an owner can remove members."),
    )
    membership = _membership_lock(membership)
    if membership.role == MemberRole.OWNER and _owner_count(organisation) <= 1:
        raise DomainError(
            _(
                "%(name)s is the last owner of %(org)s and cannot be removed. Make another "
                "member an owner first."
            )
            % _names(membership)
        )
    membership.delete()


# --- SSH public keys ---------------------------------------------------------------------


# Who may add and remove the organisation's keys: a key opens every node of its orders.
SSH_KEY_MANAGERS = (MemberRole.OWNER,)


def _ssh_key_role_check(organisation: Organisation, actor: AbstractBaseUser | None) -> None:
    """A signed-in actor must be an owner; ``None`` is the system (seed data, tests)."""
    if actor is not None and getattr(actor, "is_authenticated", False):
        _role_check(
            organisation=organisation,
            actor=actor,
            roles=SSH_KEY_MANAGERS,
            refusal=_("Only an owner can add or remove the organisation's SSH keys."),
        )


def ssh_key_add(
    *, organisation: Organisation, name: str, public_key: str, actor: AbstractBaseUser | None
) -> SshPublicKey:
    """Add an SSH public key to the organisation (ed25519, ECDSA, RSA ≥ 3072 bits)."""
    _ssh_key_role_check(organisation, actor)
    try:
        parsed = parse_public_key(public_key)
    except InvalidSshKey as exc:
        raise DomainError(str(exc)) from None
    label = (name or "").strip() or parsed.comment or parsed.algorithm
    if SshPublicKey.objects.filter(
        organisation=organisation, fingerprint=parsed.fingerprint
    ).exists():
        raise DomainError(_("This key is already in your organisation's keys."))
    try:
        with transaction.atomic():
            return SshPublicKey.objects.create(
                organisation=organisation,
                name=label[:100],
                public_key=parsed.line,
                algorithm=parsed.algorithm,
                bits=parsed.bits,
                fingerprint=parsed.fingerprint,
                added_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
    except IntegrityError:
        raise DomainError(_("This key is already in your organisation's keys.")) from None


def ssh_key_remove(
    *, organisation: Organisation, key_id: int, actor: AbstractBaseUser | None = None
) -> None:
    """Remove one of the organisation's keys (nodes already delivered keep theirs)."""
    _ssh_key_role_check(organisation, actor)
    deleted, _count = SshPublicKey.objects.filter(organisation=organisation, pk=key_id).delete()
    if not deleted:
        raise DomainError(_("No such key."))
