"""Every Redis client the settings build fails within the configured timeouts, and the
Prometheus page deadline is read like the other settings."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from fleetscope.lib.channel_layers import BZPOPMIN_SECONDS

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
