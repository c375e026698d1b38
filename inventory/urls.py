from __future__ import annotations

from django.urls import path

from inventory import views

urlpatterns = [
    path("", views.overview, name="inventory-overview"),
    path("<slug:slug>/", views.fleet_detail, name="inventory-fleet-detail"),
    path("<slug:slug>/discover/", views.fleet_discover, name="inventory-fleet-discover"),
]
