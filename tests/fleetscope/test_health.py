from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings

from devtools.ports import free_port
from devtools.waiting import get_when_listening
from tests.conftest import TEST_REDIS_URL

ROOT = Path(__file__).resolve().parents[2]


def test_healthz_answers_without_login(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_reports_database_latency_when_ready(client: Client) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    check = response.json()["checks"]["database"]
    assert check["status"] == "ok"
    assert check["required"] is True
    assert check["latency_seconds"] >= 0


@pytest.mark.django_db
def test_readyz_checks_the_real_redis_when_configured(client: Client) -> None:
    with override_settings(REDIS_URL=TEST_REDIS_URL):
        response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"]["redis"]["status"] == "ok"


@pytest.mark.django_db
def test_readyz_is_503_naming_redis_when_it_is_down(client: Client, closed_port: int) -> None:
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{closed_port}/0"):
        response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready"
    assert body["checks"]["redis"]["status"] == "down"
    assert body["checks"]["redis"]["error"] == "redis unreachable: ConnectionError"
    assert body["checks"]["database"]["status"] == "ok"


@pytest.mark.django_db
def test_readyz_stays_ready_but_reports_prometheus_down(client: Client, closed_port: int) -> None:
    with override_settings(PROMETHEUS_URL=f"http://127.0.0.1:{closed_port}"):
        response = client.get("/readyz")
    assert response.status_code == 200
    check = response.json()["checks"]["prometheus"]
    assert check == {**check, "status": "down", "required": False}
    assert check["error"] == "prometheus unreachable: ConnectError"


def test_readyz_is_503_naming_the_database_when_postgres_is_down(closed_port: int) -> None:
    """The real server, pointed at a PostgreSQL port that refuses connections."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "fleetscope.settings",
        "SECRET_KEY": "x" * 50,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed_port}/fleetscope",
        "DATABASE_CONNECT_TIMEOUT_SECONDS": "2",
    }
    env.pop("REDIS_URL", None)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve_embedded", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert "running at" in server.stdout.readline()
        response = get_when_listening(f"http://127.0.0.1:{port}/readyz")
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert response.status_code == 503
    body = json.loads(response.text)
    assert body["checks"]["database"]["status"] == "down"
    assert body["checks"]["database"]["error"].startswith("database unreachable:")
    assert "Traceback" not in response.text


@pytest.mark.django_db
def test_readyz_reports_a_scheduler_that_never_ran_without_failing(client: Client) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    check = response.json()["checks"]["scheduler"]
    assert check["status"] == "down"
    assert check["error"] == "scheduler has not run a periodic job yet"


@pytest.mark.django_db
def test_readyz_reports_a_fresh_scheduler_heartbeat_as_ok(client: Client) -> None:
    from inventory.heartbeat import record_heartbeat

    record_heartbeat()
    assert client.get("/readyz").json()["checks"]["scheduler"]["status"] == "ok"
