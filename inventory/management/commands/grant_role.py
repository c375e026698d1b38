"""`manage.py grant_role USER ROLE [--fleet F --tenant T] [--create]`: give a user one of
FleetScope's roles (`inventory.access`), replacing the one they had; `--create` makes a
missing user first and prints its password once; `--revoke` takes every role and tenant
grant away. Exit 2 for bad arguments, with one line saying which."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from inventory.roles import ROLE_NAMES, RoleError, role_grant, role_revoke


class Command(BaseCommand):
    help = "Give a user a role: viewer, oncall, admin, or tenant (with --fleet and --tenant)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("role", nargs="?", choices=sorted(ROLE_NAMES))
        parser.add_argument("--fleet", help="a tenant viewer's fleet (slug)")
        parser.add_argument(
            "--tenant", help="a tenant viewer's tenant, as the tenant rules name it"
        )
        parser.add_argument("--revoke", action="store_true", help="take every role away")
        parser.add_argument(
            "--create",
            action="store_true",
            help="create the user if missing (password printed once)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            # One transaction: a user --create made is gone again if the grant is refused.
            with transaction.atomic():
                line, password = self._apply(options)
        except RoleError as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(line)
        if password:
            self.stdout.write(f"password (shown once): {password}")

    def _apply(self, options: dict[str, Any]) -> tuple[str, str]:
        users = get_user_model().objects
        user = users.filter(username=options["username"]).first()
        password = ""
        if user is None and options["create"] and not options["revoke"]:
            password = secrets.token_urlsafe(12)
            user = users.create_user(options["username"], password=password)
        if user is None:
            raise RoleError(f"no user {options['username']!r} (--create makes one)")
        if options["revoke"]:
            role_revoke(user)
            return f"{user.username}: no role", ""
        if not options["role"]:
            raise RoleError("give a role, or --revoke")
        text = role_grant(
            user, options["role"], fleet_slug=options["fleet"], tenant=options["tenant"]
        )
        return f"{user.username}: {text}", password
