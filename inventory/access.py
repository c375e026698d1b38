"""Who may see and do what: the one place every page, JSON endpoint, websocket consumer and
command gets a viewer's role and a fleet from, so access control lives here and nowhere
else.

Roles, each with everything of the ones before it:
- tenant viewer: only the cost and goodput of the tenants granted (`TenantGrant`) on those
  fleets;
- viewer: dashboards, SLOs, incidents, capacity, cost and blind spots of every fleet;
- on-call: also opens incidents, adds notes, runs walks, canary evaluations and blind-spot
  audits;
- admin: also fleets, endpoints, Prometheus sources, SLOs, runbooks, tenants, prices and
  users (the Django admin). Superusers are admins.
A signed-in user with none of these sees nothing (denial by default). Roles are Django
groups named after them (`manage.py grant_role`). An operator at the shell (`viewer` None)
acts as an admin.

A `ViewScope` is what a viewer may see of a fleet: caches of computed views and live-push
groups are keyed by it, so two viewers share a computation only when they may see the
same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeVar

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.http import Http404

from inventory.models import Fleet, TenantGrant

# A user, or None for an operator at the shell (management commands).
Viewer = AbstractBaseUser | AnonymousUser | None
V = TypeVar("V", bound=Callable[..., Any])


class Role(IntEnum):
    NONE = 0
    TENANT = 1
    VIEWER = 2
    ONCALL = 3
    ADMIN = 4

    @property
    def label(self) -> str:
        return ROLE_LABELS[self]


ROLE_LABELS = {
    Role.NONE: "no role",
    Role.TENANT: "tenant viewer",
    Role.VIEWER: "viewer",
    Role.ONCALL: "on-call",
    Role.ADMIN: "admin",
}
# The Django group that gives each role (a tenant viewer is one with grants instead).
ROLE_GROUPS = {Role.VIEWER: "viewer", Role.ONCALL: "oncall", Role.ADMIN: "admin"}


# The role, kept on the request's user object: pages ask for it several times per request
# (the middleware, the view, the navigation).
ROLE_MEMO = "_fleetscope_role"


def role_of(viewer: Viewer) -> Role:
    """The viewer's highest role; the shell is an admin, a stranger has none."""
    if viewer is None:
        return Role.ADMIN
    if not (viewer.is_authenticated and viewer.is_active):
        return Role.NONE
    cached = getattr(viewer, ROLE_MEMO, None)
    if cached is not None:
        return Role(cached)
    role = _role_of_user(viewer)
    setattr(viewer, ROLE_MEMO, int(role))
    return role


def _pk(user: AbstractBaseUser | AnonymousUser) -> int:
    return int(user.pk or 0)


def _role_of_user(user: AbstractBaseUser | AnonymousUser) -> Role:
    if getattr(user, "is_superuser", False):
        return Role.ADMIN
    names = set(user.groups.values_list("name", flat=True))  # type: ignore[union-attr]  # the project's users are auth.User, which has groups
    for role in (Role.ADMIN, Role.ONCALL, Role.VIEWER):
        if ROLE_GROUPS[role] in names:
            return role
    if TenantGrant.objects.filter(user_id=_pk(user)).exists():
        return Role.TENANT
    return Role.NONE


def tenants_of(viewer: Viewer, fleet: Fleet) -> tuple[str, ...]:
    """The tenants a tenant viewer may see on `fleet`, sorted; () for every other role."""
    if viewer is None or role_of(viewer) != Role.TENANT:
        return ()
    rows = TenantGrant.objects.filter(user_id=_pk(viewer), fleet=fleet).values_list(
        "tenant", flat=True
    )
    return tuple(sorted(rows))


@dataclass(frozen=True)
class ViewScope:
    fleet: Fleet
    tenant: str | None = None  # a tenant viewer's one tenant: only it is shown

    @property
    def key(self) -> str:
        """Stable and safe in cache keys and channel group names (ASCII, no spaces)."""
        key = f"fleet.{self.fleet.code.hex}"
        if self.tenant is not None:
            key += ".tenant." + self.tenant.encode().hex()
        return key


