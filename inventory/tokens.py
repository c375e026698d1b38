"""API tokens: created (the token shown once), checked, revoked. A token is 32 random bytes,
so its SHA-256 digest is all that is stored: nothing in the database lets anyone act
with it. A read token opens the read-only exports (JSON, CSV, Markdown) with GET, as its
user's role allows; an Alertmanager token opens the webhook and nothing else."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from inventory.models import ApiToken, TokenScope

PREFIX = "fs_"
# Paths a read token opens: the exports every page also offers as files.
READ_SUFFIXES = (".json", ".csv", ".md")
READ_METHODS = ("GET", "HEAD")
# last_used_at is written at most this often: a poller must not write on every request.
USE_RECORDED_EVERY = timedelta(minutes=1)


class TokenError(ValueError):
    """A token request that cannot be done: the message says why, in one line."""


@dataclass(frozen=True)
class Created:
    token: ApiToken
    secret: str  # shown once; only its digest is kept


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_create(*, name: str, user: User, scope: str) -> Created:
    if scope not in TokenScope.values:
        raise TokenError(f"unknown scope {scope!r} (choose from {', '.join(TokenScope.values)})")
    if not name.strip():
        raise TokenError("a token needs a name")
    secret = PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                name=name.strip(),
                user=user,
                scope=scope,
                prefix=secret[:10],
                digest=digest_of(secret),
            )
    except IntegrityError:
        raise TokenError(f"a token named {name.strip()!r} exists already") from None
    return Created(token, secret)


def token_revoke(name: str) -> ApiToken:
    token = ApiToken.objects.filter(name=name).first()
    if token is None:
        raise TokenError(f"no token named {name!r}")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def bearer_of(header: str | None) -> str | None:
    """The token in `Authorization: Bearer fs_...`, or None when the header is not one."""
    if not header:
        return None
    kind, _, value = header.partition(" ")
    value = value.strip()
    if kind.lower() != "bearer" or not value.startswith(PREFIX):
        return None
    return value


def token_check(secret: str, scope: str) -> ApiToken | None:
    """The live token of `scope` behind `secret`, None when unknown, revoked or of another
    scope; records its use (at most once a minute)."""
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=digest_of(secret), scope=scope, revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > USE_RECORDED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token
