"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

import os

from fleetscope.env import exit_on_config_error

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleetscope.settings")


def build_application() -> object:
    from django.core.asgi import get_asgi_application

    # Django must be set up before anything imports models (consumers, routing).
    django_asgi_app = get_asgi_application()

    from channels.auth import AuthMiddlewareStack
    from channels.routing import ProtocolTypeRouter, URLRouter
    from channels.security.websocket import AllowedHostsOriginValidator

    from fleetscope.routing import websocket_urlpatterns

    return ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": AllowedHostsOriginValidator(
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
            ),
        }
    )


with exit_on_config_error():
    application = build_application()
