"""Template context shared by every page: the navigation."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest


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


def navigation(request: HttpRequest) -> dict[str, object]:
    return {"navigation": NAVIGATION}
