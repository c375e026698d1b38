from __future__ import annotations

from django.urls import path

from slo import views

urlpatterns = [
    path("", views.slo_list, name="slo-list"),
]
