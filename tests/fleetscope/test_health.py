from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.test import Client, override_settings

from devtools.ports import free_port
from devtools.waiting import get_when_listening
from tests.conftest import TEST_REDIS_URL
from tests.roles import user_with_role

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
        # A caller with a session cookie: the session lives in the database that is down.
        with_cookie = httpx.get(
            f"http://127.0.0.1:{port}/readyz", cookies={"sessionid": "x" * 32}, timeout=15
        )
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert response.status_code == 503 and with_cookie.status_code == 503
    assert with_cookie.json()["checks"]["database"]["error"].startswith("database unreachable:")
    body = json.loads(response.text)
    assert body["checks"]["database"]["status"] == "down"
    assert body["checks"]["database"]["error"].startswith("database unreachable:")
    assert "Traceback" not in response.text
    # An anonymous caller learns which component is down, not where it lives.
    assert str(closed_port) not in response.text
    assert "127.0.0.1" not in response.text and "postgres" not in response.text
    # Operators find the driver's own line in the server's log.
    assert f"{closed_port}" in stderr and "database unreachable" in stderr


class _RefusingConnection:
    """Stands in for django.db.connection in fleetscope.health only: a real database
    cannot be down for the readiness probe while it still serves the staff user's session."""

    def cursor(self) -> object:
        from django.db.utils import OperationalError

        raise OperationalError(
            'connection to server at "10.9.8.7", port 6543 failed: Connection refused\n'
            "\tIs the server running on that host and accepting TCP/IP connections?"
        )


@pytest.fixture
def database_down(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fleetscope.health.connection", _RefusingConnection())


@pytest.mark.django_db
def test_readyz_hides_connection_details_from_anonymous_and_non_staff_users(
    client: Client, database_down: None
) -> None:
    viewer = Client()
    viewer.force_login(user_with_role("watcher", "oncall", password="watcher-password-1"))
    for caller in (client, viewer):
        response = caller.get("/readyz")
        assert response.status_code == 503
        check = response.json()["checks"]["database"]
        assert check["status"] == "down" and check["latency_seconds"] >= 0
        assert check["error"] == "database unreachable: OperationalError"
        # Neither the database's host nor its port, in any text or as a number (a timing's
        # digits may spell 6543: the whole body is not searched).
        leaves = _leaves(response.json())
        assert not [v for v in leaves if "10.9.8.7" in str(v) or "6543" in str(v)], leaves


@pytest.mark.django_db
def test_readyz_shows_staff_the_drivers_first_line(client: Client, database_down: None) -> None:
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_user("op", password="op-password-1", is_staff=True))
    check = client.get("/readyz").json()["checks"]["database"]
    assert check["error"] == "database unreachable: OperationalError"
    assert check["detail"] == (
        'connection to server at "10.9.8.7", port 6543 failed: Connection refused'
    )


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


def _leaves(value: object) -> list[object]:
    """Every string and whole number of a JSON document, keys included (floats left out:
    those are timings)."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in (k, *_leaves(v))]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value] if isinstance(value, (str, int)) else []
