from __future__ import annotations

from django.urls import path

from capacity import views

urlpatterns = [
    path("capacity/", views.capacity_review, name="capacity-review"),
    path("cost/", views.cost_report, name="capacity-cost"),
]
