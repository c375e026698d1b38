"""Every Redis client's settings, with timeouts, kept apart so tests build what production runs.

A Redis that is down must fail a call within seconds, and one that accepts connections
and never answers must too: with no socket timeout a client waits forever (redis-py's
default for the cache, channels_redis' setting before this). Each client built here
gets a connect timeout and a read timeout from the settings (README, "Configuration").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

# What a failing Redis raises through any client: its own errors, and OSError for a
# socket that breaks under it.
REDIS_ERRORS: tuple[type[Exception], ...] = (RedisError, OSError)


@dataclass(frozen=True)
class RedisTimeouts:
    connect_seconds: float = 2.0
    read_seconds: float = 3.0


def redis_caches(redis_url: str, timeouts: RedisTimeouts) -> dict[str, Any]:
    """CACHES on Redis; Django passes OPTIONS to redis-py's connection pool."""
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "OPTIONS": {
                "socket_connect_timeout": timeouts.connect_seconds,
                "socket_timeout": timeouts.read_seconds,
            },
        }
    }


def celery_transport_options(
    timeouts: RedisTimeouts, *, redeliver_after_seconds: float, sweep_seconds: float = 10.0
) -> dict[str, Any]:
    """CELERY_BROKER_TRANSPORT_OPTIONS.

    Publishing to a dead broker can hang (celery#6911): every attempt is bounded.

    With acks_late a task's message stays in Redis, unacknowledged, until the task ends.
    When its worker dies without a word (SIGKILL, the OOM killer, a lost node), Redis
    hands the message to another worker once it has been unacknowledged for
    `redeliver_after_seconds` (kombu's `visibility_timeout`; one hour by default). Workers
    look for such messages every `sweep_seconds`: kombu's default sweep is
    `unacked_restore_interval` (10 s) times `unacked_restore_throttle` (10), so 100 s.
    """
    return {
        "socket_timeout": timeouts.read_seconds,
        "socket_connect_timeout": timeouts.connect_seconds,
        "max_retries": 2,
        "visibility_timeout": redeliver_after_seconds,
        "unacked_restore_interval": sweep_seconds,
        "unacked_restore_throttle": 1,
    }