def _may_see(viewer: Viewer, fleet: Fleet) -> bool:
    role = role_of(viewer)
    if role >= Role.VIEWER:
        return True
    return role == Role.TENANT and bool(tenants_of(viewer, fleet))


def fleet_for_user(viewer: Viewer, *, slug: str | None = None, code: str | None = None) -> Fleet:
    """The fleet named by `slug` (pages, commands) or `code` (websockets) as `viewer` may
    see it. Raises Http404 when there is none or it is not theirs: a foreign fleet looks
    exactly like a missing one."""
    if (slug is None) == (code is None):
        raise ValueError("give exactly one of slug and code")
    fleets = Fleet.objects.all()
    try:
        fleet = (
            fleets.filter(code=code).first()
            if code is not None
            else fleets.filter(slug=slug).first()
        )
    except ValidationError:  # not a UUID: no such fleet
        fleet = None
    if fleet is None or not _may_see(viewer, fleet):
        raise Http404("no such fleet")
    return fleet


def view_scope(viewer: Viewer, fleet: Fleet, *, tenant: str | None = None) -> ViewScope:
    """What `viewer` may see of `fleet` (which `fleet_for_user` gave them). A tenant viewer
    sees one of their tenants: `tenant` when it is theirs, else the first; another
    tenant's name is a 404, as a foreign fleet is."""
    role = role_of(viewer)
    if role != Role.TENANT:
        return ViewScope(fleet, tenant)
    mine = tenants_of(viewer, fleet)
    if not mine or (tenant is not None and tenant not in mine):
        raise Http404("no such tenant")
    return ViewScope(fleet, tenant if tenant is not None else mine[0])


# Scrape failures whose messages tell a refused port from a closed or silent one: to anyone
# but an admin they read alike, so the pages are no port scanner of the allowed networks.
UNREACHABLE_KINDS = frozenset({"refused", "timeout", "connection", "dns", "tls", "blocked"})
UNREACHABLE = "unreachable: no answer from the endpoint (an admin's inventory page says why)"


def scrape_error_shown(error: str, kind: str | None, *, viewer: Viewer) -> str:
    """A scrape error as `viewer` may read it: whole for admins, else without what tells
    ports apart."""
    return error if role_of(viewer) >= Role.ADMIN else scrape_error_for_all(error, kind)


def scrape_error_for_all(error: str, kind: str | None) -> str:
    """A scrape error as every role may read it (shared views: findings, live pushes)."""
    return UNREACHABLE if error and kind in UNREACHABLE_KINDS else error


def fleets_for_user(viewer: Viewer) -> list[Fleet]:
    """Every fleet `viewer` may see, by name, through the same rule as `fleet_for_user`."""
    if role_of(viewer) == Role.TENANT and viewer is not None:
        granted = TenantGrant.objects.filter(user_id=_pk(viewer)).values("fleet_id")
        return list(Fleet.objects.filter(pk__in=granted).order_by("name"))
    return [fleet for fleet in Fleet.objects.order_by("name") if _may_see(viewer, fleet)]


def requires(role: Role, *, post: Role | None = None) -> Callable[[V], V]:
    """Mark a view with the role it needs (`post`: a higher one for POST). The role
    middleware (fleetscope.middleware) enforces it; a view without a mark is for admins
    only, so a new page is closed until someone decides who may use it."""

    def mark(view: V) -> V:
        view.fleetscope_role = role  # type: ignore[attr-defined]  # read back by the role middleware
        view.fleetscope_role_post = post or role  # type: ignore[attr-defined]  # as above
        return view

    return mark


def required_role(view: Callable[..., Any], method: str) -> Role:
    """The role a view needs for `method`: its mark, else admin (denial by default)."""
    role = getattr(view, "fleetscope_role", Role.ADMIN)
    if method not in ("GET", "HEAD", "OPTIONS"):
        return Role(getattr(view, "fleetscope_role_post", role))
    return Role(role)
