from __future__ import annotations

from django.urls import path

from blindspots import views

urlpatterns = [
    path("", views.blindspots_list, name="blindspots-list"),
    path("<slug:fleet_slug>/", views.fleet_blindspots, name="blindspots-fleet"),
    path("<slug:fleet_slug>.json", views.fleet_blindspots_json, name="blindspots-fleet-json"),
    path("<slug:fleet_slug>/upload/", views.source_upload, name="blindspots-upload"),
    path("<slug:fleet_slug>/run/", views.audit_rerun, name="blindspots-run"),
    path(
        "<slug:fleet_slug>/sources/<int:source_id>/delete/",
        views.source_remove,
        name="blindspots-source-delete",
    ),
]
