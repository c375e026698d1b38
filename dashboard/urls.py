from __future__ import annotations

from django.urls import path

from dashboard import views, views_overview

urlpatterns = [
    path("", views.fleet_list, name="dashboard-fleet-list"),
    path("fleets/<slug:slug>/", views_overview.fleet_overview, name="dashboard-fleet-overview"),
    path(
        "fleets/<slug:slug>/overview.json",
        views_overview.fleet_overview_json,
        name="dashboard-fleet-overview-json",
    ),
    path(
        "fleets/<slug:slug>/<slug:group>/",
        views_overview.fleet_group,
        name="dashboard-fleet-group",
    ),
    path("slos/", views.slo_list, name="dashboard-slo-list"),
    path("capacity/", views.capacity, name="dashboard-capacity"),
    path("cost/", views.cost, name="dashboard-cost"),
]
