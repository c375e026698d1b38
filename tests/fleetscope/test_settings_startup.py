"""Start-up with bad configuration fails with one clear line naming the variable."""

from __future__ import annotations

import logging
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


@pytest.mark.parametrize(
    "value",
    ["10.20.0.0/33", "http://10.20.0.5:8000", "vllm 0.prod", "10.20.0.5:8000", "256.1.1.1"],
)
def test_malformed_outbound_allow_entry_fails_naming_it(value: str) -> None:
    result = start({"FLEETSCOPE_OUTBOUND_ALLOW": f"10.0.0.0/8,{value}"})
    line = assert_one_line_error(result, "FLEETSCOPE_OUTBOUND_ALLOW")
    assert repr(value) in line


def test_a_valid_outbound_allow_list_starts() -> None:
    allow = "10.20.0.0/16, *.svc.cluster.local, .prod.example, vllm-0.lab, fd12::/48"
    assert start({"FLEETSCOPE_OUTBOUND_ALLOW": allow}).returncode == 0


@pytest.mark.parametrize("value", ["garbage", "verbose", "10"])
def test_unknown_log_level_fails_naming_it(value: str) -> None:
    line = assert_one_line_error(start({"LOG_LEVEL": value}), "LOG_LEVEL")
    assert repr(value) in line and "DEBUG, INFO, WARNING, ERROR, CRITICAL" in line


def test_log_level_is_read_in_any_case() -> None:
    result = start(
        {"LOG_LEVEL": "warning"},
        "-c",
        "import django, logging; django.setup(); print(logging.getLogger().level)",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(logging.WARNING)


def test_a_var_dir_that_cannot_be_created_fails_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    line = assert_one_line_error(
        start({"FLEETSCOPE_VAR_DIR": str(blocker / "var")}), "FLEETSCOPE_VAR_DIR"
    )
    assert str(blocker / "var") in line


def test_a_var_dir_that_cannot_be_written_fails_naming_it() -> None:
    # /proc exists and is a directory, but no one (root included) can create files in it.
    line = assert_one_line_error(start({"FLEETSCOPE_VAR_DIR": "/proc"}), "FLEETSCOPE_VAR_DIR")
    assert "not writable" in line


@pytest.mark.parametrize(
    "value",
    ["fleetscope.example.com", "//fleetscope.example.com", "ftp://fleetscope.example.com",
     "https://", "https://fleetscope.example.com/path", "https://fleetscope.example.com:99999"],
)  # fmt: skip
def test_csrf_trusted_origin_without_a_scheme_or_host_fails_naming_it(value: str) -> None:
    result = start({"CSRF_TRUSTED_ORIGINS": f"https://ok.example,{value}"})
    line = assert_one_line_error(result, "CSRF_TRUSTED_ORIGINS")
    assert repr(value) in line


def test_csrf_trusted_origins_with_scheme_port_and_wildcard_start() -> None:
    value = "https://fleetscope.example.com,http://127.0.0.1:8001,https://*.example.org"
    assert start({"CSRF_TRUSTED_ORIGINS": value}).returncode == 0


def test_an_absolute_sqlite_database_url_keeps_its_path(tmp_path: Path) -> None:
    database = tmp_path / "elsewhere" / "fleetscope.sqlite3"
    database.parent.mkdir()
    shown = start(
        {"DATABASE_URL": f"sqlite:///{database}"},
        "-c",
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.DATABASES['default']['NAME'])",
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == str(database)


def test_an_app_dir_without_templates_fails_naming_it(tmp_path: Path) -> None:
    line = assert_one_line_error(start({"FLEETSCOPE_APP_DIR": str(tmp_path)}), "FLEETSCOPE_APP_DIR")
    assert "templates/" in line
