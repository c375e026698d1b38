from __future__ import annotations

from django.urls import path

from triage import views

urlpatterns = [
    path("", views.incident_list, name="triage-incident-list"),
]
