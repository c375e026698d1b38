"""Template context shared by every page: the navigation."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.http import HttpRequest
from django.urls import resolve, reverse

from inventory.access import Role, required_role, role_of


@dataclass(frozen=True)
class NavItem:
    label: str
    url_name: str
    section: str


NAVIGATION: tuple[NavItem, ...] = (
    NavItem("Fleet", "dashboard-fleet-list", "fleet"),
    NavItem("Inventory", "inventory-overview", "inventory"),
    NavItem("SLOs", "slo-list", "slos"),
    NavItem("Incidents", "triage-incident-list", "incidents"),
    NavItem("Capacity", "capacity-review", "capacity"),
    NavItem("Cost", "capacity-cost", "cost"),
    NavItem("Blind spots", "blindspots-list", "blindspots"),
)


@cache
def _needed(url_name: str) -> Role:
    # The URLconf does not change while the process runs: each section's role is read once.
    return required_role(resolve(reverse(url_name)).func, "GET")


def navigation(request: HttpRequest) -> dict[str, object]:
    """The sections the viewer's role may open (each view's own mark decides), and the role."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"navigation": NAVIGATION}
    role = role_of(user)
    shown = tuple(item for item in NAVIGATION if role >= _needed(item.url_name))
    # What the page may offer: forms above the viewer's role are not shown (the role
    # middleware refuses them anyway).
    return {
        "navigation": shown,
        "role_label": role.label,
        "may_act": role >= Role.ONCALL,
        "may_admin": role >= Role.ADMIN,
    }
