"""Create an API key for an organisation and print it (alone, on the last line).

    python manage.py api_key_create --organisation "Pearl River AI Lab" \\
        --scopes "*:write" --name "CI" [--expires-days 90] [--allow-ip 10.0.0.0/8] [--user EMAIL]

``--organisation``: the organisation's id or exact name. ``--scopes``: comma-separated
``family:read|write`` (``*`` for every family). The key acts as ``--user`` (an owner;
default: the organisation's first owner).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts import api_keys
from accounts.models import MemberRole, Membership, Organisation
from core.errors import DomainError


class Command(BaseCommand):
    help = "Create an API key; prints the key alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organisation", required=True, help="id or exact name")
        parser.add_argument("--scopes", required=True, help='e.g. "catalog:read,orders:write"')
        parser.add_argument("--name", required=True)
        parser.add_argument("--expires-days", type=int, default=None)
        parser.add_argument("--allow-ip", action="append", default=[])
        parser.add_argument("--user", default="", help="the owner the key acts as (email)")

    def handle(self, *args: Any, **opts: Any) -> None:
        ref = opts["organisation"]
        org = (
            Organisation.objects.filter(pk=int(ref)).first()
            if ref.isdigit()
            else Organisation.objects.filter(name=ref).first()
        )
        if org is None:
            raise CommandError(f"No organisation {ref!r} (give its id or exact name).")
        owners = Membership.objects.filter(organisation=org, role=MemberRole.OWNER).select_related(
            "user"
        )
        if opts["user"]:
            owners = owners.filter(user__email__iexact=opts["user"])
        owner = owners.order_by("pk").first()
        if owner is None:
            raise CommandError(f"{org.name} has no owner {opts['user'] or ''} to act as.".strip())
        try:
            scopes = api_keys.scopes_parse(opts["scopes"])
            ips = api_keys.allowed_ips_parse(" ".join(opts["allow_ip"]))
            days = opts["expires_days"]
            new = api_keys.api_key_create(
                organisation=org,
                actor=owner.user,
                name=opts["name"],
                scopes=scopes,
                expires_at=timezone.now() + timedelta(days=days) if days else None,
                allowed_ips=ips,
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(
            f"API key {new.api_key.name!r} for {org.name} (scopes {scopes}); shown once:"
        )
        self.stdout.write(new.secret)
