"""Channel-layer settings, kept apart so tests build exactly what production runs."""

from __future__ import annotations

from typing import Any


def redis_channel_layers(redis_url: str, *, prefix: str = "asgi") -> dict[str, Any]:
    """CHANNEL_LAYERS for Redis.

    `socket_timeout=None`: the layer waits for messages with a blocking BZPOPMIN,
    and redis-py 8 made reads time out after 5 s by default, which killed every
    websocket consumer that had nothing to receive for 5 s (channels_redis#422).
    Connecting still times out.
    """
    host = {"address": redis_url, "socket_timeout": None, "socket_connect_timeout": 5}
    return {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [host], "prefix": prefix},
        }
    }
