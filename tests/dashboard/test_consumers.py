"""The overview websocket through the real ASGI application (origin check, auth, pushes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client, override_settings

from dashboard import live
from fleetscope.asgi import application
from fleetscope.lib import gzipped
from fleetscope.lib.channel_layers import redis_channel_layers
from inventory.access import ViewScope
from inventory.models import Fleet
from tests.conftest import TEST_REDIS_URL, channel_layer
from tests.roles import user_with_role

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
async def _close_thread_connections() -> AsyncIterator[None]:
    yield
    # The async ORM runs in asgiref's worker thread; close its connection there, or
    # PostgreSQL refuses to drop the test database at the end of the run.
    await sync_to_async(connections.close_all)()


@pytest.fixture
async def fleet() -> Fleet:
    return await Fleet.objects.acreate(slug="ws", name="WS fleet")


@pytest.fixture
async def session_cookie() -> AsyncIterator[str]:
    def login() -> str:
        user_with_role("viewer", "viewer", password="viewer-password-1")
        client = Client()
        assert client.login(username="viewer", password="viewer-password-1")
        return client.cookies["sessionid"].value

    yield await sync_to_async(login)()


# How long a handshake or a push may take to arrive: the communicator's default (1 s) is
# shorter than a consumer's database reads take when the suite's workers share the cores.
ANSWER_SECONDS = 10


def communicator(
    fleet: Fleet, *, cookie: str | None, origin: str | None, host: str = "127.0.0.1"
) -> WebsocketCommunicator:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if cookie is not None:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    return WebsocketCommunicator(application, f"/ws/fleets/{fleet.code}/", headers=headers)


async def pushed(ws: WebsocketCommunicator, timeout: float = ANSWER_SECONDS) -> str:
    """The next overview sent: as published, gzip in a binary frame (the same bytes for
    every socket)."""
    frame = await ws.receive_from(timeout=timeout)
    assert isinstance(frame, bytes), f"a text frame: {frame[:80]!r}"
    return gzipped.decompress(frame)


async def test_a_logged_in_viewer_receives_pushes_for_the_fleet(
    fleet: Fleet, session_cookie: str
) -> None:
    ws = communicator(fleet, cookie=session_cookie, origin="http://127.0.0.1")
    connected, _ = await ws.connect(timeout=ANSWER_SECONDS)
    assert connected
    await channel_layer().group_send(
        live.group_name(ViewScope(fleet)),
        {"type": "overview.update", "payload_gzip": gzipped.compress('{"panels":[]}')},
    )
    assert await pushed(ws) == '{"panels":[]}'
    await ws.disconnect()


async def test_a_reconnecting_viewer_is_resynced_from_the_cached_overview(
    fleet: Fleet, session_cookie: str
) -> None:
    from django.core.cache import cache

    key = f"fleetscope:overview-gzip:{ViewScope(fleet).key}"
    await sync_to_async(cache.set)(key, gzipped.compress('{"latest":1}'))
    ws = communicator(fleet, cookie=session_cookie, origin="http://127.0.0.1")
    assert (await ws.connect(timeout=ANSWER_SECONDS))[0]
    assert await pushed(ws) == '{"latest":1}'
    await ws.disconnect()


async def test_an_anonymous_socket_is_closed(fleet: Fleet) -> None:
    ws = communicator(fleet, cookie=None, origin="http://127.0.0.1")
    connected, code = await ws.connect(timeout=ANSWER_SECONDS)
    assert not connected
    assert code == 4401


@pytest.mark.parametrize("role", ["none", "tenant", "oncall", "admin"])
async def test_only_viewers_and_above_may_watch_the_overview(fleet: Fleet, role: str) -> None:
    def login() -> str:
        if role == "none":
            User.objects.create_user("plain", password="plain-password-1")
            name = "plain"
        else:
            more = {"fleet_slug": fleet.slug, "tenant": "acme"} if role == "tenant" else {}
            name = f"a-{role}"
            user_with_role(name, role, password="role-password-1", **more)
        client = Client()
        assert client.login(
            username=name, password="plain-password-1" if role == "none" else "role-password-1"
        )
        return client.cookies["sessionid"].value

    cookie = await sync_to_async(login)()
    ws = communicator(fleet, cookie=cookie, origin="http://127.0.0.1")
    connected, code = await ws.connect(timeout=ANSWER_SECONDS)
    if role in ("none", "tenant"):
        # A tenant viewer sees its cost, not the fleet's overview: the same refusal.
        assert (connected, code) == (False, 4403)
    else:
        assert connected
        await ws.disconnect()


@pytest.mark.parametrize("origin", ["http://evil.example", "null", None])
async def test_foreign_null_or_missing_origins_are_rejected(
    fleet: Fleet, session_cookie: str, origin: str | None
) -> None:
    ws = communicator(fleet, cookie=session_cookie, origin=origin)
    connected, _ = await ws.connect(timeout=ANSWER_SECONDS)
    assert not connected


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:9999"),
        ("127.0.0.1:8000", "http://127.0.0.1"),
        ("127.0.0.1", "http://127.0.0.1:9999"),
        ("127.0.0.1:8000", "http://localhost:8000"),
        ("[::1]:8000", "http://[::1]:9999"),
    ],
)
async def test_an_origin_on_another_port_or_host_than_the_server_is_rejected(
    fleet: Fleet, session_cookie: str, host: str, origin: str
) -> None:
    ws = communicator(fleet, cookie=session_cookie, origin=origin, host=host)
    connected, _ = await ws.connect(timeout=ANSWER_SECONDS)
    assert not connected


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("localhost:8001", "http://localhost:8001"),
        ("127.0.0.1", "http://127.0.0.1"),
        ("127.0.0.1:80", "http://127.0.0.1"),
        ("localhost", "https://localhost"),  # behind a TLS proxy that keeps the Host header
        ("[::1]:8000", "http://[::1]:8000"),
    ],
)
async def test_an_origin_with_the_servers_own_host_and_port_is_accepted(
    fleet: Fleet, session_cookie: str, host: str, origin: str
) -> None:
    ws = communicator(fleet, cookie=session_cookie, origin=origin, host=host)
    connected, _ = await ws.connect(timeout=ANSWER_SECONDS)
    assert connected
    await ws.disconnect()


async def test_an_origin_on_another_port_is_accepted_when_listed_as_trusted(
    fleet: Fleet, session_cookie: str
) -> None:
    trusted = ["https://fleetscope.example.com", "http://127.0.0.1:9999"]
    with override_settings(CSRF_TRUSTED_ORIGINS=trusted):
        ws = communicator(
            fleet, cookie=session_cookie, origin="http://127.0.0.1:9999", host="127.0.0.1:8000"
        )
        connected, _ = await ws.connect(timeout=ANSWER_SECONDS)
        assert connected
        await ws.disconnect()
        # Listed with its port: the same host on a third port is still foreign.
        other = communicator(
            fleet, cookie=session_cookie, origin="http://127.0.0.1:9998", host="127.0.0.1:8000"
        )
        assert not (await other.connect(timeout=ANSWER_SECONDS))[0]


async def test_a_host_outside_allowed_hosts_is_rejected_even_when_origin_matches_it(
    fleet: Fleet, session_cookie: str
) -> None:
    ws = communicator(
        fleet, cookie=session_cookie, origin="http://evil.example:8000", host="evil.example:8000"
    )
    connected, _ = await ws.connect(timeout=ANSWER_SECONDS)
    assert not connected


async def test_after_logout_the_open_socket_stops_receiving(
    fleet: Fleet, session_cookie: str
) -> None:
    from django.contrib.sessions.models import Session

    ws = communicator(fleet, cookie=session_cookie, origin="http://127.0.0.1")
    assert (await ws.connect(timeout=ANSWER_SECONDS))[0]
    await Session.objects.filter(session_key=session_cookie).adelete()
    await channel_layer().group_send(
        live.group_name(ViewScope(fleet)),
        {"type": "overview.update", "payload_gzip": gzipped.compress('{"secret":1}')},
    )
    output = await ws.receive_output()
    assert output == {"type": "websocket.close", "code": 4401}


async def test_an_unknown_fleet_is_refused(session_cookie: str) -> None:
    ws = WebsocketCommunicator(
        application,
        "/ws/fleets/00000000-0000-0000-0000-000000000000/",
        headers=[
            (b"host", b"127.0.0.1"),
            (b"origin", b"http://127.0.0.1"),
            (b"cookie", f"sessionid={session_cookie}".encode()),
        ],
    )
    connected, code = await ws.connect(timeout=ANSWER_SECONDS)
    assert (connected, code) == (False, 4404)


async def test_a_viewer_idle_longer_than_redis_read_timeouts_still_gets_the_next_push(
    fleet: Fleet, session_cookie: str
) -> None:
    # Production's Redis layer, on the real Redis. redis-py 8 made socket reads time out
    # after 5 s, which killed consumers waiting on an idle group (channels_redis#422); the
    # wait below must outlast that, so it is a sleep by design, not a race.
    layers = redis_channel_layers(TEST_REDIS_URL, prefix=f"fleetscope-test-{fleet.code.hex}")
    with override_settings(CHANNEL_LAYERS=layers):
        ws = communicator(fleet, cookie=session_cookie, origin="http://127.0.0.1")
        assert (await ws.connect(timeout=ANSWER_SECONDS))[0]
        await asyncio.sleep(6.5)
        await channel_layer().group_send(
            live.group_name(ViewScope(fleet)),
            {"type": "overview.update", "payload_gzip": gzipped.compress('{"late":1}')},
        )
        assert await pushed(ws, timeout=10) == '{"late":1}'
        await ws.disconnect()
