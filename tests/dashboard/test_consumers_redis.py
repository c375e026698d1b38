"""The overview websocket when Redis fails: refused at once with close code 4503 and a
reason the page shows (never a 500, never a hang), whether Redis is stopped, silent, or
goes away while a viewer watches.

The Redis is never the machine's shared one: a loopback port nothing listens on, a socket
server that accepts and stays silent, or a redis-server of the test's own, stopped mid-test
(tests/redisfakes.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client, override_settings

from dashboard.consumers import CLOSE_LIVE_UNAVAILABLE
from fleetscope.asgi import application
from fleetscope.lib.channel_layers import redis_channel_layers
from fleetscope.lib.redis_settings import RedisTimeouts, redis_caches
from inventory.models import Fleet
from tests.conftest import TEST_REDIS_URL
from tests.redisfakes import own_redis_server, silent_redis
from tests.roles import user_with_role

pytestmark = [pytest.mark.django_db(transaction=True)]

TIMEOUTS = RedisTimeouts(connect_seconds=1.0, read_seconds=1.0)
# How long a handshake's database reads may take on a shared machine (test_consumers.py).
ANSWER_SECONDS = 10
MARGIN = 5.0
LAYER_DOWN = "live updates unavailable: the live-update channel (Redis) is unreachable"


@pytest.fixture(autouse=True)
async def _close_thread_connections() -> AsyncIterator[None]:
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture
async def fleet() -> Fleet:
    return await Fleet.objects.acreate(slug="ws-redis", name="WS fleet")


@pytest.fixture
async def session_cookie() -> str:
    def login() -> str:
        user_with_role("viewer", "viewer", password="viewer-password-1")
        client = Client()
        assert client.login(username="viewer", password="viewer-password-1")
        return client.cookies["sessionid"].value

    return await sync_to_async(login)()


def communicator(fleet: Fleet, cookie: str) -> WebsocketCommunicator:
    headers = [
        (b"host", b"127.0.0.1"),
        (b"origin", b"http://127.0.0.1"),
        (b"cookie", f"sessionid={cookie}".encode()),
    ]
    return WebsocketCommunicator(application, f"/ws/fleets/{fleet.code}/", headers=headers)


def redis_at(*, layer: str, cache: str | None = None) -> override_settings:
    changes: dict[str, object] = {
        "CHANNEL_LAYERS": redis_channel_layers(
            layer, prefix="fleetscope-test-ws-redis", timeouts=TIMEOUTS
        ),  # fmt: skip
        "REDIS_TIMEOUT_SECONDS": TIMEOUTS.read_seconds,
    }
    if cache is not None:
        changes["CACHES"] = redis_caches(cache, TIMEOUTS)
    return override_settings(**changes)


async def refusal(ws: WebsocketCommunicator) -> str:
    """The reason of the close that follows the handshake; the socket was opened first so
    that a browser receives the code and reason (a refused handshake is a bare 1006)."""
    connected, _ = await ws.connect(timeout=ANSWER_SECONDS)
    assert connected
    closed = await ws.receive_output(timeout=ANSWER_SECONDS)
    assert closed["type"] == "websocket.close"
    assert closed["code"] == CLOSE_LIVE_UNAVAILABLE
    await ws.disconnect()
    return str(closed["reason"])


async def test_with_redis_stopped_the_socket_is_refused_at_once_saying_why(
    fleet: Fleet, session_cookie: str, closed_port: int
) -> None:
    down = f"redis://127.0.0.1:{closed_port}/0"
    with redis_at(layer=down, cache=down):
        reason = await refusal(communicator(fleet, session_cookie))
    assert reason == f"{LAYER_DOWN} (ConnectionError)"


async def test_a_redis_that_accepts_and_never_answers_cannot_hang_the_handshake(
    fleet: Fleet, session_cookie: str
) -> None:
    with silent_redis() as redis, redis_at(layer=redis.url, cache=redis.url):
        started = time.monotonic()
        reason = await refusal(communicator(fleet, session_cookie))
        assert time.monotonic() - started < TIMEOUTS.read_seconds + MARGIN
    assert reason == (
        "live updates unavailable: the live-update channel (Redis) did not answer in time"
    )


async def test_with_only_the_cache_down_the_socket_says_no_pushes_would_follow(
    fleet: Fleet, session_cookie: str, closed_port: int
) -> None:
    with redis_at(layer=TEST_REDIS_URL, cache=f"redis://127.0.0.1:{closed_port}/0"):
        reason = await refusal(communicator(fleet, session_cookie))
    assert reason == (
        "live updates unavailable: the shared cache (Redis) is unreachable (ConnectionError)"
    )


async def test_redis_going_away_while_a_viewer_watches_closes_the_socket_saying_why(
    fleet: Fleet, session_cookie: str
) -> None:
    with own_redis_server() as redis, redis_at(layer=redis.url):
        ws = communicator(fleet, session_cookie)
        connected, _ = await ws.connect(timeout=ANSWER_SECONDS)
        assert connected
        assert await ws.receive_nothing(timeout=0.5)  # watching, nothing pushed yet
        await sync_to_async(redis.stop)()
        closed = await ws.receive_output(timeout=ANSWER_SECONDS)
        await ws.disconnect()
    assert closed["type"] == "websocket.close"
    assert closed["code"] == CLOSE_LIVE_UNAVAILABLE
    assert str(closed["reason"]).startswith(LAYER_DOWN)
