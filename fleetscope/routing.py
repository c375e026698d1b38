"""Websocket routes."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.consumers import FleetOverviewConsumer

websocket_urlpatterns: list[URLPattern] = [
    path("ws/fleets/<uuid:code>/", FleetOverviewConsumer.as_asgi(), name="ws-fleet-overview"),
]
