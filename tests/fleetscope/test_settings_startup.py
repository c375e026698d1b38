"""Start-up with bad configuration fails with one clear line naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def start(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    base.pop("DJANGO_SETTINGS_MODULE", None)
    full = {**base, "SECRET_KEY": "x" * 50, "DJANGO_SETTINGS_MODULE": "fleetscope.settings"}
    full.update(env)
    full = {k: v for k, v in full.items() if v is not None}
    cmd = command or ("manage.py", "check")
    return subprocess.run(
        [sys.executable, *cmd], cwd=ROOT, env=full, capture_output=True, text=True, timeout=60
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], variable: str) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"fleetscope: configuration error: {variable}"), lines[0]
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize(
    "value",
    ["mysql://root@127.0.0.1/db", "postgres://postgres@127.0.0.1:notaport/db", "postgres:///"],
)
def test_malformed_database_url_fails_naming_it(value: str) -> None:
    assert_one_line_error(start({"DATABASE_URL": value}), "DATABASE_URL")


@pytest.mark.parametrize("value", ["http://127.0.0.1:6379", "redis://127.0.0.1:70000/0", "redis:"])
def test_malformed_redis_url_fails_naming_it(value: str) -> None:
    assert_one_line_error(start({"REDIS_URL": value}), "REDIS_URL")


@pytest.mark.parametrize("value", ["prometheus:9090", "gopher://prom:9090", "http://"])
def test_malformed_prometheus_url_fails_naming_it(value: str) -> None:
    assert_one_line_error(start({"PROMETHEUS_URL": value}), "PROMETHEUS_URL")


def test_missing_secret_key_in_production_mode_fails_naming_it() -> None:
    line = assert_one_line_error(start({"SECRET_KEY": "", "DEBUG": "false"}), "SECRET_KEY")
    assert "SECRET_KEY_FILE" in line


def test_wildcard_allowed_hosts_in_production_mode_fails_naming_it() -> None:
    result = start({"ALLOWED_HOSTS": "fleetscope.example,*"})
    assert_one_line_error(result, "ALLOWED_HOSTS")


def test_asgi_entry_point_fails_the_same_way() -> None:
    result = start({"REDIS_URL": "http://nope"}, "-c", "import fleetscope.asgi")
    assert_one_line_error(result, "REDIS_URL")


def test_production_configuration_never_allows_every_host() -> None:
    result = start(
        {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/fleetscope"},
        "-c",
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.DEBUG, settings.ALLOWED_HOSTS)",
    )
    assert result.returncode == 0, result.stderr
    debug, hosts = result.stdout.strip().split(" ", 1)
    assert debug == "False"
    assert "*" not in hosts


def test_redis_url_switches_channel_layer_and_scheduler_to_production() -> None:
    result = start(
        {"REDIS_URL": "redis://127.0.0.1:6379/3"},
        "-c",
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.CHANNEL_LAYERS['default']['BACKEND'], settings.CELERY_BROKER_URL, "
        "settings.FLEETSCOPE_INPROCESS_SCHEDULER)",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "channels_redis.core.RedisChannelLayer",
        "redis://127.0.0.1:6379/3",
        "False",
    ]


def test_settings_default_to_utc() -> None:
    result = start(
        {},
        "-c",
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.TIME_ZONE, settings.USE_TZ, settings.CELERY_TIMEZONE)",
    )
    assert result.stdout.split() == ["UTC", "True", "UTC"]
