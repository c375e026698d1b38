"""The web process does not keep a PostgreSQL connection per request it served.

Under ASGI every request runs its view (and a websocket consumer each database call) in a
thread of its own, so a connection kept for reuse (CONN_MAX_AGE > 0) is never reused: it
stays open until garbage-collected. One web process held ~60 connections under 50
viewers in benchmarks/load.py, and PostgreSQL refused further clients ("too many clients
already"). By default the production settings close each connection after its request.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from devtools.ports import free_port
from devtools.waiting import get_when_listening
from tests.drills.services import fleetscope_process, manage, postgres_server, production_env

REQUESTS = 60
AT_ONCE = 20
SESSION = """
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.auth import SESSION_KEY, BACKEND_SESSION_KEY, HASH_SESSION_KEY
user = User.objects.create_user("viewer", is_staff=True)
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(session.session_key)
"""


def open_connections(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = 'fleetscope' AND pid <> pg_backend_pid()"
        ).fetchone()
    assert found is not None
    return int(found[0])


def test_the_web_process_closes_each_requests_database_connection(tmp_path: Path) -> None:
    with postgres_server() as server:
        with server.connect() as conn:
            conn.execute("CREATE DATABASE fleetscope")
        # The production settings as deployed: DATABASE_CONN_MAX_AGE_SECONDS left unset.
        env = production_env(DATABASE_URL=server.url("fleetscope"))
        manage("migrate", "--verbosity", "0", env=env)
        cookie = manage("shell", "-c", SESSION, env=env).split()[-1]
        port = free_port()
        web = f"http://127.0.0.1:{port}"
        args = ["-m", "uvicorn", "fleetscope.asgi:application", "--host", "127.0.0.1",
                "--port", str(port), "--lifespan", "off"]  # fmt: skip
        with fleetscope_process(args, env=env, log=tmp_path / "web.log"):
            get_when_listening(f"{web}/healthz", timeout=60)

            def signed_in(_: int) -> httpx.Response:
                # The session and its user are read from the database in the request's thread.
                return httpx.get(f"{web}/readyz", cookies={"sessionid": cookie}, timeout=30)

            with ThreadPoolExecutor(AT_ONCE) as pool:
                answers = list(pool.map(signed_in, range(REQUESTS)))
            assert {a.status_code for a in answers} == {200}, answers[0].text
            # What the process still holds once every request has been answered.
            assert open_connections(server.url("postgres")) <= 2
