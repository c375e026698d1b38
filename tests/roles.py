"""Users with a role, for tests: the role is given as `manage.py grant_role` gives it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from inventory.roles import role_grant


def user_with_role(username: str, role: str, *, password: str | None = None, **more: Any) -> User:
    """A new user holding `role` (viewer, oncall, admin; tenant needs fleet_slug and tenant)."""
    grant = {k: more.pop(k) for k in ("fleet_slug", "tenant") if k in more}
    user = User.objects.create_user(username, password=password, **more)
    role_grant(user, role, **grant)
    return user
