"""Websocket routes; each app adds its consumers here as they are built."""

from __future__ import annotations

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []
