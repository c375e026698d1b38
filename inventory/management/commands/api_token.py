"""`manage.py api_token create NAME --user U --scope read|alertmanager`: a new API token,
printed once (only its digest is kept); `list` shows every token without its secret;
`revoke NAME` ends one. Exit 2 for bad arguments, with one line saying which."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from inventory.models import ApiToken, TokenScope
from inventory.tokens import TokenError, token_create, token_revoke


class Command(BaseCommand):
    help = "Create, list or revoke API tokens (read-only exports, or the Alertmanager webhook)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="a new token, shown once")
        create.add_argument("name")
        create.add_argument("--user", required=True, help="the token acts with this user's role")
        create.add_argument("--scope", required=True, choices=TokenScope.values)
        actions.add_parser("list", help="every token, without its secret")
        revoke = actions.add_parser("revoke", help="end a token")
        revoke.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "create":
                self._create(options)
            elif options["action"] == "revoke":
                token = token_revoke(options["name"])
                self.stdout.write(f"{token.name}: revoked")
            else:
                for token in ApiToken.objects.select_related("user"):
                    used = token.last_used_at.isoformat() if token.last_used_at else "never"
                    state = "revoked" if token.revoked_at else "live"
                    self.stdout.write(
                        f"{token.name}\t{token.prefix}…\t{token.scope}\t{token.user.username}"
                        f"\t{state}\tlast used {used}"
                    )
        except TokenError as exc:
            raise CommandError(str(exc), returncode=2) from None

    def _create(self, options: dict[str, Any]) -> None:
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise TokenError(f"no user {options['user']!r}")
        created = token_create(name=options["name"], user=user, scope=options["scope"])
        self.stdout.write(f"{created.token.name} ({created.token.scope}, acts as {user.username})")
        self.stdout.write(f"token (shown once, keep it in a secret store): {created.secret}")
