"""Channel-layer settings, kept apart so tests build exactly what production runs."""

from __future__ import annotations

from typing import Any

from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from fleetscope.lib.redis_settings import RedisTimeouts

# channels_redis' RedisChannelLayer.brpop_timeout (a test holds the two together): the
# package ships no types, and settings need not import it in the embedded mode.
BZPOPMIN_SECONDS = 5


def redis_channel_layers(
    redis_url: str, *, prefix: str = "asgi", timeouts: RedisTimeouts | None = None
) -> dict[str, Any]:
    """CHANNEL_LAYERS for Redis.

    The layer waits for messages with a blocking BZPOPMIN of BZPOPMIN_SECONDS,
    so a read may legitimately wait that long: redis-py 8's default read timeout of 5 s
    equalled it and killed every websocket consumer that had nothing to receive for 5 s
    (channels_redis#422). No read timeout at all instead let a Redis that accepts and
    never answers hang a handshake indefinitely. Reads may take the BZPOPMIN's wait
    plus the usual read timeout, no longer.

    A command that fails on a connection error is sent once more, on a new connection:
    after Redis restarts, the pool's idle connections are dead, and redis-py's asyncio
    client does not notice before it uses one, so the first command of each web process
    failed and refused a viewer's socket although Redis was back
    (tests/drills/test_websocket_resync.py). Never on a timeout: a Redis that does not
    answer is not asked twice.
    """
    timeouts = timeouts or RedisTimeouts()
    host = {
        "address": redis_url,
        "socket_timeout": BZPOPMIN_SECONDS + timeouts.read_seconds,
        "socket_connect_timeout": timeouts.connect_seconds,
        "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    }
    return {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [host], "prefix": prefix},
        }
    }
