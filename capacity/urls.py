from __future__ import annotations

from django.urls import path

from capacity.views import cost, review

urlpatterns = [
    path("capacity/", review.capacity_index, name="capacity-review"),
    path("capacity/profiles/new/", review.model_profile_new, name="capacity-profile-new"),
    path("capacity/<slug:fleet_slug>/", review.fleet_capacity, name="capacity-fleet"),
    path("capacity/<slug:fleet_slug>.json", review.fleet_capacity_json, name="capacity-fleet-json"),
    path("cost/", cost.cost_index, name="capacity-cost"),
    path("cost/<slug:fleet_slug>/", cost.fleet_cost, name="capacity-cost-fleet"),
    path("cost/<slug:fleet_slug>.csv", cost.fleet_cost_csv, name="capacity-cost-csv"),
    path("cost/<slug:fleet_slug>.json", cost.fleet_cost_json, name="capacity-cost-json"),
    path(
        "cost/<slug:fleet_slug>/reports/<int:report_id>.csv",
        cost.stored_report_csv,
        name="capacity-cost-report-csv",
    ),
]
