"""Websocket routes."""

from __future__ import annotations

from typing import Any

from django.urls import path

from dashboard.consumers import FleetOverviewConsumer

# What channels' URLRouter takes: Django URL patterns whose callback is an ASGI app. The
# channels stubs name that pattern type only privately, so the list is typed loosely.
websocket_urlpatterns: list[Any] = [
    path("ws/fleets/<uuid:code>/", FleetOverviewConsumer.as_asgi(), name="ws-fleet-overview"),  # type: ignore[arg-type]  # django-stubs types path() for Django views only, not ASGI apps
]
