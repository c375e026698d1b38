from __future__ import annotations

from django.urls import path

from slo import views

urlpatterns = [
    path("", views.slo_list, name="slo-list"),
    path("<slug:fleet_slug>/", views.fleet_slo_list, name="slo-fleet-list"),
    # Before the detail path, which would take "new" for an SLO's slug.
    path("<slug:fleet_slug>/new/", views.slo_new, name="slo-new"),
    # The exported alert rules link to the detail path: keep it stable.
    path("<slug:fleet_slug>/<slug:slo_slug>/", views.slo_detail, name="slo-detail"),
    path("<slug:fleet_slug>/<slug:slo_slug>.json", views.slo_detail_json, name="slo-detail-json"),
]
