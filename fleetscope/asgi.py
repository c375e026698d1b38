"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fleetscope.env import exit_on_config_error

if TYPE_CHECKING:
    from channels.routing import ProtocolTypeRouter

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleetscope.settings")


def build_application() -> ProtocolTypeRouter:
    from django.core.asgi import get_asgi_application

    # Django must be set up before anything imports models (consumers, routing).
    django_asgi_app = get_asgi_application()

    from channels.auth import AuthMiddlewareStack
    from channels.routing import ProtocolTypeRouter, URLRouter

    from fleetscope.lib.heap import freeze_startup_heap
    from fleetscope.origin import SameOriginValidator
    from fleetscope.routing import websocket_urlpatterns

    application = ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
    # Import the views (and numpy) now, not on the first request, so they are
    # part of the frozen heap.
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018
    freeze_startup_heap()
    return application


with exit_on_config_error():
    application = build_application()
