"""Who may see which fleet: the one place every page, JSON endpoint, websocket consumer and
command gets a fleet from, so access control is added here and nowhere else.

Today every signed-in user sees every fleet (pages require a login; see
fleetscope.middleware). A `ViewScope` is what a viewer may see of a fleet: the fleet
now, the fleet and a tenant once tenants exist. Caches of computed views and live-push
groups are keyed by it, so two viewers share a computation only when they may see the
same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.http import Http404

from inventory.models import Fleet

# A user, or None for an operator at the shell (management commands).
Viewer = AbstractBaseUser | AnonymousUser | None


@dataclass(frozen=True)
class ViewScope:
    fleet: Fleet

    @property
    def key(self) -> str:
        """Stable and safe in cache keys and channel group names (ASCII, no spaces)."""
        return f"fleet.{self.fleet.code.hex}"


def _may_see(viewer: Viewer, fleet: Fleet) -> bool:
    if viewer is None:
        return True
    return bool(viewer.is_authenticated and viewer.is_active)


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


def view_scope(viewer: Viewer, fleet: Fleet) -> ViewScope:
    """What `viewer` may see of `fleet` (which `fleet_for_user` gave them)."""
    return ViewScope(fleet)


def fleets_for_user(viewer: Viewer) -> list[Fleet]:
    """Every fleet `viewer` may see, by name, through the same rule as `fleet_for_user`."""
    return [fleet for fleet in Fleet.objects.order_by("name") if _may_see(viewer, fleet)]
