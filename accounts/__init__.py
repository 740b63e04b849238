"""Customer organisations, memberships, invitations, sign-up and login."""
