"""The dashboard's pages: the fleet list (`fleets`) and a fleet's overview and panel
groups with their JSON (`overview`)."""

from __future__ import annotations

from dashboard.views.fleets import fleet_list
from dashboard.views.overview import fleet_group, fleet_overview, fleet_overview_json

__all__ = ["fleet_group", "fleet_list", "fleet_overview", "fleet_overview_json"]
