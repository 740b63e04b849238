"""Account pages, under ``/<lang>/accounts/`` (namespace ``accounts``)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("verify/", views.verify_pending, name="verify_pending"),
    path("verify/resend/", views.verify_resend, name="verify_resend"),
    path("verify/<signed:token>/", views.verify, name="verify"),
    path("login/", views.login, name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("password/reset/sent/", views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password/reset/<uidb64>/<token>/",
        views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/done/",
        views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("organisations/", views.organisations, name="organisations"),
    path("organisations/switch/", views.organisation_switch, name="organisation_switch"),
    path("organisation/", views.organisation_settings, name="organisation_settings"),
    path("members/", views.members, name="members"),
    path("members/invite/", views.invite, name="invite"),
    path("members/<int:pk>/role/", views.member_role, name="member_role"),
    path("members/<int:pk>/remove/", views.member_remove, name="member_remove"),
    path("ssh-keys/", views.ssh_keys, name="ssh_keys"),
    path("ssh-keys/add/", views.ssh_key_add, name="ssh_key_add"),
    path("ssh-keys/remove/", views.ssh_key_remove, name="ssh_key_remove"),
    path("invitations/<int:pk>/withdraw/", views.invitation_revoke, name="invitation_revoke"),
    path("invitations/<slug:token>/", views.invitation, name="invitation"),
]
