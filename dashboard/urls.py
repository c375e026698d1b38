from __future__ import annotations

from django.urls import path

from dashboard import views

urlpatterns = [
    path("", views.fleet_list, name="dashboard-fleet-list"),
    path("fleets/<slug:slug>/", views.fleet_overview, name="dashboard-fleet-overview"),
    path(
        "fleets/<slug:slug>/overview.json",
        views.fleet_overview_json,
        name="dashboard-fleet-overview-json",
    ),
    path(
        "fleets/<slug:slug>/<slug:group>/",
        views.fleet_group,
        name="dashboard-fleet-group",
    ),
]
