from __future__ import annotations

from django.urls import path

from dashboard import views

urlpatterns = [
    path("", views.fleet_list, name="dashboard-fleet-list"),
    path("slos/", views.slo_list, name="dashboard-slo-list"),
    path("capacity/", views.capacity, name="dashboard-capacity"),
    path("cost/", views.cost, name="dashboard-cost"),
]
