"""Drill: the channel layer's Redis stops under live overview websockets, then starts again
on the same port (empty: it keeps nothing).

Everything is real and production-shaped: a redis-server of the drill's own (channel
layer, cache and broker), the web process (uvicorn), a Celery worker and Celery beat that
compute and push the overview every interval, all on the test's PostgreSQL database, and
websocket clients (the `websockets` package) that log in over HTTP and connect as the
page's script does (its session cookie, its own origin).

When Redis stops, every open socket is closed at once with 4503 and a reason (the page
shows it in a banner and polls), and a socket opened meanwhile is told the same at once:
nothing hangs. When Redis is back, a new socket is accepted, pushes flow again, and a
socket that connects afterwards gets the latest overview at once (re-sync on connect)
instead of waiting for the next push. No FleetScope process is restarted.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from dashboard.consumers import CLOSE_LIVE_UNAVAILABLE
from devtools.ports import free_port
from devtools.waiting import get_when_listening
from fleetscope.lib import gzipped
from inventory.models import Fleet
from tests.drills.services import (
    Process,
    RedisServer,
    celery_beat_args,
    celery_worker_args,
    fleetscope_process,
    production_env,
    this_test_database_url,
)
from tests.roles import user_with_role
from tests.triage.factories import a_fleet

pytestmark = [pytest.mark.drill, pytest.mark.django_db(transaction=True)]

INTERVAL = 2  # FLEETSCOPE_SCRAPE_INTERVAL_SECONDS: one push per fleet and interval
PASSWORD = "viewer-password-1"
UNREACHABLE = (
    "live updates unavailable: the live-update channel (Redis) is unreachable (ConnectionError)"
)


@dataclass
class Production:
    redis: RedisServer
    web: str
    processes: list[Process]  # the web process, the worker, beat

    def alive(self) -> None:
        for process in self.processes:
            process.alive()


@pytest.fixture
def production(tmp_path: Path) -> Iterator[Production]:
    """Redis, then the web process, a Celery worker and Celery beat on it, all ended (with
    their process groups) whatever the drill does."""
    redis_server = RedisServer(tmp_path)
    port = free_port()
    env = production_env(
        DATABASE_URL=this_test_database_url(),
        REDIS_URL=redis_server.url(),
        FLEETSCOPE_SCRAPE_INTERVAL_SECONDS=str(INTERVAL),
        # Connections must not outlive their use: the test database is flushed afterwards.
        DATABASE_CONN_MAX_AGE_SECONDS="0",
        REDIS_CONNECT_TIMEOUT_SECONDS="0.5",
        REDIS_TIMEOUT_SECONDS="1",
    )
    with ExitStack() as stack:
        redis_server.start()
        stack.callback(redis_server.stop)
        processes = [
            stack.enter_context(fleetscope_process(args, env=env, log=tmp_path / f"{name}.log"))
            for name, args in [
                ("web", ["-m", "uvicorn", "fleetscope.asgi:application", "--host", "127.0.0.1",
                         "--port", str(port), "--lifespan", "off", "--log-level", "warning",
                         "--ws-per-message-deflate", "false"]),  # as deploy/bin/web
                ("worker", celery_worker_args("worker")),
                ("beat", celery_beat_args(tmp_path / "beat-schedule")),
            ]
        ]  # fmt: skip
        web = f"http://127.0.0.1:{port}"
        get_when_listening(f"{web}/healthz", timeout=60)
        yield Production(redis_server, web, processes)


def a_viewer() -> None:
    """A viewer whose password the web process can check (the test settings hash with MD5,
    which production does not accept)."""
    user = user_with_role("viewer", "viewer")
    hasher = PBKDF2PasswordHasher()
    user.password = hasher.encode(PASSWORD, hasher.salt())
    user.save(update_fields=["password"])


def logged_in(web: str) -> str:
    """Log in through the login page as a browser does; the session cookie."""
    with httpx.Client(base_url=web, timeout=30) as client:
        page = client.get("/login/").text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token is not None, page[:500]
        answer = client.post(
            "/login/",
            data={"username": "viewer", "password": PASSWORD, "csrfmiddlewaretoken": token[1]},
        )
        assert answer.status_code == 302, answer.text[:500]
        return client.cookies["sessionid"]


class Viewer:
    """One page's websocket, as the page's script opens it; closed with `tabs`."""

    def __init__(self, tabs: ExitStack, web: str, fleet: Fleet, cookie: str) -> None:
        self.opened_at = time.monotonic()
        self.socket: ClientConnection = tabs.enter_context(
            connect(
                f"ws://{web.removeprefix('http://')}/ws/fleets/{fleet.code}/",
                origin=Origin(web),
                additional_headers={"Cookie": f"sessionid={cookie}"},
                proxy=None,
                open_timeout=15,
            )
        )

    def push(self, timeout: float = 4 * INTERVAL) -> str:
        """The next overview the server sends (gzip-compressed JSON in a binary frame)."""
        frame = self.socket.recv(timeout=timeout)
        assert isinstance(frame, bytes), f"a text frame: {frame[:80]!r}"
        return gzipped.decompress(frame)

    def close_frame(self, timeout: float = 15.0) -> tuple[int, str, float]:
        """Read until the server closes: its close code and reason, and when (seconds after
        this call)."""
        began = time.monotonic()
        deadline = began + timeout
        try:
            while True:
                self.socket.recv(timeout=max(0.0, deadline - time.monotonic()))
        except ConnectionClosed as closed:
            assert closed.rcvd is not None, "closed without a close frame"
            return closed.rcvd.code, closed.rcvd.reason, time.monotonic() - began


def pushed_at(text: str) -> str:
    return str(json.loads(text)["live"]["pushed_at"])


def test_sockets_are_told_when_redis_stops_and_reconnect_and_resync_when_it_is_back(
    production: Production,
) -> None:
    began = time.monotonic()
    fleet = a_fleet("drill")
    a_viewer()
    cookie = logged_in(production.web)
    with ExitStack() as tabs:
        # Two tabs: pushes reach both.
        first = Viewer(tabs, production.web, fleet, cookie)
        second = Viewer(tabs, production.web, fleet, cookie)
        before = [first.push(timeout=30), first.push()]
        assert pushed_at(before[0]) < pushed_at(before[1])
        second.push()

        # --- Redis stops -----------------------------------------------------------------
        production.redis.stop()
        closes = [first.close_frame(), second.close_frame()]
        # A page opened (or a socket reopened) meanwhile is told at once too.
        during = Viewer(tabs, production.web, fleet, cookie)
        refused = during.close_frame()
        refused_after = time.monotonic() - during.opened_at  # handshake included

        # --- Redis starts again on the same port, empty -----------------------------------
        production.redis.start()
        up_at = time.monotonic()
        # The page reconnects; the socket gets the overview as soon as the worker pushes it
        # (Redis lost the cached one). Refusals are kept to show them if there are any.
        again: Viewer | None = None
        refusals: list[tuple[int, str] | None] = []
        while again is None:
            candidate = Viewer(tabs, production.web, fleet, cookie)
            try:
                first_after = candidate.push()
                again = candidate
            except ConnectionClosed as closed:
                rcvd = closed.rcvd
                refusals.append((rcvd.code, rcvd.reason) if rcvd is not None else None)
                assert time.monotonic() - up_at < 30, f"still refused 30 s after: {refusals}"
                time.sleep(1)
        back_after = time.monotonic() - up_at
        # Another tab opened now gets the latest overview at once: re-sync on connect.
        reopened = Viewer(tabs, production.web, fleet, cookie)
        resync = reopened.push(timeout=INTERVAL)
        resync_after = time.monotonic() - reopened.opened_at
        # Pushes flow again, to both.
        later = [again.push(), again.push()]
        reopened_later = reopened.push()
        production.alive()
    took = time.monotonic() - began

    print(
        f"closes when Redis stopped: {[(c, r, round(t, 2)) for c, r, t in closes]}; "
        f"a socket opened meanwhile: {refused[:2]} after {refused_after:.2f}s; "
        f"after Redis came back: pushes again after {back_after:.1f}s (refused first: {refusals}), "
        f"re-sync on connect in {resync_after:.2f}s; drill took {took:.1f}s"
    )
    # Both open sockets were closed promptly with the application's code and a reason the
    # page shows in its banner ("...; polling every 15 s").
    for code, reason, after in closes:
        assert (code, reason) == (CLOSE_LIVE_UNAVAILABLE, UNREACHABLE)
        assert after < 5
    # A socket opened during the outage: accepted, then told the same at once, no hang.
    assert refused[:2] == (CLOSE_LIVE_UNAVAILABLE, UNREACHABLE)
    assert refused_after < 5
    # Back: the first socket opened is accepted (the web process's pooled connections to
    # the old Redis were dead; its first command used to fail and refuse it), and pushes
    # resume by themselves, with nothing restarted.
    assert refusals == []
    assert pushed_at(first_after) > pushed_at(before[-1])
    assert pushed_at(later[0]) < pushed_at(later[1])
    # The re-sync is the overview pushed last (or, if the worker pushed again meanwhile,
    # the one after it), sent at connect rather than at the next interval.
    assert resync in {first_after, later[0]}
    assert resync_after < INTERVAL
    assert pushed_at(reopened_later) >= pushed_at(resync)
    # The web process handled all of it: no error escaped a consumer.
    assert "Traceback" not in production.processes[0].output()
