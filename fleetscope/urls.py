from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from fleetscope import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/login/", views.admin_login, name="admin-login"),  # before the admin's own
    path("admin/", admin.site.urls),
    path("inventory/", include("inventory.urls")),
    path("incidents/", include("triage.urls")),
    path("slos/", include("slo.urls")),
    path("blindspots/", include("blindspots.urls")),
    path("", include("capacity.urls")),
    path("", include("dashboard.urls")),
]
