"""Every Redis client the settings build fails within the configured timeouts, a dead
worker's task is delivered again within minutes, and the Prometheus page deadline is read
like the other settings."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from kombu.transport.redis import Channel
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from fleetscope.lib.channel_layers import BZPOPMIN_SECONDS, redis_channel_layers

ROOT = Path(__file__).resolve().parents[2]
SHOW = """
import json
from django.conf import settings
layer = settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]
print(json.dumps({
    "cache": settings.CACHES["default"]["OPTIONS"],
    "layer": [layer["socket_connect_timeout"], layer["socket_timeout"]],
    "celery": [settings.CELERY_BROKER_CONNECTION_TIMEOUT, settings.CELERY_BROKER_TRANSPORT_OPTIONS],
    "deadline": settings.PROMETHEUS_BATCH_DEADLINE_SECONDS,
}))
"""


def production_settings(env: dict[str, str]) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    base.pop("DJANGO_SETTINGS_MODULE", None)
    full = {**base, "SECRET_KEY": "x" * 50, "DJANGO_SETTINGS_MODULE": "fleetscope.settings"}
    # Never contacted: the settings are only built and printed.
    full.update({"REDIS_URL": "redis://127.0.0.1:1/0", **env})
    found = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SHOW],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(found.stdout.strip().splitlines()[-1])


def test_cache_channel_layer_and_broker_all_take_the_redis_timeouts() -> None:
    found = production_settings(
        {
            "REDIS_CONNECT_TIMEOUT_SECONDS": "0.5",
            "REDIS_TIMEOUT_SECONDS": "1.5",
            "PROMETHEUS_BATCH_DEADLINE_SECONDS": "7",
        }
    )
    assert found["cache"] == {"socket_connect_timeout": 0.5, "socket_timeout": 1.5}
    # The layer's reads may also wait out its own blocking BZPOPMIN, no longer.
    assert found["layer"] == [0.5, BZPOPMIN_SECONDS + 1.5]
    timeout, options = found["celery"]
    assert timeout == 0.5
    assert (options["socket_connect_timeout"], options["socket_timeout"]) == (0.5, 1.5)
    assert found["deadline"] == 7.0


def test_by_default_every_redis_call_fails_within_seconds() -> None:
    found = production_settings({})
    assert found["cache"] == {"socket_connect_timeout": 2.0, "socket_timeout": 3.0}
    assert found["layer"] == [2.0, BZPOPMIN_SECONDS + 3.0]
    assert found["deadline"] == 15.0


def test_the_layer_timeout_allows_for_the_blocking_wait_channels_redis_really_uses() -> None:
    layer = importlib.import_module("channels_redis.core").RedisChannelLayer
    assert layer.brpop_timeout == BZPOPMIN_SECONDS


async def test_the_layer_sends_a_command_again_after_a_connection_error_never_a_timeout() -> None:
    # After a Redis restart the pool's idle connections are dead: one more try, on a new
    # connection, succeeds (tests/drills/test_websocket_resync.py drills the restart).
    host = redis_channel_layers("redis://127.0.0.1:1/0")["default"]["CONFIG"]["hosts"][0]
    retry = host["retry"]
    failures: list[Exception] = []

    async def fail(error: Exception) -> None:
        failures.append(error)

    def failing_once(error: Exception) -> object:
        async def command() -> str:
            if not failures:
                raise error
            return "OK"

        return command

    closed = RedisConnectionError("Connection closed by server.")
    assert await retry.call_with_retry(failing_once(closed), fail) == "OK"
    assert failures == [closed]
    failures.clear()
    with pytest.raises(RedisTimeoutError):
        await retry.call_with_retry(failing_once(RedisTimeoutError("no answer")), fail)


def test_a_dead_workers_task_comes_back_within_minutes_and_never_while_it_still_runs() -> None:
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    redeliver = options["visibility_timeout"]
    # Not kombu's hour; never while the task may still run (its hard time limit).
    assert settings.CELERY_TASK_TIME_LIMIT < redeliver <= 300
    # Workers look for such tasks every 10 s, not kombu's 100 s (interval x throttle).
    assert options["unacked_restore_interval"] * options["unacked_restore_throttle"] == 10
    assert {"visibility_timeout", "unacked_restore_interval", "unacked_restore_throttle"} <= set(
        Channel.from_transport_options
    )  # kombu's names: a misspelt option would be ignored without a word
    # A scrape that comes back has expired: dropped, the next tick scraped instead.
    assert redeliver > settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS * 0.9
