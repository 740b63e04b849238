"""Account pages: sign-up, verification, login with throttling, password reset, the
organisation's details, its members and invitations. Views parse input, call a service or
a selector, and render; the rules live in ``services``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth import login as auth_login
from django.contrib.auth import views as auth_views
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render, resolve_url
from django.urls import reverse, reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from accounts import selectors, services, throttle
from accounts.decorators import customer_required
from accounts.forms import (
    InviteForm,
    LoginForm,
    OrganisationForm,
    PortalPasswordResetForm,
    RoleForm,
    SignupForm,
    SshKeyForm,
    SwitchForm,
)
from accounts.models import Invitation, MemberRole, Membership, SshPublicKey
from core.errors import DomainError

BACKEND = "accounts.backends.EmailBackend"
PENDING_KEY = "accounts_unverified_user_id"
# Where a customer who signed up (or logged in unverified) goes once the address is
# verified: the page that sent them to log in (the configuration they were ordering).
NEXT_KEY = "accounts_next_after_verify"


# --- Helpers ----------------------------------------------------------------------------


def _safe_next(request: HttpRequest, candidate: str) -> str:
    """``candidate`` when it is a same-site address other than the login pages, else ""."""
    if candidate.split("?")[0] in (reverse("accounts:login"), reverse("accounts:signup")):
        return ""  # the "Log in" link on the login page itself
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return ""


def _next_url(request: HttpRequest, default: str | None = None) -> str:
    """Where to go after a form: a same-site ``next``, else ``default`` or the default page."""
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    return _safe_next(request, candidate) or resolve_url(default or settings.LOGIN_REDIRECT_URL)


def _keep_next(request: HttpRequest) -> None:
    """Remember the form's ``next`` for after the email verification (same browser)."""
    found = _safe_next(request, request.POST.get("next") or request.GET.get("next") or "")
    if found:
        request.session[NEXT_KEY] = found


def _log_in(request: HttpRequest, user: AbstractBaseUser) -> None:
    auth_login(request, user, backend=BACKEND)
    request.session.pop(PENDING_KEY, None)
    request.session.pop(NEXT_KEY, None)
    selectors.current_organisation_forget(request)


def _too_many(lock: throttle.Lockout) -> str:
    if lock.network:
        return ngettext(
            "Too many failed logins from your network; try again in %(n)s minute.",
            "Too many failed logins from your network; try again in %(n)s minutes.",
            lock.minutes_left,
        ) % {"n": lock.minutes_left}
    return ngettext(
        "Too many failed attempts; try again in %(n)s minute.",
        "Too many failed attempts; try again in %(n)s minutes.",
        lock.minutes_left,
    ) % {"n": lock.minutes_left}


def _pending_user(request: HttpRequest) -> AbstractBaseUser | None:
    pk = request.session.get(PENDING_KEY)
    if pk is None:
        return None
    return get_user_model()._default_manager.filter(pk=pk, is_active=True).first()


# --- Sign-up and verification -----------------------------------------------------------


