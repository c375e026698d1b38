"""Giving and taking roles (`inventory.access` reads them): Django groups named after the
roles, and tenant grants. One role per user: a grant replaces what they had. Admins are
staff, so the Django admin lets them in, and their group holds every model permission
of FleetScope's apps and of users."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission, User
from django.db import transaction

from inventory.access import ROLE_GROUPS, Role
from inventory.models import Fleet, TenantGrant

ROLE_NAMES = {
    "viewer": Role.VIEWER,
    "oncall": Role.ONCALL,
    "admin": Role.ADMIN,
    "tenant": Role.TENANT,
}
ADMIN_APPS = ("inventory", "slo", "triage", "capacity", "blindspots", "auth")


class RoleError(ValueError):
    """A role that cannot be given as asked: the message says why, in one line."""


def _group(role: Role) -> Group:
    group, _ = Group.objects.get_or_create(name=ROLE_GROUPS[role])
    if role == Role.ADMIN:
        group.permissions.set(Permission.objects.filter(content_type__app_label__in=ADMIN_APPS))
    return group


@transaction.atomic
def role_revoke(user: User) -> None:
    user.groups.remove(*Group.objects.filter(name__in=ROLE_GROUPS.values()))
    TenantGrant.objects.filter(user=user).delete()
    if user.is_staff and not user.is_superuser:
        user.is_staff = False
        user.save(update_fields=["is_staff"])


@transaction.atomic
def role_grant(
    user: User, name: str, *, fleet_slug: str | None = None, tenant: str | None = None
) -> str:
    """Give `user` the role `name` (tenant: on `fleet_slug` for `tenant`); the line to print."""
    role = ROLE_NAMES.get(name)
    if role is None:
        raise RoleError(f"unknown role {name!r} (choose from {', '.join(sorted(ROLE_NAMES))})")
    fleet: Fleet | None = None
    if role == Role.TENANT:
        if not fleet_slug or not tenant:
            raise RoleError("a tenant viewer needs --fleet and --tenant")
        fleet = Fleet.objects.filter(slug=fleet_slug).first()
        if fleet is None:
            raise RoleError(f"no fleet {fleet_slug!r}")
    elif fleet_slug or tenant:
        raise RoleError("--fleet and --tenant are for the tenant role only")
    # A tenant viewer may hold several tenants; any other role replaces what was there.
    if role != Role.TENANT or user.groups.filter(name__in=ROLE_GROUPS.values()).exists():
        role_revoke(user)
    if fleet is not None and tenant:
        TenantGrant.objects.get_or_create(user=user, fleet=fleet, tenant=tenant)
        return f"tenant viewer of {tenant} on {fleet.slug}"
    user.groups.add(_group(role))
    if role == Role.ADMIN and not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    return role.label