@sensitive_post_parameters("password1", "password2")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Create an account and an organisation, or (with ``?invitation=``) join one."""
    token = request.POST.get("invitation") or request.GET.get("invitation") or ""
    invitation: Invitation | None = None
    if token:
        invitation = selectors.invitation_by_token(token)
        try:
            services.invitation_check(invitation)
        except DomainError as exc:
            return render(
                request, "accounts/invitation_closed.html", {"message": exc.message}, status=410
            )
        if request.user.is_authenticated:
            return redirect("accounts:invitation", token=token)
    elif request.user.is_authenticated:
        messages.info(request, _("You are logged in already."))
        return redirect(settings.LOGIN_REDIRECT_URL)
    form = SignupForm(request.POST or None, invitation=invitation)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = services.signup_create(
                email=data["email"],
                password=data["password1"],
                full_name=data["full_name"],
                company_name=data.get("company_name", ""),
                invitation_token=token or None,
            )
        except services.EmailTaken as exc:
            if invitation is not None:  # the invited address is known to the inviter anyway
                form.add_error("email", exc.message)
            else:
                # Answer as for a new account, and tell the address's owner by email:
                # the page never reveals which addresses have accounts (nor does its
                # time: the service hashed the password on this path too).
                services.signup_taken_notify(email=data["email"])
                messages.success(
                    request,
                    _("Your account is created. We sent a link to %(email)s to verify it.")
                    % {"email": data["email"].strip().lower()},
                )
                return redirect("accounts:verify_pending")
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            if invitation is not None:
                _log_in(request, user)
                request.session[selectors.SESSION_KEY] = invitation.organisation_id
                messages.success(
                    request,
                    _("Welcome! You are now a member of %(org)s.")
                    % {"org": invitation.organisation.name},
                )
                return redirect("accounts:organisations")
            request.session[PENDING_KEY] = user.pk
            _keep_next(request)
            messages.success(
                request,
                _("Your account is created. We sent a link to %(email)s to verify it.")
                % {"email": user.email},
            )
            return redirect("accounts:verify_pending")
    return render(
        request,
        "accounts/signup.html",
        {
            "form": form,
            "invitation": invitation,
            "token": token,
            "next": _safe_next(request, request.POST.get("next") or request.GET.get("next", "")),
        },
        status=400 if form.is_bound and form.errors else 200,
    )


@require_http_methods(["GET"])
def verify_pending(request: HttpRequest) -> HttpResponse:
    """Check your inbox: with a button to send the link again."""
    return render(request, "accounts/verify_pending.html", {"pending": _pending_user(request)})


@require_POST
def verify_resend(request: HttpRequest) -> HttpResponse:
    """Send the link again to the account that just signed up or tried to log in (kept in
    the session: this cannot be pointed at someone else's address)."""
    user = _pending_user(request)
    if user is None:
        messages.error(request, _("Log in with your email and password, then ask for a new link."))
        return redirect("accounts:login")
    try:
        sent = services.email_verification_resend(user=user)
    except DomainError as exc:
        messages.info(request, exc.message)
        return redirect("accounts:login")
    if sent:
        messages.success(
            request,
            _("We sent a new link to %(email)s.") % {"email": selectors.user_email(user)},
        )
    else:
        messages.info(
            request, _("We sent a link less than a minute ago; wait a moment and check again.")
        )
    return redirect("accounts:verify_pending")


@never_cache
@require_http_methods(["GET"])
def verify(request: HttpRequest, token: str) -> HttpResponse:
    """The link in the verification email: verify the address, and log in the browser
    that signed up (any other browser is sent to the login page)."""
    try:
        user = services.email_verify(token=token)
    except services.AlreadyVerified as exc:
        messages.info(request, exc.message)
        return redirect("accounts:login")
    except DomainError as exc:
        return render(request, "accounts/verify_failed.html", {"message": exc.message}, status=400)
    if request.session.get(PENDING_KEY) != user.pk:
        # Opened in another browser (or sent to someone else): verify, but log nobody in,
        # so a forwarded link cannot sign its opener into the sender's account.
        messages.success(request, _("Your email address is verified. Please log in."))
        return redirect("accounts:login")
    after = request.session.get(NEXT_KEY, "")
    _log_in(request, user)
    if after:
        messages.success(
            request,
            _(
                "Thank you: your email address is verified. Here is the configuration you "
                "were looking at; add your company's invoice details before paying."
            ),
        )
        return HttpResponseRedirect(after)
    messages.success(
        request,
        _("Thank you: your email address is verified. Please add your company's invoice details."),
    )
    return redirect("accounts:organisation_settings")


# --- Login, logout, password reset ------------------------------------------------------


@sensitive_post_parameters("password")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def login(request: HttpRequest) -> HttpResponse:
    form = LoginForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        email = form.cleaned_data["email"]
        # The backend counts failures and refuses while locked; this page says so.
        user = authenticate(request, username=email, password=form.cleaned_data["password"])
        lock = None
        if user is None:
            lock = throttle.lockout(account=email, ip=throttle.client_ip(request))
            if lock is None:
                form.add_error(None, _("The email address or the password is not right."))
        if lock is not None:
            form.add_error(None, _too_many(lock))
            status = 429
        elif user is not None:
            if not selectors.email_verified(user):
                request.session[PENDING_KEY] = user.pk
                _keep_next(request)
                messages.warning(
                    request,
                    _(
                        "Your email address is not verified yet. Open the link in the "
                        "email we sent to %(email)s, or have it sent again."
                    )
                    % {"email": selectors.user_email(user)},
                )
                return redirect("accounts:verify_pending")
            _log_in(request, user)
            return HttpResponseRedirect(_next_url(request, selectors.landing_url(user)))
        else:
            status = 400
    return render(
        request,
        "accounts/login.html",
        {"form": form, "next": request.POST.get("next") or request.GET.get("next", "")},
        status=status,
    )


class PasswordResetView(auth_views.PasswordResetView):
    form_class = PortalPasswordResetForm
    template_name = "accounts/password_reset.html"
    success_url = reverse_lazy("accounts:password_reset_done")

    def form_valid(self, form: PortalPasswordResetForm) -> HttpResponse:
        # The same answer, and the same work, whether or not the address is known: a
        # task looks the address up and sends the email after the response. At most one
        # a minute per address, so the form cannot flood someone's inbox.
        email = form.cleaned_data["email"].strip().lower()
        if throttle.send_allowed(kind="reset", subject=email):
            services.password_reset_request(email=email)
        return HttpResponseRedirect(self.get_success_url())


class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "accounts/password_reset_done.html"


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "accounts/password_reset_confirm.html"
    success_url = reverse_lazy("accounts:password_reset_complete")

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        # The link reached the mailbox: the address is proved, and the owner of it may
        # try again at once from this client.
        services.email_mark_verified(user=form.user)
        ip = throttle.client_ip(self.request)
        for account in dict.fromkeys([selectors.user_email(form.user), form.user.get_username()]):
            throttle.success_record(account=account, ip=ip)
        return response


class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    template_name = "accounts/password_reset_complete.html"


# --- Organisations ----------------------------------------------------------------------


@customer_required
@require_http_methods(["GET"])
def organisations(request: HttpRequest) -> HttpResponse:
    """The user's organisations, the active one marked, with the switcher."""
    return render(
        request,
        "accounts/organisations.html",
        {"memberships": selectors.memberships_for_user(request.user)},
    )


@customer_required
@require_POST
def organisation_switch(request: HttpRequest) -> HttpResponse:
    form = SwitchForm(request.POST)
    membership = None
    if form.is_valid():
        membership = (
            selectors.memberships_for_user(request.user)
            .filter(organisation_id=form.cleaned_data["organisation"])
            .first()
        )
    if membership is None:
        raise Http404
    request.session[selectors.SESSION_KEY] = membership.organisation_id
    selectors.current_organisation_forget(request)
    messages.success(
        request, _("You are now working in %(org)s.") % {"org": membership.organisation.name}
    )
    return HttpResponseRedirect(_next_url(request, "accounts:organisations"))


@customer_required(roles=(MemberRole.OWNER, MemberRole.BILLING))
@require_http_methods(["GET", "POST"])
def organisation_settings(request: HttpRequest) -> HttpResponse:
    organisation = request.organisation
    form = OrganisationForm.for_organisation(organisation, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.organisation_update(
                organisation=organisation, actor=request.user, **form.cleaned_data
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("The organisation's details are saved."))
            # Back to the page that sent the user here (an order waiting for them).
            return HttpResponseRedirect(_next_url(request, "accounts:organisation_settings"))
    return render(
        request,
        "accounts/organisation_settings.html",
        {
            "form": form,
            "organisation": organisation,
            "next": _safe_next(request, request.POST.get("next") or request.GET.get("next", "")),
            "legal_missing": organisation.legal_entity_missing(),
        },
        status=400 if form.is_bound and form.errors else 200,
    )


# --- Members and invitations ------------------------------------------------------------


def _members_page(
    request: HttpRequest, invite_form: InviteForm | None = None, status: int = 200
) -> HttpResponse:
    organisation = request.organisation
    is_owner = request.membership.role == MemberRole.OWNER
    members: QuerySet[Membership] = selectors.organisation_members(organisation)
    return render(
        request,
        "accounts/members.html",
        {
            "organisation": organisation,
            "members": members,
            "is_owner": is_owner,
            "roles": MemberRole.choices,
            "invitations": selectors.invitations_open(organisation) if is_owner else None,
            "invite_form": invite_form or (InviteForm() if is_owner else None),
        },
        status=status,
    )


@customer_required
@require_http_methods(["GET"])
def members(request: HttpRequest) -> HttpResponse:
    return _members_page(request)


@customer_required(roles=(MemberRole.OWNER,))
@require_POST
def invite(request: HttpRequest) -> HttpResponse:
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            invitation = services.invitation_create(
                organisation=request.organisation,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                actor=request.user,
            )
        except DomainError as exc:
            form.add_error("email", exc.message)
        else:
            messages.success(
                request,
                _("We sent an invitation to %(email)s; the link is valid for 7 days.")
                % {"email": invitation.email},
            )
            return redirect("accounts:members")
    return _members_page(request, invite_form=form, status=400)


@customer_required(roles=(MemberRole.OWNER,))
@require_POST
def invitation_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    invitation = get_object_or_404(Invitation, pk=pk, organisation=request.organisation)
    try:
        services.invitation_revoke(invitation=invitation, actor=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request, _("The invitation for %(email)s is withdrawn.") % {"email": invitation.email}
        )
    return redirect("accounts:members")


@customer_required(roles=(MemberRole.OWNER,))
@require_POST
def member_role(request: HttpRequest, pk: int) -> HttpResponse:
    membership = get_object_or_404(
        Membership.objects.select_related("user", "organisation"),
        pk=pk,
        organisation=request.organisation,
    )
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose a role: owner, member or billing."))
        return redirect("accounts:members")
    try:
        membership = services.membership_change_role(
            membership=membership, role=form.cleaned_data["role"], actor=request.user
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            _("%(name)s is now %(role)s.")
            % {
                "name": selectors.display_name(membership.user),
                "role": membership.get_role_display(),
            },
        )
    return redirect("accounts:members")


@customer_required(roles=(MemberRole.OWNER,))
@require_POST
def member_remove(request: HttpRequest, pk: int) -> HttpResponse:
    membership = get_object_or_404(
        Membership.objects.select_related("user", "organisation"),
        pk=pk,
        organisation=request.organisation,
    )
    myself = membership.user_id == request.user.pk
    try:
        services.membership_remove(membership=membership, actor=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("accounts:members")
    name = selectors.display_name(membership.user)
    if myself:
        request.session.pop(selectors.SESSION_KEY, None)
        messages.success(request, _("You left %(org)s.") % {"org": membership.organisation.name})
        return redirect("accounts:organisations")
    messages.success(request, _("%(name)s is no longer a member.") % {"name": name})
    return redirect("accounts:members")


# --- SSH public keys --------------------------------------------------------------------


def _ssh_keys_page(
    request: HttpRequest, form: SshKeyForm | None = None, status: int = 200
) -> HttpResponse:
    can_manage = request.membership.role in services.SSH_KEY_MANAGERS
    return render(
        request,
        "accounts/ssh_keys.html",
        {
            "organisation": request.organisation,
            "keys": selectors.ssh_keys_for_org(request.organisation),
            "can_manage": can_manage,
            "form": form or (SshKeyForm() if can_manage else None),
        },
        status=status,
    )


@customer_required
@require_http_methods(["GET"])
def ssh_keys(request: HttpRequest) -> HttpResponse:
    """The organisation's SSH keys: every member sees them, owners add and remove."""
    return _ssh_keys_page(request)


@customer_required(roles=services.SSH_KEY_MANAGERS)
@require_POST
def ssh_key_add(request: HttpRequest) -> HttpResponse:
    form = SshKeyForm(request.POST)
    if form.is_valid():
        try:
            key = services.ssh_key_add(
                organisation=request.organisation,
                name=form.cleaned_data["name"],
                public_key=form.cleaned_data["public_key"],
                actor=request.user,
            )
        except DomainError as exc:
            form.add_error("public_key", exc.message)
        else:
            messages.success(
                request,
                _("Key “%(name)s” added (%(fingerprint)s).")
                % {"name": key.name, "fingerprint": key.fingerprint},
            )
            return redirect("accounts:ssh_keys")
    return _ssh_keys_page(request, form=form, status=400)


@customer_required(roles=services.SSH_KEY_MANAGERS)
@require_POST
def ssh_key_remove(request: HttpRequest) -> HttpResponse:
    """Remove the key named in the form (``key``): another organisation's key is a 404."""
    pk = request.POST.get("key", "")
    if not pk.isdigit():
        raise Http404
    key = get_object_or_404(SshPublicKey, pk=int(pk), organisation=request.organisation)
    try:
        services.ssh_key_remove(
            organisation=request.organisation, key_id=key.pk, actor=request.user
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Key “%(name)s” removed.") % {"name": key.name})
    return redirect("accounts:ssh_keys")


@never_cache
@require_http_methods(["GET", "POST"])
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """The link in an invitation email: sign up or log in, then accept."""
    found = selectors.invitation_by_token(token)
    try:
        services.invitation_check(found)
    except DomainError as exc:
        status = 404 if found is None else 410
        return render(
            request, "accounts/invitation_closed.html", {"message": exc.message}, status=status
        )
    assert found is not None  # invitation_check raised otherwise
    context: dict[str, Any] = {"invitation": found, "token": token}
    if not request.user.is_authenticated:
        return render(request, "accounts/invitation.html", context)
    try:
        services.invitation_check_invitee(invitation=found, user=request.user)
    except DomainError as exc:
        context.update(refusal=exc.message, wrong_user=True)
        return render(request, "accounts/invitation.html", context, status=403)
    if request.method == "POST":
        try:
            services.invitation_accept(token=token, user=request.user)
        except DomainError as exc:
            context["refusal"] = exc.message
            return render(request, "accounts/invitation.html", context, status=409)
        request.session[selectors.SESSION_KEY] = found.organisation_id
        selectors.current_organisation_forget(request)
        messages.success(
            request,
            _("Welcome! You are now a member of %(org)s.") % {"org": found.organisation.name},
        )
        return redirect("accounts:organisations")
    return render(request, "accounts/invitation.html", context)
